/**
 * What “Agent Workflow State Machine” promises of the single-agent workflow, as
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
import type { machine } from './plan-workflow.machine.ts';

export const properties = [
  reachable('COMPLETE', {
    description:
      '“Agent Workflow State Machine”: plan → approve → tasks → approve → execute → verify → complete.',
  }),
  before('PLAN_APPROVED', 'TASKS_CREATED', {
    resetBy: ['RESET'],
    description:
      '“Agent Workflow State Machine”: CREATING_TASKS converts the approved plan, so no task list is created before the plan was approved (in each run).',
  }),
  only('*', 'CREATING_TASKS', {
    via: ['PLAN_APPROVED', 'CHANGES_REQUESTED'],
    description:
      '“Agent Workflow State Machine”: tasks are created once the user approved the plan, or again when the user asks for changes to them.',
  }),
  only('*', 'EXECUTION', {
    via: ['TASKS_APPROVED', { type: 'START', mode: 'autonomous' }, 'CHANGES_REQUESTED'],
    description:
      '“Agent Workflow State Machine”: work is executed only after the user approved the tasks, at once when started autonomous, or again when verification asks for changes.',
  }),
  only('*', 'COMPLETE', {
    via: ['TESTS_PASS'],
    description:
      '“Agent Workflow State Machine”: the workflow is complete only once the tests pass.',
  }),
  noDeadEnd({
    description: '“Agent Workflow State Machine”: every state has an exit event.',
  }),
  terminates({
    description:
      '“Agent Workflow State Machine”: from every state the workflow can still complete.',
  }),
] as const satisfies readonly PropertyOf<typeof machine>[];
