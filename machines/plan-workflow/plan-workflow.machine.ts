import { assertEvent, assign, setup } from 'xstate';
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

type ArtifactAdded = Extract<GlobalEvent, { type: 'ARTIFACT_ADDED' }>;
type CommentAdded = Extract<GlobalEvent, { type: 'ADD_COMMENT' }>;

/** Who may send the global events and what they do (shared with team-workflow). */
export const globalEventMeta = {
  ARTIFACT_ADDED: { description: 'Attach an artifact (any phase).' },
  ADD_COMMENT: { roles: ['agent', 'approver'], description: 'Add a comment (any phase).' },
  CLEAR_COMMENTS: { roles: ['approver', 'operator'], description: 'Clear the comments.' },
  RESET: {
    roles: ['approver', 'operator'],
    description: 'Start over from IDLE with an empty context.',
  },
};

/**
 * The global events' transitions, on the root of plan-workflow and team-workflow
 * alike (every state accepts them): the named actions, which each chart implements
 * with the {@link workspace} reducers, and RESET back to IDLE.
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
    addArtifact: assign(({ context, event }) => {
      assertEvent(event, 'ARTIFACT_ADDED');
      return { artifacts: workspace.artifactAdded(context.artifacts, event) };
    }),
    addComment: assign(({ context, event }) => {
      assertEvent(event, 'ADD_COMMENT');
      return { comments: workspace.commentAdded(context.comments, event) };
    }),
    clearComments: assign(() => ({ comments: workspace.commentsCleared() })),
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
    events: {
      START: { description: 'Begin planning.' },
      PLAN_CREATED: { description: 'The plan is written: ask for its approval.' },
      PLAN_APPROVED: { kind: 'approval', description: 'A person approved the plan.' },
      TASKS_CREATED: { description: 'The tasks are written: ask for their approval.' },
      TASKS_APPROVED: { kind: 'approval', description: 'A person approved the tasks.' },
      CHANGES_REQUESTED: {
        kind: 'approval',
        description: 'A person sends the plan, the tasks or the work back with feedback.',
      },
      IMPLEMENTATION_COMPLETE: { description: 'The work is done: verify it.' },
      TESTS_PASS: { description: 'Verification passed: the workflow is complete.' },
      ...globalEventMeta,
    },
  },
  states: {
    IDLE: {
      meta: { class: 'idle' },
      description: 'Waiting for work',
      on: {
        START: [
          { guard: 'isInteractive', target: 'PLANNING', actions: 'recordStart' },
          { guard: 'isAutonomous', target: 'EXECUTION', actions: 'recordStart' },
        ],
      },
    },
    PLANNING: {
      meta: { class: 'working', color: '#a855f7' },
      description: 'Analyzes request, creates Implementation Plan',
      on: { PLAN_CREATED: { target: 'AWAITING_PLAN_APPROVAL', actions: 'recordPlan' } },
    },
    AWAITING_PLAN_APPROVAL: {
      meta: { class: 'paused' },
      description: 'Waiting for user approval of plan',
      on: {
        PLAN_APPROVED: { target: 'CREATING_TASKS' },
        CHANGES_REQUESTED: { target: 'PLANNING', actions: 'recordChangeRequest' },
      },
    },
    CREATING_TASKS: {
      meta: { class: 'working', color: '#a855f7' },
      description: 'Converts approved plan into Task List',
      on: { TASKS_CREATED: { target: 'AWAITING_TASKS_APPROVAL', actions: 'recordTasks' } },
    },
    AWAITING_TASKS_APPROVAL: {
      meta: { class: 'paused' },
      description: 'Waiting for user approval of tasks',
      on: {
        TASKS_APPROVED: { target: 'EXECUTION' },
        CHANGES_REQUESTED: { target: 'CREATING_TASKS', actions: 'recordChangeRequest' },
      },
    },
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
        CHANGES_REQUESTED: { target: 'EXECUTION', actions: 'recordChangeRequest' },
      },
    },
    COMPLETE: {
      meta: { class: 'completed' },
      description: 'Work verified; only the global events apply',
      tags: ['terminal'],
    },
  },
});
