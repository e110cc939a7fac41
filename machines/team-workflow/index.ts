import type { SnapshotFrom } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { globalEventSamples, serializedWorkspace } from '../plan-workflow/plan-workflow.machine.ts';
import { machine } from './team-workflow.machine.ts';
import { events, type TeamWorkflowInput } from './team-workflow.types.ts';
import { properties } from './team-workflow.properties.ts';
import { taskChart } from './team-task.chart.ts';

export { taskChart } from './team-task.chart.ts';
export {
  approvalReachesThreshold,
  machine,
  reachesThreshold,
  roleOf,
  taskOf,
  teamWorkflowContext,
} from './team-workflow.machine.ts';
export {
  DEFAULT_THRESHOLD,
  events,
  memberSchema,
  roleSchema,
  teamTaskSchema,
  teamWorkflowInputSchema,
  thresholdSchema,
  voteDecisionSchema,
} from './team-workflow.types.ts';
export type {
  Member,
  Role,
  TaskStatus,
  TeamTask,
  TeamTaskDraft,
  TeamWorkflowContext,
  TeamWorkflowEvent,
  TeamWorkflowInput,
  Threshold,
  VoteDecision,
} from './team-workflow.types.ts';

/** Why each resting state of team-workflow is safe to resume as persisted. */
const resumeReasons: Readonly<Record<string, string>> = {
  COMPLETE: 'the work is verified; only the global events (RESET starts over) apply',
  IDLE: 'waiting for START; nothing was in flight',
  'PLANNING.Architect_Drafts': 'the architect drafts outside the chart and sends PLAN_DRAFTED',
  'PLANNING.Team_Review':
    'votes cast so far are in context; the remaining voters vote after restart',
  'TASK_CREATION.Architect_Decomposes':
    'the architect decomposes outside the chart and sends TASKS_DRAFTED',
  'TASK_CREATION.Team_Review':
    'votes cast so far are in context; the remaining voters vote after restart',
  'EXECUTION.Dispatch': 'waiting for TASKS_ASSIGNED from whoever dispatches',
  'EXECUTION.Parallel_Work':
    'each task keeps its status in context; workers report progress as they resume',
  'EXECUTION.Blocked': 'blockers are resolved by the team, not by a clock',
  'VERIFICATION.QA_Review': 'waiting for the QA member to pass or fail the work',
  'VERIFICATION.Cross_Review': 'reviews done so far are in context; the rest follow',
};

/**
 * Recovery policy: resume every state. Every wait is on people (votes, work,
 * blockers, reviews) whose progress is already in context; “Agent Workflow State Machine” has no
 * deadline or failure event the chart could send instead.
 */
export const recovery: RecoveryPolicy = ({ state }) => ({
  action: 'resume',
  reason: resumeReasons[state] ?? 'no in-flight work is held by the chart',
});

/** A small team: one member per role, the three workers vote, a leader, default threshold. */
export const defaultInput: TeamWorkflowInput = {
  workflowId: 'team-demo',
  members: [
    { id: 'arch', role: 'architect' },
    { id: 'dev', role: 'developer' },
    { id: 'qa', role: 'qa' },
    { id: 'lead', role: 'leader' },
  ],
  voters: ['arch', 'dev', 'qa'],
};

/**
 * Guards read votes, task statuses, assignees, blockers and reviews; those are
 * finite for 3 voters and 2 tasks. Comments, attempts and revisions grow without
 * bound and no guard reads them, so they are left out.
 */
export function serializeState(s: SnapshotFrom<typeof machine>): string {
  return JSON.stringify([
    s.value,
    s.status,
    s.context.votes,
    Object.values(s.context.tasks).map((t) => [
      t.taskId,
      t.status,
      t.assignee,
      t.blocker !== null,
      t.reviewedBy,
    ]),
    ...serializedWorkspace(s.context),
  ]);
}

export const chart = defineChart({
  name: 'team-workflow',
  description:
    '“Agent Workflow State Machine”, team variant: architect drafts, consensus votes, parallel per-task work with blockers, QA then cross review.',
  machine,
  events,
  eventSamples: {
    START: [{ type: 'START', request: 'Add a dark mode toggle' }],
    PLAN_DRAFTED: [
      { type: 'PLAN_DRAFTED', by: 'arch', plan: 'Theme context, toggle, QA checklist' },
      { type: 'PLAN_DRAFTED', by: 'dev', plan: 'Not the architect' },
    ],
    TASKS_DRAFTED: [
      {
        type: 'TASKS_DRAFTED',
        by: 'arch',
        tasks: [
          { taskId: 't1', title: 'Toggle component', role: 'developer' },
          { taskId: 't2', title: 'QA checklist', role: 'qa' },
        ],
      },
      {
        type: 'TASKS_DRAFTED',
        by: 'qa',
        tasks: [{ taskId: 't1', title: 'Not the architect', role: 'developer' }],
      },
    ],
    VOTE: [
      { type: 'VOTE', voterId: 'arch', decision: 'approve' },
      { type: 'VOTE', voterId: 'dev', decision: 'approve' },
      { type: 'VOTE', voterId: 'qa', decision: 'approve', comment: 'LGTM' },
      { type: 'VOTE', voterId: 'qa', decision: 'request_changes', comment: 'Add tests' },
      { type: 'VOTE', voterId: 'outsider', decision: 'approve' },
    ],
    LEADER_DECISION: [
      { type: 'LEADER_DECISION', leaderId: 'lead', decision: 'approve' },
      {
        type: 'LEADER_DECISION',
        leaderId: 'lead',
        decision: 'request_changes',
        comment: 'Split t1',
      },
      { type: 'LEADER_DECISION', leaderId: 'dev', decision: 'approve' },
    ],
    TASKS_ASSIGNED: [
      {
        type: 'TASKS_ASSIGNED',
        assignments: [
          { taskId: 't1', assignee: 'dev' },
          { taskId: 't2', assignee: 'qa' },
        ],
      },
      { type: 'TASKS_ASSIGNED', assignments: [{ taskId: 't1', assignee: 'dev' }] },
      { type: 'TASKS_ASSIGNED', assignments: [{ taskId: 't2', assignee: 'qa' }] },
      {
        type: 'TASKS_ASSIGNED',
        assignments: [
          { taskId: 't1', assignee: 'qa' },
          { taskId: 't2', assignee: 'dev' },
        ],
      },
    ],
    TASK_STATUS: [
      {
        type: 'TASK_STATUS',
        taskId: 't1',
        status: 'IN_PROGRESS',
        blocker: null,
        outcome: null,
        retries: 0,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't2',
        status: 'IN_PROGRESS',
        blocker: null,
        outcome: null,
        retries: 0,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't1',
        status: 'IN_PROGRESS',
        blocker: 'Waiting on design tokens',
        outcome: null,
        retries: 0,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't1',
        status: 'DONE',
        blocker: null,
        outcome: 'Toggle merged',
        retries: 0,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't2',
        status: 'DONE',
        blocker: null,
        outcome: null,
        retries: 0,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't1',
        status: 'FAILED',
        blocker: null,
        outcome: 'Build broke',
        retries: 2,
      },
      {
        type: 'TASK_STATUS',
        taskId: 't9',
        status: 'DONE',
        blocker: null,
        outcome: null,
        retries: 0,
      },
    ],
    QA_PASS: [
      { type: 'QA_PASS', by: 'qa', report: 'All checks green' },
      { type: 'QA_PASS', by: 'dev' },
    ],
    QA_FAIL: [
      { type: 'QA_FAIL', by: 'qa', taskIds: ['t1'], report: 'Toggle does not persist' },
      { type: 'QA_FAIL', by: 'qa', taskIds: ['t2'], report: 'Checklist incomplete' },
      { type: 'QA_FAIL', by: 'qa', taskIds: ['t1', 't2'], report: 'Both need work' },
    ],
    CROSS_REVIEW: [
      { type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'qa', decision: 'approve' },
      { type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'dev', decision: 'approve' },
      {
        type: 'CROSS_REVIEW',
        taskId: 't1',
        reviewerId: 'arch',
        decision: 'request_changes',
        comment: 'Use the design tokens',
      },
      { type: 'CROSS_REVIEW', taskId: 't2', reviewerId: 'dev', decision: 'approve' },
      { type: 'CROSS_REVIEW', taskId: 't2', reviewerId: 'qa', decision: 'approve' },
    ],
    ...globalEventSamples([
      { type: 'ADD_COMMENT', author: 'dev', text: 'Which tokens?', artifactId: 'plan' },
      { type: 'ADD_COMMENT', author: 'qa', text: 'Starting review' },
    ]),
  },
  defaultInput,
  recovery,
  version: 1,
  migrations: {},
  properties,
  children: [taskChart],
  serializeState,
});
