import { assertEvent, assign, emit, raise, setup } from 'xstate';
import { AgentchartsError } from '../../src/core/errors.ts';
import { eventMeta } from '../event-meta.ts';
import {
  events,
  inputSchema,
  type ApprovalReminder,
  type ApprovalRequest,
  type BackoffOptions,
  type Checkpoint,
  type TaskLifecycleContext,
  type TaskLifecycleEmitted,
  type TaskLifecycleEvent,
  type TaskLifecycleInput,
} from './task-lifecycle.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

/** The task input failed its schema; names the field, never the value. */
export class InvalidTaskInputError extends AgentchartsError {
  override name = 'InvalidTaskInputError';
  readonly machineId = 'task-lifecycle';
  /** Dotted path of the offending field (`backoff.capMs`), empty for the whole input. */
  readonly field: string;
  constructor(field: string, issueCode: string) {
    super(
      'INVALID_INPUT',
      `Invalid input for machine "task-lifecycle" at field "${field || '(root)'}": ${issueCode}`,
    );
    this.field = field;
  }
}

/**
 * Validates the input and builds the initial context. The context factory calls
 * it, so an actor created with bad input is in `error` status with this error.
 *
 * @example
 * initialContext({ taskId: 't1' }).max_retries; // 3
 */
export function initialContext({ input }: { input: TaskLifecycleInput }): TaskLifecycleContext {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // Only the path and the issue code: zod's messages can quote the received value.
    throw new InvalidTaskInputError(
      issue?.path.map(String).join('.') ?? '',
      issue?.code ?? 'invalid',
    );
  }
  const { taskId, maxRetries, backoff, approvalTimeoutMs, jitterSeed } = parsed.data;
  return {
    task_id: taskId,
    retry_count: 0,
    max_retries: maxRetries,
    backoff: { baseMs: backoff.baseMs, capMs: backoff.capMs },
    approval_timeout_ms: approvalTimeoutMs,
    jitter_seed: jitterSeed ?? taskId,
    last_error: null,
    checkpoint: null,
    approval: null,
    blocked_on: null,
    result: null,
  };
}

/** The largest backoff of an attempt: `min(capMs, baseMs · 2^attempt)`. */
export function retryCeiling(attempt: number, { baseMs, capMs }: BackoffOptions): number {
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new RangeError(`retry attempt must be a non-negative integer, got ${attempt}`);
  }
  // 2^attempt overflows to Infinity for large attempts; min() then yields the cap.
  return Math.min(capMs, baseMs * 2 ** attempt);
}

/** 32-bit FNV-1a of a string followed by murmur3's finaliser, as a fraction in [0, 1). */
function unitHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 0x1_0000_0000;
}

/**
 * Backoff before retry `attempt` (0-based: the number of retries already taken):
 * exponential with a cap and "full jitter", `uniform(0, min(cap, base · 2^attempt))`
 * in whole milliseconds, bounds included. The jitter is a hash of `seed` and
 * `attempt`, not `Math.random()`, so replaying a task's events yields the same delays.
 *
 * @example
 * retryDelay(2, { baseMs: 1000, capMs: 60000, seed: 'task-1' }); // some value in 0..4000
 */
export function retryDelay(
  attempt: number,
  { baseMs, capMs, seed }: BackoffOptions & { seed: string },
): number {
  const ceiling = retryCeiling(attempt, { baseMs, capMs });
  return Math.min(ceiling, Math.floor(unitHash(`${seed}:${attempt}`) * (ceiling + 1)));
}

/** Keeps the checkpoint an event carries; events without one leave the last in place. */
function checkpointFrom(
  context: TaskLifecycleContext,
  event: TaskLifecycleEvent,
): Checkpoint | null {
  return 'checkpoint' in event && event.checkpoint !== undefined
    ? event.checkpoint
    : context.checkpoint;
}

/** The pending approval once a person decided it (APPROVAL_GRANTED or APPROVAL_DENIED). */
function decided(
  approval: ApprovalRequest | null,
  status: 'granted' | 'denied',
  decision: { approver: string; comment?: string | undefined },
): ApprovalRequest | null {
  return approval
    ? { ...approval, status, approver: decision.approver, comment: decision.comment ?? null }
    : null;
}

/**
 * FATAL_ERROR, from every state where work is under way (running, blocked, retrying):
 * the task fails, keeping the checkpoint the event carries and the error.
 */
const failFatally = { target: 'failed', actions: ['recordCheckpoint', 'recordError'] } as const;

export const machine = setup({
  types: {
    ...metaTypes,
    context: {} as TaskLifecycleContext,
    events: {} as TaskLifecycleEvent,
    input: {} as TaskLifecycleInput,
    emitted: {} as TaskLifecycleEmitted,
  },
  schemas: { events, input: inputSchema },
  actions: {
    recordCheckpoint: assign({
      checkpoint: ({ context, event }) => checkpointFrom(context, event),
    }),
    requestApproval: assign({
      approval: ({ context, event }) => {
        assertEvent(event, 'PAUSE_FOR_APPROVAL');
        return {
          reason: event.reason,
          requested_at: event.requestedAt,
          deadline: event.requestedAt + context.approval_timeout_ms,
          status: 'pending' as const,
          approver: null,
          comment: null,
        };
      },
    }),
    grantApproval: assign({
      approval: ({ context, event }) => {
        assertEvent(event, 'APPROVAL_GRANTED');
        return decided(context.approval, 'granted', event);
      },
    }),
    denyApproval: assign({
      approval: ({ context, event }) => {
        assertEvent(event, 'APPROVAL_DENIED');
        return decided(context.approval, 'denied', event);
      },
      last_error: ({ event }) => {
        assertEvent(event, 'APPROVAL_DENIED');
        return {
          event: 'APPROVAL_DENIED' as const,
          message: `approval denied by ${event.approver}`,
        };
      },
    }),
    timeOutApproval: assign({
      approval: ({ context }) =>
        context.approval ? { ...context.approval, status: 'timed_out' as const } : null,
      last_error: () => ({ event: 'TIMEOUT' as const, message: 'approval_timeout' }),
    }),
    recordBlock: assign({
      blocked_on: ({ event }) => {
        assertEvent(event, 'BLOCK_ON_DEPENDENCY');
        return event.dependency;
      },
    }),
    recordResult: assign({
      result: ({ event }) => {
        assertEvent(event, 'COMPLETE');
        return event.result ?? null;
      },
    }),
    recordError: assign({
      last_error: ({ event }) => {
        assertEvent(event, ['TRANSIENT_ERROR', 'FATAL_ERROR']);
        return { event: event.type, message: event.error };
      },
    }),
    countRetry: assign({
      retry_count: ({ context }) => context.retry_count + 1,
    }),
    recordRetriesExhausted: assign({
      last_error: ({ context }) => ({
        event: 'MAX_RETRIES_EXCEEDED' as const,
        message: `retries exhausted (${context.retry_count}/${context.max_retries})`,
      }),
    }),
    raiseRetry: raise({ type: 'RETRY' }),
    raiseMaxRetriesExceeded: raise({ type: 'MAX_RETRIES_EXCEEDED' }),
    raiseTimeout: raise({ type: 'TIMEOUT' }),
    emitApprovalReminder: emit(({ context }): ApprovalReminder => {
      const approval = context.approval;
      return {
        type: 'APPROVAL_REMINDER',
        taskId: context.task_id,
        reason: approval?.reason ?? '',
        requestedAt: approval?.requested_at ?? 0,
        deadline: approval?.deadline ?? 0,
      };
    }),
  },
  guards: {
    canRetry: ({ context }) => context.retry_count < context.max_retries,
    retriesExhausted: ({ context }) => context.retry_count >= context.max_retries,
  },
  delays: {
    // Exhausted retries fail at once: waiting out a backoff that no retry follows helps nobody.
    retryBackoff: ({ context }) =>
      context.retry_count < context.max_retries
        ? retryDelay(context.retry_count, { ...context.backoff, seed: context.jitter_seed })
        : 0,
    approvalTimeout: ({ context }) => context.approval_timeout_ms,
    approvalReminder: ({ context }) => Math.floor(context.approval_timeout_ms / 2),
  },
}).createMachine({
  id: 'task-lifecycle',
  description:
    '“Agent State Machine Design”: the lifecycle of one agent task (planned, running, paused, blocked, retrying, done, failed).',
  initial: 'planned',
  context: initialContext,
  meta: {
    display: { task: 'task_id' },
    events: eventMeta({
      START: 'Preconditions hold: begin the first attempt.',
      PAUSE_FOR_APPROVAL: 'Stop before a risky step and ask a person.',
      BLOCK_ON_DEPENDENCY: 'A dependency is unavailable; wait for it.',
      COMPLETE: 'The task is done; `result` is kept.',
      FATAL_ERROR: 'An error no retry can fix: the task fails.',
      TRANSIENT_ERROR: 'An error a retry may fix: back off and retry.',
      DEPENDENCY_RESOLVED: 'The dependency is back: resume running.',
      APPROVAL_GRANTED: {
        kind: 'approval',
        signer: 'approver',
        description: 'A person approved the paused step: resume running.',
      },
      APPROVAL_DENIED: {
        kind: 'approval',
        signer: 'approver',
        description: 'A person refused the paused step: the task fails.',
      },
      RETRY: { kind: 'timer-only', description: 'The backoff ran out and retries remain.' },
      MAX_RETRIES_EXCEEDED: {
        kind: 'timer-only',
        description: 'The backoff ran out and no retry remains: the task fails.',
      },
      TIMEOUT: { kind: 'timer-only', description: 'Nobody decided before the approval deadline.' },
    }),
    // “Agent State Machine Design” names the events its timers send; the trail and
    // metrics use these names.
    delays: {
      retryBackoff: 'RETRY',
      approvalTimeout: 'TIMEOUT',
      approvalReminder: 'APPROVAL_REMINDER',
    },
  },
  states: {
    planned: {
      meta: { class: 'idle' },
      description: 'Created; preconditions not yet validated. No side effects.',
      on: { START: { target: 'running' } },
    },
    running: {
      meta: { class: 'working' },
      description: 'The agent executes steps; only structured events change the state.',
      on: {
        PAUSE_FOR_APPROVAL: { target: 'paused', actions: ['recordCheckpoint', 'requestApproval'] },
        BLOCK_ON_DEPENDENCY: { target: 'blocked', actions: ['recordCheckpoint', 'recordBlock'] },
        COMPLETE: { target: 'done', actions: ['recordCheckpoint', 'recordResult'] },
        FATAL_ERROR: failFatally,
        TRANSIENT_ERROR: { target: 'retrying', actions: ['recordCheckpoint', 'recordError'] },
      },
    },
    paused: {
      meta: { class: 'paused' },
      description:
        'Waiting for a human decision; reminds at half the approval wait, fails when it runs out.',
      after: {
        // Targetless: emits the reminder without leaving (or re-entering) `paused`.
        approvalReminder: { actions: 'emitApprovalReminder' },
        approvalTimeout: { actions: 'raiseTimeout' },
      },
      on: {
        APPROVAL_GRANTED: { target: 'running', actions: 'grantApproval' },
        APPROVAL_DENIED: { target: 'failed', actions: 'denyApproval' },
        TIMEOUT: { target: 'failed', actions: 'timeOutApproval' },
      },
    },
    blocked: {
      meta: { class: 'waiting' },
      description: 'A dependency is unavailable; no automatic timeout (alerting watches it).',
      on: {
        DEPENDENCY_RESOLVED: { target: 'running' },
        FATAL_ERROR: failFatally,
      },
    },
    retrying: {
      meta: { class: 'retrying' },
      description:
        'The last attempt failed transiently; after the backoff, RETRY if retries remain, else MAX_RETRIES_EXCEEDED.',
      after: {
        retryBackoff: [
          { guard: 'canRetry', actions: 'raiseRetry', meta: { event: 'RETRY' } },
          { actions: 'raiseMaxRetriesExceeded', meta: { event: 'MAX_RETRIES_EXCEEDED' } },
        ],
      },
      on: {
        RETRY: { guard: 'canRetry', target: 'running', actions: 'countRetry' },
        MAX_RETRIES_EXCEEDED: {
          guard: 'retriesExhausted',
          target: 'failed',
          actions: 'recordRetriesExhausted',
        },
        FATAL_ERROR: failFatally,
      },
    },
    done: { type: 'final', meta: { class: 'completed' }, description: 'Terminal: completed.' },
    failed: {
      type: 'final',
      meta: { class: 'failed' },
      description: 'Terminal: checkpoint and error stay in context.',
    },
  },
});
