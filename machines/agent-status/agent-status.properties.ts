/**
 * What “Agent Status Models” promises of an agent's status, as properties
 * `agentcharts check` proves for every path (src/core/properties.ts).
 */
import {
  before,
  noDeadEnd,
  only,
  reachable,
  terminates,
  type PropertyOf,
} from '../../src/core/properties.ts';
import type { machine } from './agent-status.machine.ts';

export const properties = [
  reachable('completed', {
    description:
      '“Agent Status Models”: Completed, “successfully completed”, is a reachable terminal status.',
  }),
  reachable('failed', {
    description:
      '“Agent Status Models”: Failed, “encountered error”, is a reachable terminal status.',
  }),
  reachable('terminated', {
    description:
      '“Agent Status Models”: Terminated, “externally killed”, is a reachable terminal status.',
  }),
  only('*', '*', {
    via: ['STATUS_UPDATE'],
    description:
      '“Agent Status Models”: only a validated status transition (transition_to) changes the status; thoughts, progress, errors and metadata never do.',
  }),
  before(
    { type: 'STATUS_UPDATE', status: 'initializing' },
    { type: 'STATUS_UPDATE', status: 'running' },
    {
      description:
        '“Agent Status Models”, transition rules: Idle → Initializing → Running; an agent never runs before it initialized.',
    },
  ),
  noDeadEnd({
    description:
      '“Agent Status Models”: every status but the terminal ones has a valid transition out.',
  }),
  terminates({
    description:
      '“Agent Status Models”: from every status the agent can still end in a terminal state (Completed, Failed, Terminated).',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
