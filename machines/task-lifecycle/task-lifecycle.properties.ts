/**
 * What “Agent State Machine Design” promises of a task's lifecycle, as properties
 * `agentcharts check` proves for every path (src/core/properties.ts).
 */
import {
  bounded,
  noDeadEnd,
  only,
  reachable,
  terminates,
  waitsHaveTimeout,
  type PropertyOf,
} from '../../src/core/properties.ts';
import type { machine } from './task-lifecycle.machine.ts';

export const properties = [
  reachable('done', {
    description:
      '“Agent State Machine Design”: a task can run to completion (the happy path to `done`).',
  }),
  only('paused', 'running', {
    via: ['APPROVAL_GRANTED'],
    description:
      '“Agent State Machine Design” §4: once paused, a task “physically cannot enter running without an explicit APPROVAL_GRANTED”.',
  }),
  only('paused', '*', {
    via: ['APPROVAL_GRANTED', 'APPROVAL_DENIED', 'TIMEOUT'],
    description:
      '“Agent State Machine Design” §4, three paths through the approval gate: a paused task leaves only by an approval, a denial or a timeout.',
  }),
  waitsHaveTimeout(['paused'], {
    description:
      '“Agent State Machine Design” §4: paused has an explicit timeout policy, approvals cannot wait indefinitely.',
  }),
  bounded(
    'RETRY',
    { context: 'max_retries' },
    {
      description:
        '“Agent State Machine Design” §5, bounded retries: at most max_retries retries, then MAX_RETRIES_EXCEEDED.',
    },
  ),
  only('retrying', 'failed', {
    via: ['MAX_RETRIES_EXCEEDED', 'FATAL_ERROR'],
    description:
      '“Agent State Machine Design” §5: a retrying task fails only once its retries are exhausted, or on a fatal error.',
  }),
  noDeadEnd({
    description:
      '“Agent State Machine Design”: every state but done and failed has an event or timer that leaves it.',
  }),
  terminates({
    description:
      '“Agent State Machine Design”: from every state, a task can still end in done or failed.',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
