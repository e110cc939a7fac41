import { assertEvent, assign, setup, type EventObject } from 'xstate';
import { eventMeta } from '../event-meta.ts';
import type { EventCatalog } from '../../src/core/chart.ts';
import {
  events,
  planWorkflowInputSchema,
  type Artifact,
  type Comment,
  type GlobalEvent,
  type PlanWorkflowContext,
  type PlanWorkflowEvent,
  type PlanWorkflowInput,
  type WorkflowMode,
  type WorkspaceContext,
} from './plan-workflow.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

type ArtifactAdded = Extract<GlobalEvent, { type: 'ARTIFACT_ADDED' }>;
type CommentAdded = Extract<GlobalEvent, { type: 'ADD_COMMENT' }>;

/** Who may send the global events and what they do (shared with team-workflow). */
export const globalEventMeta = {
  ARTIFACT_ADDED: { description: 'Attach an artifact (any phase).' },
  ADD_COMMENT: {
    roles: ['agent', 'approver'],
    // The author is whoever sends it: bound to the signing key, never taken from the body.
    signer: 'author',
    description: 'Add a comment (any phase).',
  },
  CLEAR_COMMENTS: { roles: ['approver', 'operator'], description: 'Clear the comments.' },
  RESET: {
    roles: ['approver', 'operator'],
    description: 'Start over from IDLE with an empty context.',
  },
};

/**
 * The global events' transitions, on the root of plan-workflow and team-workflow
 * alike (every state accepts them): the named actions, which each chart implements
 * with `globalEventUpdates`, and RESET back to IDLE.
 */
export const globalEventTransitions = {
  ARTIFACT_ADDED: { actions: 'addArtifact' },
  ADD_COMMENT: { actions: 'addComment' },
  CLEAR_COMMENTS: { actions: 'clearComments' },
  RESET: { target: '.IDLE', actions: 'resetContext' },
} as const;

/**
 * Context reducers of the global events. plan-workflow and team-workflow both wrap
 * them in `assign`, so the two charts give ARTIFACT_ADDED, ADD_COMMENT and
 * CLEAR_COMMENTS the same meaning.
 */
export const workspace = {
  /** The empty workspace of a fresh run (also what RESET restores). */
  empty(): WorkspaceContext {
    return { artifacts: [], comments: [] };
  },
  /** Adds the artifact, or replaces the one with the same id in place. */
  artifactAdded(artifacts: readonly Artifact[], event: ArtifactAdded): Artifact[] {
    const artifact: Artifact = {
      artifactId: event.artifactId,
      name: event.name,
      uri: event.uri ?? null,
    };
    const index = artifacts.findIndex((a) => a.artifactId === event.artifactId);
    if (index === -1) return [...artifacts, artifact];
    return artifacts.map((a, i) => (i === index ? artifact : a));
  },
  /** Appends a comment (ADD_COMMENT, or a comment carried by another event). */
  commentAdded(
    comments: readonly Comment[],
    comment: Pick<CommentAdded, 'author' | 'text' | 'artifactId'>,
  ): Comment[] {
    return [
      ...comments,
      { author: comment.author, text: comment.text, artifactId: comment.artifactId ?? null },
    ];
  },
  /** CLEAR_COMMENTS empties the list; artifacts stay. */
  commentsCleared(): Comment[] {
    return [];
  },
};

/**
 * What of the workspace both workflows' `serializeState` keeps: whether there are
 * comments (they grow without bound) and the artifact ids.
 */
export function serializedWorkspace(context: WorkspaceContext): [boolean, string[]] {
  return [context.comments.length > 0, context.artifacts.map((a) => a.artifactId)];
}

/**
 * The context updates of the global events (the event is asserted). plan-workflow
 * and team-workflow both wrap them in `assign`, so the two charts give
 * ARTIFACT_ADDED, ADD_COMMENT and CLEAR_COMMENTS the same meaning.
 */
export const globalEventUpdates = {
  ARTIFACT_ADDED: (context: WorkspaceContext, event: EventObject) => ({
    artifacts: workspace.artifactAdded(context.artifacts, globalEvent(event, 'ARTIFACT_ADDED')),
  }),
  ADD_COMMENT: (context: WorkspaceContext, event: EventObject) => ({
    comments: workspace.commentAdded(context.comments, globalEvent(event, 'ADD_COMMENT')),
  }),
  CLEAR_COMMENTS: () => ({ comments: workspace.commentsCleared() }),
};

/**
 * `event` as the global event `type`, which it is asserted to be: both workflows
 * accept the global events with the schemas of {@link globalEvents}.
 */
function globalEvent<T extends GlobalEvent['type']>(event: EventObject, type: T) {
  assertEvent(event, type);
  return event as Extract<GlobalEvent, { type: T }>;
}

/**
 * Samples of the global events for a chart's catalog entry: the same artifacts,
 * CLEAR_COMMENTS and RESET in both workflows, with the chart's own `comments`.
 */
export function globalEventSamples(comments: readonly CommentAdded[]): EventCatalog<GlobalEvent> {
  return {
    ARTIFACT_ADDED: [
      { type: 'ARTIFACT_ADDED', artifactId: 'plan', name: 'Implementation Plan' },
      { type: 'ARTIFACT_ADDED', artifactId: 'tasks', name: 'Task List', uri: 'file:///tasks.md' },
    ],
    ADD_COMMENT: comments,
    CLEAR_COMMENTS: [{ type: 'CLEAR_COMMENTS' }],
    RESET: [{ type: 'RESET' }],
  };
}

/** IDLE of both workflows: waiting for START (and where RESET returns). */
export function idleState<const On extends object>(on: On) {
  return { meta: { class: 'idle' }, description: 'Waiting for work', on } as const;
}

/**
 * COMPLETE of both workflows: the work is verified (tag `terminal`), but it is not
 * an XState final state, so the global events, RESET included, still apply.
 */
export const completeState = {
  meta: { class: 'completed' },
  description: 'Work verified; only the global events apply',
  tags: ['terminal'],
} as const;

/** A state where the agent writes a draft (the plan, the task list); `on` submits it. */
function drafting<const D extends string, const On extends object>(description: D, on: On) {
  return { meta: { class: 'working', color: '#a855f7' }, description, on } as const;
}

/** A state that waits for a person to approve the draft (class `paused`). */
function awaitingApproval<const D extends string, const On extends object>(description: D, on: On) {
  return { meta: { class: 'paused' }, description, on } as const;
}

/** CHANGES_REQUESTED: back to `target`, with the person's feedback recorded. */
function changesRequested<const T extends string>(target: T) {
  return { target, actions: 'recordChangeRequest' } as const;
}

/** The context of a run that has not started, from the fields that survive RESET. */
function freshContext(workflowId: string, defaultMode: WorkflowMode): PlanWorkflowContext {
  return {
    workflowId,
    defaultMode,
    mode: null,
    request: null,
    plan: null,
    tasks: [],
    feedback: null,
    changeRequests: 0,
    summary: null,
    report: null,
    ...workspace.empty(),
  };
}

/** Initial context from the (validated) input. */
export function planWorkflowContext({
  input,
}: {
  input: PlanWorkflowInput | undefined;
}): PlanWorkflowContext {
  const parsed = planWorkflowInputSchema.parse(input ?? {});
  return freshContext(parsed.workflowId ?? 'plan-workflow', parsed.mode ?? 'interactive');
}

/** START's mode, or the input's default when START names none. */
export function startMode(
  context: { defaultMode: WorkflowMode },
  event: { type: string; mode?: WorkflowMode | undefined },
): WorkflowMode {
  return event.mode ?? context.defaultMode;
}

export const machine = setup({
  types: {
    ...metaTypes,
    context: {} as PlanWorkflowContext,
    events: {} as PlanWorkflowEvent,
    // Every input field is optional, so an actor may be created without input. The
    // assertion is what XState infers the input type from: without it, `{}`.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    input: {} as PlanWorkflowInput | undefined,
  },
  schemas: { events, input: planWorkflowInputSchema },
  guards: {
    isInteractive: ({ context, event }) => {
      assertEvent(event, 'START');
      return startMode(context, event) === 'interactive';
    },
    isAutonomous: ({ context, event }) => {
      assertEvent(event, 'START');
      return startMode(context, event) === 'autonomous';
    },
  },
  actions: {
    recordStart: assign(({ context, event }) => {
      assertEvent(event, 'START');
      return { request: event.request, mode: startMode(context, event) };
    }),
    recordPlan: assign(({ event }) => {
      assertEvent(event, 'PLAN_CREATED');
      return { plan: event.plan };
    }),
    recordTasks: assign(({ event }) => {
      assertEvent(event, 'TASKS_CREATED');
      return { tasks: event.tasks.map((t) => ({ taskId: t.taskId, title: t.title })) };
    }),
    recordChangeRequest: assign(({ context, event }) => {
      assertEvent(event, 'CHANGES_REQUESTED');
      return { feedback: event.feedback, changeRequests: context.changeRequests + 1 };
    }),
    recordSummary: assign(({ event }) => {
      assertEvent(event, 'IMPLEMENTATION_COMPLETE');
      return { summary: event.summary ?? null };
    }),
    recordReport: assign(({ event }) => {
      assertEvent(event, 'TESTS_PASS');
      return { report: event.report ?? null };
    }),
    addArtifact: assign(({ context, event }) => globalEventUpdates.ARTIFACT_ADDED(context, event)),
    addComment: assign(({ context, event }) => globalEventUpdates.ADD_COMMENT(context, event)),
    clearComments: assign(() => globalEventUpdates.CLEAR_COMMENTS()),
    resetContext: assign(({ context }) => freshContext(context.workflowId, context.defaultMode)),
  },
}).createMachine({
  id: 'plan-workflow',
  context: planWorkflowContext,
  initial: 'IDLE',
  // Global events (“Agent Workflow State Machine”, note on IDLE): on the root, so every
  // state accepts them, COMPLETE included (the issue asks for them in every state).
  // COMPLETE is therefore not an XState final state: the work is done (tag `terminal`)
  // and RESET starts over.
  on: globalEventTransitions,
  meta: {
    events: eventMeta({
      START: 'Begin planning.',
      PLAN_CREATED: 'The plan is written: ask for its approval.',
      PLAN_APPROVED: { kind: 'approval', description: 'A person approved the plan.' },
      TASKS_CREATED: 'The tasks are written: ask for their approval.',
      TASKS_APPROVED: { kind: 'approval', description: 'A person approved the tasks.' },
      CHANGES_REQUESTED: {
        kind: 'approval',
        description: 'A person sends the plan, the tasks or the work back with feedback.',
      },
      IMPLEMENTATION_COMPLETE: 'The work is done: verify it.',
      TESTS_PASS: 'Verification passed: the workflow is complete.',
      ...globalEventMeta,
    }),
  },
  states: {
    IDLE: idleState({
      START: [
        { guard: 'isInteractive', target: 'PLANNING', actions: 'recordStart' },
        { guard: 'isAutonomous', target: 'EXECUTION', actions: 'recordStart' },
      ],
    }),
    PLANNING: drafting('Analyzes request, creates Implementation Plan', {
      PLAN_CREATED: { target: 'AWAITING_PLAN_APPROVAL', actions: 'recordPlan' },
    }),
    AWAITING_PLAN_APPROVAL: awaitingApproval('Waiting for user approval of plan', {
      PLAN_APPROVED: { target: 'CREATING_TASKS' },
      CHANGES_REQUESTED: changesRequested('PLANNING'),
    }),
    CREATING_TASKS: drafting('Converts approved plan into Task List', {
      TASKS_CREATED: { target: 'AWAITING_TASKS_APPROVAL', actions: 'recordTasks' },
    }),
    AWAITING_TASKS_APPROVAL: awaitingApproval('Waiting for user approval of tasks', {
      TASKS_APPROVED: { target: 'EXECUTION' },
      CHANGES_REQUESTED: changesRequested('CREATING_TASKS'),
    }),
    EXECUTION: {
      meta: { class: 'working' },
      description: 'Executes tasks autonomously',
      on: { IMPLEMENTATION_COMPLETE: { target: 'VERIFICATION', actions: 'recordSummary' } },
    },
    VERIFICATION: {
      meta: { class: 'working', color: '#f97316' },
      description: 'Tests and verifies implementation',
      on: {
        TESTS_PASS: { target: 'COMPLETE', actions: 'recordReport' },
        CHANGES_REQUESTED: changesRequested('EXECUTION'),
      },
    },
    COMPLETE: completeState,
  },
});
