/**
 * What “Agent State Machine” promises of an agent run (Starting, Running,
 * Processing, Paused, Terminal), as properties `agentcharts check` proves for
 * every path (src/core/properties.ts).
 */
import {
  noDeadEnd,
  only,
  reachable,
  terminates,
  type PropertyOf,
} from '../../src/core/properties.ts';
import type { machine } from './agent-runtime.machine.ts';

export const properties = [
  reachable('Paused', {
    description: '“Agent State Machine”: the brain can yield control back to the user (Paused).',
  }),
  reachable('Completed', {
    description: '“Agent State Machine”: a run can end in the terminal state Completed.',
  }),
  only('Running', 'Processing', {
    via: ['StartThinking', 'StartTools'],
    description:
      '“Agent State Machine”: Running moves to Processing only to run the next step (spawn_next_step, spawn_tools).',
  }),
  only('Paused', 'Running', {
    via: ['UserInput'],
    description:
      '“Agent State Machine”: a paused agent, waiting for the user, resumes on user input only.',
  }),
  noDeadEnd({
    description: '“Agent State Machine”: every state but the terminal ones has a way out.',
  }),
  terminates({
    description:
      '“Agent State Machine”: from every state the run can still end in a terminal state (Completed, Failed or Cancelled).',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
