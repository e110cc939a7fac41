import type { SnapshotFrom } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { globalEventSamples, machine, serializedWorkspace } from './plan-workflow.machine.ts';
import { events } from './plan-workflow.types.ts';
import { properties } from './plan-workflow.properties.ts';

export {
  globalEventMeta,
  machine,
  planWorkflowContext,
  startMode,
  workspace,
} from './plan-workflow.machine.ts';
export {
  events,
  fields,
  globalEvents,
  hasUniqueTaskIds,
  idSchema,
  planTaskListSchema,
  planTaskSchema,
  planWorkflowInputSchema,
  shortTextSchema,
  textSchema,
  workflowModeSchema,
} from './plan-workflow.types.ts';
export type {
  Artifact,
  Comment,
  GlobalEvent,
  PlanTask,
  PlanWorkflowContext,
  PlanWorkflowEvent,
  PlanWorkflowInput,
  WorkflowMode,
  WorkspaceContext,
} from './plan-workflow.types.ts';

/** Why each state of plan-workflow is safe to resume as persisted. */
const resumeReasons: Readonly<Record<string, string>> = {
  IDLE: 'waiting for START; nothing was in flight',
  PLANNING:
    'the agent drafts the plan outside the chart; its owner re-drives it and sends PLAN_CREATED',
  AWAITING_PLAN_APPROVAL:
    'waiting on the user; approvals have no deadline in “Agent Workflow State Machine”',
  CREATING_TASKS:
    'the agent writes the task list outside the chart; its owner re-drives it and sends TASKS_CREATED',
  AWAITING_TASKS_APPROVAL:
    'waiting on the user; approvals have no deadline in “Agent Workflow State Machine”',
  EXECUTION:
    'the agent executes outside the chart; its owner re-drives it and sends IMPLEMENTATION_COMPLETE',
  VERIFICATION: 'the agent verifies outside the chart; its owner re-drives it and sends TESTS_PASS',
  COMPLETE: 'the work is verified; only artifacts, comments or RESET can follow',
};

/**
 * Recovery policy: resume every state. “Agent Workflow State Machine” has no failure
 * or timeout event, every wait is on a person or on agent work that lives outside the
 * chart, and nothing in the chart was half-done when the process stopped.
 */
export const recovery: RecoveryPolicy = ({ state }) => ({
  action: 'resume',
  reason: resumeReasons[state] ?? 'no in-flight work is held by the chart',
});

/** Guards read only the mode; comments grow without bound, so only their presence counts. */
export function serializeState(s: SnapshotFrom<typeof machine>): string {
  return JSON.stringify([s.value, s.status, s.context.mode, ...serializedWorkspace(s.context)]);
}

export const chart = defineChart({
  name: 'plan-workflow',
  description:
    '“Agent Workflow State Machine”, single agent: plan → approve → tasks → approve → execute → verify, with global artifact/comment events.',
  machine,
  events,
  eventSamples: {
    START: [
      { type: 'START', request: 'Add a dark mode toggle', mode: 'interactive' },
      { type: 'START', request: 'Fix the flaky login test', mode: 'autonomous' },
      { type: 'START', request: 'Upgrade the logger' },
    ],
    PLAN_CREATED: [{ type: 'PLAN_CREATED', plan: '1. Add theme context 2. Add toggle' }],
    PLAN_APPROVED: [{ type: 'PLAN_APPROVED' }],
    CHANGES_REQUESTED: [{ type: 'CHANGES_REQUESTED', feedback: 'Cover the settings page too' }],
    TASKS_CREATED: [
      {
        type: 'TASKS_CREATED',
        tasks: [
          { taskId: 't1', title: 'Theme context' },
          { taskId: 't2', title: 'Toggle component' },
        ],
      },
    ],
    TASKS_APPROVED: [{ type: 'TASKS_APPROVED' }],
    IMPLEMENTATION_COMPLETE: [
      { type: 'IMPLEMENTATION_COMPLETE', summary: 'Toggle added' },
      { type: 'IMPLEMENTATION_COMPLETE' },
    ],
    TESTS_PASS: [{ type: 'TESTS_PASS', report: '42 passed' }, { type: 'TESTS_PASS' }],
    ...globalEventSamples([
      { type: 'ADD_COMMENT', author: 'user', text: 'Looks good', artifactId: 'plan' },
      { type: 'ADD_COMMENT', author: 'agent', text: 'Starting now' },
    ]),
  },
  defaultInput: { workflowId: 'plan-demo', mode: 'interactive' },
  recovery,
  version: 1,
  migrations: {},
  properties,
  serializeState,
});
