/**
 * What a team task promises (“Agent Workflow State Machine”: per task ASSIGNED →
 * IN_PROGRESS → DONE / FAILED; bounded retries of “Agent State Machine Design”),
 * as properties `agentcharts check` proves for every path (src/core/properties.ts).
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
import type { teamTask } from './team-task.machine.ts';

export const taskProperties = [
  reachable('DONE', {
    description: '“Agent Workflow State Machine”, per task: a task can be done.',
  }),
  only('*', 'DONE', {
    via: ['TASK_DONE'],
    description:
      '“Agent Workflow State Machine”, per task: a task is DONE only when its assignee says so.',
  }),
  bounded(
    'after:retryBackoff',
    { context: 'maxRetries' },
    {
      description:
        '“Agent State Machine Design” §5, bounded retries: a task runs again after a retryable failure at most maxRetries times.',
    },
  ),
  waitsHaveTimeout(['IN_PROGRESS'], {
    description:
      '“Agent State Machine Design”: work in progress cannot run forever; the task timeout fails it.',
  }),
  noDeadEnd({
    description:
      '“Agent Workflow State Machine”, per task: every status but DONE and FAILED has a way out.',
  }),
  terminates({
    description:
      '“Agent Workflow State Machine”, completion rule all_done_or_failed: every task can still end DONE or FAILED.',
  }),
] as const satisfies readonly PropertyOf<typeof teamTask>[];
