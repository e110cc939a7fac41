import * as z from 'zod';
import { eventSchema, type EventFromSchemas } from '../../src/strict/events.ts';

/**
 * Identifiers (workflow, task, artifact, member ids). They become keys of context
 * records in team-workflow, so they must start with a letter or digit: that rules
 * out `__proto__` and keeps them printable and short.
 */
export const idSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/, 'expected an id: letters, digits, . _ : -');

/** Free text that must say something (not empty, not only whitespace). */
export const textSchema = z.string().min(1).max(20_000).regex(/\S/, 'expected non-blank text');

/** Short free text: names, titles, comment authors. */
export const shortTextSchema = z.string().min(1).max(200).regex(/\S/, 'expected non-blank text');

/** How a single-agent workflow runs: with the user's two approval gates, or straight to execution. */
export const workflowModeSchema = z.enum(['interactive', 'autonomous']);
export type WorkflowMode = z.infer<typeof workflowModeSchema>;

/**
 * One task of a task list (“Agent Workflow State Machine”: "Converts approved plan into
 * Task List").
 */
export const planTaskSchema = z.strictObject({ taskId: idSchema, title: shortTextSchema });
export type PlanTask = z.infer<typeof planTaskSchema>;

/** Task ids of a list must be unique: they name the tasks from then on. */
export function hasUniqueTaskIds(tasks: readonly { taskId: string }[]): boolean {
  return new Set(tasks.map((t) => t.taskId)).size === tasks.length;
}

/** A non-empty task list with unique ids. */
export const planTaskListSchema = z
  .array(planTaskSchema)
  .min(1)
  .max(200)
  .refine(hasUniqueTaskIds, 'task ids must be unique');

/**
 * Payload field groups of the vocabulary team-workflow extends: its events spread
 * these groups (and reuse the global event schemas) instead of restating them.
 */
export const fields = {
  start: { request: textSchema },
  plan: { plan: textSchema },
  artifact: { artifactId: idSchema, name: shortTextSchema, uri: textSchema.optional() },
  comment: { author: shortTextSchema, text: textSchema, artifactId: idSchema.optional() },
  feedback: { feedback: textSchema },
} as const;

/**
 * The global events of “Agent Workflow State Machine” ("note right of IDLE"),
 * accepted in every non-final state of plan-workflow and of team-workflow.
 */
export const globalEvents = {
  /** Records (or replaces, by `artifactId`) an artifact: plan, task list, report. */
  ARTIFACT_ADDED: eventSchema('ARTIFACT_ADDED', fields.artifact),
  /** Appends a comment, optionally about one artifact. */
  ADD_COMMENT: eventSchema('ADD_COMMENT', fields.comment),
  /** Empties the comment list. */
  CLEAR_COMMENTS: eventSchema('CLEAR_COMMENTS'),
  /** Back to IDLE with the initial context. */
  RESET: eventSchema('RESET'),
};

/** Event schemas of plan-workflow, keyed by event type. */
export const events = {
  START: eventSchema('START', { ...fields.start, mode: workflowModeSchema.optional() }),
  PLAN_CREATED: eventSchema('PLAN_CREATED', fields.plan),
  PLAN_APPROVED: eventSchema('PLAN_APPROVED'),
  CHANGES_REQUESTED: eventSchema('CHANGES_REQUESTED', fields.feedback),
  TASKS_CREATED: eventSchema('TASKS_CREATED', { tasks: planTaskListSchema }),
  TASKS_APPROVED: eventSchema('TASKS_APPROVED'),
  IMPLEMENTATION_COMPLETE: eventSchema('IMPLEMENTATION_COMPLETE', {
    summary: textSchema.optional(),
  }),
  TESTS_PASS: eventSchema('TESTS_PASS', { report: textSchema.optional() }),
  ...globalEvents,
};

export type PlanWorkflowEvent = EventFromSchemas<typeof events>;

/** The events of {@link globalEvents}. */
export type GlobalEvent = EventFromSchemas<typeof globalEvents>;

/** An artifact as kept in context. */
export interface Artifact {
  artifactId: string;
  name: string;
  uri: string | null;
}

/** A comment as kept in context. */
export interface Comment {
  author: string;
  text: string;
  artifactId: string | null;
}

/** The part of the context the global events act on; team-workflow's context extends it. */
export interface WorkspaceContext {
  artifacts: Artifact[];
  comments: Comment[];
}

export interface PlanWorkflowContext extends WorkspaceContext {
  workflowId: string;
  /** Mode used when START names none. */
  defaultMode: WorkflowMode;
  /** Mode of the current run, set by START. */
  mode: WorkflowMode | null;
  request: string | null;
  plan: string | null;
  tasks: PlanTask[];
  /** Feedback of the latest CHANGES_REQUESTED. */
  feedback: string | null;
  /** How many times changes were requested in this run. */
  changeRequests: number;
  summary: string | null;
  report: string | null;
}

export const planWorkflowInputSchema = z.strictObject({
  workflowId: idSchema.optional(),
  mode: workflowModeSchema.optional(),
});

export type PlanWorkflowInput = z.input<typeof planWorkflowInputSchema>;
