import * as z from 'zod';
import { eventSchema, type EventFromSchemas } from '../../src/strict/events.ts';
import {
  events as planEvents,
  fields,
  globalEvents,
  hasUniqueTaskIds,
  idSchema,
  planTaskSchema,
  textSchema,
  type WorkspaceContext,
} from '../plan-workflow/index.ts';

/**
 * Team roles (“Agent Workflow State Machine”, "Add Role Context"). A `leader` ("Team Leader or
 * Consensus Vote approves") may decide a review round alone with LEADER_DECISION.
 */
export const roleSchema = z.enum(['architect', 'developer', 'qa', 'leader']);
export type Role = z.infer<typeof roleSchema>;

export const memberSchema = z.strictObject({ id: idSchema, role: roleSchema });
export type Member = z.infer<typeof memberSchema>;

/** A task of the team's list: the single-agent task plus the role that must do it. */
export const teamTaskSchema = planTaskSchema.extend({ role: roleSchema });
export type TeamTaskDraft = z.infer<typeof teamTaskSchema>;

/** A fraction `"n/d"` (0 < n ≤ d ≤ 1000) or a number in (0, 1]. */
export const thresholdSchema = z.union([
  z.number().gt(0).lte(1),
  z
    .string()
    .regex(/^[1-9]\d{0,2}\/[1-9]\d{0,3}$/, 'a fraction such as 2/3')
    .refine((t) => {
      const [n, d] = t.split('/').map(Number) as [number, number];
      return n <= d && d <= 1000;
    }, 'a fraction between 0 and 1 (n ≤ d ≤ 1000)'),
]);
export type Threshold = z.infer<typeof thresholdSchema>;

export const voteDecisionSchema = z.enum(['approve', 'request_changes']);
export type VoteDecision = z.infer<typeof voteDecisionSchema>;

function uniqueStrings(values: readonly string[]): boolean {
  return new Set(values).size === values.length;
}

/** Member id of the sender, where the document ties the step to a role. */
const by = { by: idSchema };

/**
 * Event schemas of team-workflow. The single-agent vocabulary is reused, not
 * restated: START is plan-workflow's START without the mode (a team always plans),
 * the global events are plan-workflow's schemas, and the drafting events spread
 * plan-workflow's payload field groups.
 */
export const events = {
  START: planEvents.START.omit({ mode: true }),
  ...globalEvents,
  PLAN_DRAFTED: eventSchema('PLAN_DRAFTED', { ...fields.plan, ...by }),
  TASKS_DRAFTED: eventSchema('TASKS_DRAFTED', {
    ...by,
    tasks: z
      .array(teamTaskSchema)
      .min(1)
      .max(200)
      .refine(hasUniqueTaskIds, 'task ids must be unique'),
  }),
  VOTE: eventSchema('VOTE', {
    voterId: idSchema,
    decision: voteDecisionSchema,
    comment: textSchema.optional(),
  }),
  /** The Team Leader approves or sends back the plan or the tasks instead of a vote. */
  LEADER_DECISION: eventSchema('LEADER_DECISION', {
    leaderId: idSchema,
    decision: voteDecisionSchema,
    comment: textSchema.optional(),
  }),
  TASKS_ASSIGNED: eventSchema('TASKS_ASSIGNED', {
    assignments: z
      .array(z.strictObject({ taskId: idSchema, assignee: idSchema }))
      .min(1)
      .max(200)
      .refine((list) => hasUniqueTaskIds(list), 'a task is assigned once'),
  }),
  /** A task's own actor reports a change of its status (sent by the task, never by a caller). */
  TASK_STATUS: eventSchema('TASK_STATUS', {
    taskId: idSchema,
    status: z.enum(['IN_PROGRESS', 'DONE', 'FAILED']),
    blocker: textSchema.nullable(),
    outcome: textSchema.nullable(),
    retries: z.number().int().min(0).max(1000),
  }),
  QA_PASS: eventSchema('QA_PASS', { ...by, report: textSchema.optional() }),
  QA_FAIL: eventSchema('QA_FAIL', {
    ...by,
    taskIds: z.array(idSchema).min(1).max(200).refine(uniqueStrings, 'task ids must be unique'),
    report: textSchema,
  }),
  CROSS_REVIEW: eventSchema('CROSS_REVIEW', {
    taskId: idSchema,
    reviewerId: idSchema,
    decision: voteDecisionSchema,
    comment: textSchema.optional(),
  }),
};

export type TeamWorkflowEvent = EventFromSchemas<typeof events>;
export type TaskStatusReport = Extract<TeamWorkflowEvent, { type: 'TASK_STATUS' }>;

/**
 * The events of one task's own actor (`<workflow id>/<task id>`, see
 * team-task.machine.ts). `taskId` names the task, as in the document; a task's actor
 * refuses another task's id.
 */
export const taskEvents = {
  TASK_STARTED: eventSchema('TASK_STARTED', { taskId: idSchema }),
  TASK_DONE: eventSchema('TASK_DONE', { taskId: idSchema, summary: textSchema.optional() }),
  TASK_FAILED: eventSchema('TASK_FAILED', {
    taskId: idSchema,
    reason: textSchema,
    /** Worth another try after a backoff (while retries remain). Default false. */
    retryable: z.boolean().optional(),
  }),
  BLOCKER_RAISED: eventSchema('BLOCKER_RAISED', { taskId: idSchema, description: textSchema }),
  BLOCKER_RESOLVED: eventSchema('BLOCKER_RESOLVED', { taskId: idSchema }),
};
export type TeamTaskEvent = EventFromSchemas<typeof taskEvents>;

/**
 * Per-task status. The per-task substates of “Agent Workflow State Machine” are
 * ASSIGNED → IN_PROGRESS → DONE / FAILED; PENDING is a task approved (or reopened)
 * but not yet dispatched.
 */
export type TaskStatus = 'PENDING' | 'ASSIGNED' | 'IN_PROGRESS' | 'DONE' | 'FAILED';

export interface TeamTask {
  taskId: string;
  title: string;
  role: Role;
  status: TaskStatus;
  assignee: string | null;
  /** Open blocker's description, while the task is blocked. */
  blocker: string | null;
  /** Member who approved the work in cross review, for the current attempt. */
  reviewedBy: string | null;
  /** 1 on first dispatch, +1 each time QA or a cross reviewer reopens the task. */
  attempt: number;
  /** TASK_DONE summary or TASK_FAILED reason of the current attempt. */
  outcome: string | null;
}

export interface TeamWorkflowContext extends WorkspaceContext {
  workflowId: string;
  members: Member[];
  /** Member ids whose votes count; approval needs approvals / voters.length ≥ threshold. */
  voters: string[];
  threshold: Threshold;
  request: string | null;
  plan: string | null;
  /** The task list as drafted by the architect, in order. */
  taskDrafts: TeamTaskDraft[];
  /** Votes of the current review round, by voter id. */
  votes: Record<string, VoteDecision>;
  /** Tasks by id, from approval of the task list on. */
  tasks: Record<string, TeamTask>;
  /** Review rounds that ended in a change request, per phase. */
  revisions: { plan: number; tasks: number };
  /** Latest QA report. */
  qaReport: string | null;
  /** Retries each task's actor may make after a retryable failure. */
  maxTaskRetries: number;
  /** How long a task may stay in progress before it fails (ms). */
  taskTimeoutMs: number;
}

function hasRole(members: readonly Member[], role: Role): boolean {
  return members.some((m) => m.role === role);
}

/** The team: members with roles, the voters among them, and the approval threshold. */
export const teamWorkflowInputSchema = z
  .strictObject({
    workflowId: idSchema.optional(),
    members: z.array(memberSchema).min(1).max(100),
    /** Defaults to every member. */
    voters: z.array(idSchema).min(1).optional(),
    /**
     * Share of voters that must approve, compared exactly: a fraction `"2/3"` (the
     * default) or a number in (0, 1] (`0.67` means 67 %: 2 of 3 is not enough).
     */
    threshold: thresholdSchema.optional(),
    /** Retries per task after a retryable TASK_FAILED. Default 2. */
    maxTaskRetries: z.number().int().min(0).max(100).optional(),
    /** How long a task may stay in progress before it fails (ms). Default 4 hours. */
    taskTimeoutMs: z
      .number()
      .int()
      .min(1000)
      .max(30 * 24 * 60 * 60 * 1000)
      .optional(),
  })
  .refine((t) => uniqueStrings(t.members.map((m) => m.id)), {
    message: 'member ids must be unique',
    path: ['members'],
  })
  .refine((t) => hasRole(t.members, 'architect') && hasRole(t.members, 'qa'), {
    message: 'the team needs an architect (drafts) and a qa member (QA review)',
    path: ['members'],
  })
  .refine((t) => t.voters === undefined || uniqueStrings(t.voters), {
    message: 'voter ids must be unique',
    path: ['voters'],
  })
  .refine((t) => (t.voters ?? []).every((v) => t.members.some((m) => m.id === v)), {
    message: 'every voter must be a member',
    path: ['voters'],
  });

export type TeamWorkflowInput = z.input<typeof teamWorkflowInputSchema>;

/**
 * The `"threshold": 0.67` of “Agent Workflow State Machine” read as people read it,
 * two thirds: 2 of 3 pass. Kept as the fraction so the comparison is exact.
 */
export const DEFAULT_THRESHOLD: Threshold = '2/3';
