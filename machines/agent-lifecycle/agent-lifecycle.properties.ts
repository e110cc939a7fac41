/**
 * What “Agent State Machine” (v1.0) promises of an agent's lifecycle, as
 * properties `agentcharts check` proves for every path (src/core/properties.ts).
 */
import {
  before,
  noDeadEnd,
  only,
  reachable,
  terminates,
  type PropertyOf,
} from '../../src/core/properties.ts';
import type { machine } from './agent-lifecycle.machine.ts';

export const properties = [
  reachable('succeeded', {
    description: '“Agent State Machine” (v1.0): an agent can complete its task successfully.',
  }),
  reachable('cancelled', {
    description: '“Agent State Machine” (v1.0): an agent can be explicitly cancelled.',
  }),
  only('*', 'succeeded', {
    via: ['EVALUATION_PASS'],
    description:
      '“Agent State Machine” (v1.0), transition matrix: only evaluating leads to succeeded, on EVALUATION_PASS.',
  }),
  before('PLAN_COMPLETE', 'STEP_COMPLETE', {
    resetBy: ['START'],
    description:
      '“Agent State Machine” (v1.0): executing runs a plan step, so no step completes before the task has a plan.',
  }),
  only('*', 'paused', {
    via: ['PAUSE'],
    description: '“Agent State Machine” (v1.0): paused means manually paused by a user or admin.',
  }),
  only('paused', 'active', {
    via: ['RESUME'],
    description:
      '“Agent State Machine” (v1.0): a paused agent returns to the state it was paused from only when resumed.',
  }),
  noDeadEnd({
    description:
      '“Agent State Machine” (v1.0): every non-terminal state can be left (and the terminal ones return to idle after cleanup).',
  }),
  terminates({
    description:
      '“Agent State Machine” (v1.0): from every state a terminal state (succeeded, failed, cancelled) can be reached.',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
