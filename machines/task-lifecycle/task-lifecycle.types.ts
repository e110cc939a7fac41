import * as z from 'zod';
import {
  eventSchema,
  jsonValue,
  type EventFromSchemas,
  type JsonValue,
} from '../../src/strict/events.ts';

/**
 * Types of the task lifecycle of “Agent State Machine Design”: seven states, twelve events, the
 * fourteen transitions of its `TRANSITION_TABLE`.
 *
 * Naming: context fields are snake_case, as in the document's `task_checkpoints`
 * table (`task_id`, `retry_count`, `checkpoint`); event payloads, input and
 * emitted events are camelCase, as JavaScript callers write them.
 */

/** A JSON value (checkpoint data, a completion result): the one event payloads carry. */
export type { JsonValue };

/** A JSON value as accepted in event payloads (finite numbers only, no functions). */
export const jsonValueSchema: z.ZodType<JsonValue> = jsonValue;

const nonEmpty = z.string().trim().min(1).max(1_000);
/** Milliseconds since the Unix epoch. */
const epochMs = z.number().int().nonnegative();

/**
 * A checkpoint written together with the transition that carries it: the step the
 * task reached and the data needed to continue from there (the document's §6: "which step
 * the task is on, what the previous results were"). A later checkpoint replaces
 * the earlier one, so `data` holds everything the task needs, not a delta.
 */
export const checkpointSchema = z.strictObject({
  step: nonEmpty,
  data: jsonValueSchema,
});
export type Checkpoint = z.infer<typeof checkpointSchema>;

/** Optional checkpoint on every event that leaves `running`. */
const withCheckpoint = { checkpoint: checkpointSchema.optional() };

/**
 * Strict schemas of the twelve `TaskEvent`s of “Agent State Machine Design”, keyed by event
 * type.
 */
export const events = {
  /** planned → running. */
  START: eventSchema('START'),
  /** running → paused: ask a human for approval; the approval deadline starts at `requestedAt`. */
  PAUSE_FOR_APPROVAL: eventSchema('PAUSE_FOR_APPROVAL', {
    reason: nonEmpty,
    requestedAt: epochMs,
    ...withCheckpoint,
  }),
  /** paused → running. */
  APPROVAL_GRANTED: eventSchema('APPROVAL_GRANTED', {
    approver: nonEmpty,
    comment: z.string().max(10_000).optional(),
  }),
  /** paused → failed. */
  APPROVAL_DENIED: eventSchema('APPROVAL_DENIED', {
    approver: nonEmpty,
    comment: z.string().max(10_000).optional(),
  }),
  /** paused → failed when the approval wait ran out (raised by the `approvalTimeout` delay). */
  TIMEOUT: eventSchema('TIMEOUT'),
  /** running → blocked on an unavailable dependency. */
  BLOCK_ON_DEPENDENCY: eventSchema('BLOCK_ON_DEPENDENCY', {
    dependency: nonEmpty,
    ...withCheckpoint,
  }),
  /** blocked → running. */
  DEPENDENCY_RESOLVED: eventSchema('DEPENDENCY_RESOLVED'),
  /** running → retrying after a retryable error (timeout, 429, 503). */
  TRANSIENT_ERROR: eventSchema('TRANSIENT_ERROR', {
    error: nonEmpty,
    ...withCheckpoint,
  }),
  /** retrying → running, while retries remain (raised by the `retryBackoff` delay). */
  RETRY: eventSchema('RETRY'),
  /** retrying → failed, once retries are exhausted. */
  MAX_RETRIES_EXCEEDED: eventSchema('MAX_RETRIES_EXCEEDED'),
  /** running → done. */
  COMPLETE: eventSchema('COMPLETE', {
    result: jsonValueSchema.optional(),
    ...withCheckpoint,
  }),
  /** running, blocked or retrying → failed on a non-retryable error (422, 403, corrupt data). */
  FATAL_ERROR: eventSchema('FATAL_ERROR', {
    error: nonEmpty,
    ...withCheckpoint,
  }),
};

export type TaskLifecycleEvent = EventFromSchemas<typeof events>;
export type TaskLifecycleEventType = TaskLifecycleEvent['type'];

/** Default number of retries (“Agent State Machine Design” §8: `max_retries: int = 3`). */
export const DEFAULT_MAX_RETRIES = 3;
/** Default first backoff (“Agent State Machine Design” §5: `2 ** 0` = 1 s). */
export const DEFAULT_BACKOFF_BASE_MS = 1_000;
/** Default longest backoff; “Agent State Machine Design” leaves `max_wait` to configuration. */
export const DEFAULT_BACKOFF_CAP_MS = 60_000;
/** Default approval wait (“Agent State Machine Design” §4: "Initial wait: 30 minutes"). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 30 * 60 * 1_000;

/** Exponential backoff parameters. */
export const backoffSchema = z
  .strictObject({
    baseMs: z.number().int().positive().max(86_400_000),
    capMs: z.number().int().positive().max(86_400_000),
  })
  .refine((b) => b.capMs >= b.baseMs, { message: 'capMs must be >= baseMs', path: ['capMs'] });
export type BackoffOptions = z.infer<typeof backoffSchema>;

/**
 * Input of a task actor. Unset fields take the document's defaults; the jitter seed
 * defaults to the task id so that a replay computes the same backoff delays.
 */
export const inputSchema = z.strictObject({
  taskId: nonEmpty,
  maxRetries: z.number().int().nonnegative().max(1_000).default(DEFAULT_MAX_RETRIES),
  backoff: backoffSchema.default({
    baseMs: DEFAULT_BACKOFF_BASE_MS,
    capMs: DEFAULT_BACKOFF_CAP_MS,
  }),
  approvalTimeoutMs: z
    .number()
    .int()
    .min(2)
    .max(30 * 86_400_000)
    .default(DEFAULT_APPROVAL_TIMEOUT_MS),
  jitterSeed: nonEmpty.optional(),
});
/** Input as callers write it (defaults optional). */
export type TaskLifecycleInput = z.input<typeof inputSchema>;
/** Input after defaults are applied. */
export type ResolvedTaskLifecycleInput = z.output<typeof inputSchema>;

/** The error that made the task leave `running` or end in `failed`. */
export interface TaskError {
  event: 'TRANSIENT_ERROR' | 'FATAL_ERROR' | 'APPROVAL_DENIED' | 'TIMEOUT' | 'MAX_RETRIES_EXCEEDED';
  message: string;
}

/** The current or last approval request. */
export interface ApprovalRequest {
  reason: string;
  /** When approval was requested (ms since epoch, from the event). */
  requested_at: number;
  /** `requested_at + approval_timeout_ms`: after this, recovery sends TIMEOUT. */
  deadline: number;
  status: 'pending' | 'granted' | 'denied' | 'timed_out';
  approver: string | null;
  comment: string | null;
}

/** Context of a task actor; JSON-serialisable, persisted with every transition. */
export interface TaskLifecycleContext {
  task_id: string;
  /** Retries taken so far; rises on RETRY, never reset (the document reports it at `done`). */
  retry_count: number;
  max_retries: number;
  backoff: BackoffOptions;
  approval_timeout_ms: number;
  /** Seed of the deterministic backoff jitter. */
  jitter_seed: string;
  last_error: TaskError | null;
  /** Latest checkpoint, `null` until an event carries one. */
  checkpoint: Checkpoint | null;
  approval: ApprovalRequest | null;
  /** The dependency the task is or was last blocked on. */
  blocked_on: string | null;
  /** COMPLETE's result (`null` when none was given). */
  result: JsonValue | null;
}

/**
 * Emitted at half the approval wait while the task is still `paused` (“Agent State
 * Machine Design” §4: reminder at 15 of 30 min).
 */
export interface ApprovalReminder {
  type: 'APPROVAL_REMINDER';
  taskId: string;
  reason: string;
  requestedAt: number;
  deadline: number;
}

export type TaskLifecycleEmitted = ApprovalReminder;
