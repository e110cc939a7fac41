/**
 * One task of the team workflow, as its own durable actor (“Agent Workflow State
 * Machine”: "per_task": ASSIGNED → IN_PROGRESS → DONE / FAILED). The workflow spawns
 * one per assigned task when work is dispatched; workers send the task's events to
 * the task's own actor (`<workflow id>/<task id>`), so two workers finishing two
 * tasks at once never touch the same row. Every change of status is reported to the
 * workflow with TASK_STATUS; DONE and FAILED are final, and the workflow moves on
 * when all its tasks are.
 *
 * Beyond the document's four statuses: a blocker (BLOCKED, the document's "Raise
 * BLOCKER, team helps"), a failure the worker marks retryable waits out a backoff and
 * the task runs again, at most `maxRetries` times (the bounded retries of “Agent
 * State Machine Design”), and a task in progress longer than `timeoutMs` fails
 * (TIMEOUT).
 */
import { assertEvent, assign, enqueueActions, setup } from 'xstate';
import { eventMeta } from '../event-meta.ts';
import { retryDelay } from '../task-lifecycle/index.ts';
import {
  taskEvents,
  type Role,
  type TaskStatusReport,
  type TeamTaskEvent,
} from './team-workflow.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

/** What the workflow hands a task when it spawns it. */
export interface TeamTaskInput {
  taskId: string;
  title: string;
  role: Role;
  assignee: string;
  /** 1 on first dispatch, +1 each time QA or a reviewer reopens the task. */
  attempt: number;
  maxRetries: number;
  timeoutMs: number;
}

export interface TeamTaskContext extends TeamTaskInput {
  /** Retries used in this attempt. */
  retries: number;
  blocker: string | null;
  /** TASK_DONE summary, or the last failure's reason. */
  outcome: string | null;
}

/** The report a task sends its workflow on every change of status. */
function report(context: TeamTaskContext, status: TaskStatusReport['status']): TaskStatusReport {
  return {
    type: 'TASK_STATUS',
    taskId: context.taskId,
    status,
    blocker: context.blocker,
    outcome: context.outcome,
    retries: context.retries,
  };
}

export const teamTask = setup({
  types: {
    ...metaTypes,
    input: {} as TeamTaskInput,
    context: {} as TeamTaskContext,
    events: {} as TeamTaskEvent,
  },
  schemas: { events: taskEvents },
  guards: {
    isThisTask: ({ context, event }) => event.taskId === context.taskId,
    canRetry: ({ context, event }) => {
      assertEvent(event, 'TASK_FAILED');
      return (
        event.taskId === context.taskId &&
        event.retryable === true &&
        context.retries < context.maxRetries
      );
    },
  },
  actions: {
    recordDone: assign(({ event }) => {
      assertEvent(event, 'TASK_DONE');
      return { outcome: event.summary ?? null };
    }),
    recordFailure: assign(({ event }) => {
      assertEvent(event, 'TASK_FAILED');
      return { outcome: event.reason };
    }),
    recordTimeout: assign({ outcome: 'timed out' }),
    countRetry: assign({ retries: ({ context }) => context.retries + 1 }),
    raiseBlocker: assign(({ event }) => {
      assertEvent(event, 'BLOCKER_RAISED');
      return { blocker: event.description };
    }),
    clearBlocker: assign({ blocker: null }),
    // To the workflow that spawned the task; a task run on its own has nobody to tell.
    report: enqueueActions(
      ({ context, self, enqueue }, params: { status: TaskStatusReport['status'] }) => {
        if (self._parent) enqueue.sendParent(report(context, params.status));
      },
    ),
  },
  delays: {
    taskTimeout: ({ context }) => context.timeoutMs,
    // The backoff of “Agent State Machine Design”: exponential from 1 s, capped at 60 s;
    // jitter seeded by the attempt.
    retryBackoff: ({ context }) =>
      retryDelay(context.retries - 1, {
        baseMs: 1_000,
        capMs: 60_000,
        seed: `${context.taskId}:${context.attempt}`,
      }),
  },
}).createMachine({
  id: 'team-task',
  description: 'One task of a team workflow: assigned, in progress, done or failed.',
  initial: 'ASSIGNED',
  context: ({ input }) => ({ ...input, retries: 0, blocker: null, outcome: null }),
  meta: {
    display: { task: 'taskId' },
    events: eventMeta({
      TASK_STARTED: 'The assignee starts the task.',
      TASK_DONE: 'The assignee finished the task.',
      TASK_FAILED: 'The task failed; with `retryable` it runs again after a backoff.',
      BLOCKER_RAISED: 'The task is blocked: the team helps.',
      BLOCKER_RESOLVED: 'The blocker is gone: work goes on.',
    }),
    delays: { taskTimeout: 'TIMEOUT', retryBackoff: 'RETRY' },
  },
  states: {
    ASSIGNED: {
      meta: { class: 'idle' },
      description: 'Dispatched to its assignee; not started',
      on: { TASK_STARTED: { guard: 'isThisTask', target: 'IN_PROGRESS' } },
    },
    IN_PROGRESS: {
      meta: { class: 'working' },
      description: 'The assignee works on it; it fails when it takes longer than its timeout',
      entry: { type: 'report', params: { status: 'IN_PROGRESS' } },
      after: { taskTimeout: { target: 'FAILED', actions: 'recordTimeout' } },
      on: {
        TASK_DONE: { guard: 'isThisTask', target: 'DONE', actions: 'recordDone' },
        TASK_FAILED: [
          { guard: 'canRetry', target: 'RETRYING', actions: ['recordFailure', 'countRetry'] },
          { guard: 'isThisTask', target: 'FAILED', actions: 'recordFailure' },
        ],
        BLOCKER_RAISED: { guard: 'isThisTask', target: 'BLOCKED', actions: 'raiseBlocker' },
      },
    },
    BLOCKED: {
      meta: { class: 'waiting' },
      description: 'Waiting for a blocker to be resolved; no timeout while blocked',
      entry: { type: 'report', params: { status: 'IN_PROGRESS' } },
      on: {
        BLOCKER_RESOLVED: { guard: 'isThisTask', target: 'IN_PROGRESS', actions: 'clearBlocker' },
      },
    },
    RETRYING: {
      meta: { class: 'retrying' },
      description: 'A retryable failure: waits out the backoff, then runs again',
      entry: { type: 'report', params: { status: 'IN_PROGRESS' } },
      after: { retryBackoff: { target: 'IN_PROGRESS' } },
    },
    DONE: {
      meta: { class: 'completed' },
      type: 'final',
      entry: { type: 'report', params: { status: 'DONE' } },
    },
    FAILED: {
      meta: { class: 'failed' },
      type: 'final',
      entry: { type: 'report', params: { status: 'FAILED' } },
    },
  },
  output: ({ context }) => ({ taskId: context.taskId, outcome: context.outcome }),
});
