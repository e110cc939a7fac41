/**
 * The status vocabulary of “Agent Status Models”: its 8 statuses
 * and the events named after its stream messages. A chart adopts it by using
 * these schemas; observers (the NDJSON stream) read events in it whatever the
 * chart, so it lives below both.
 */
import * as z from 'zod';
import { eventSchema, jsonValue, type EventFromSchemas } from './events.ts';

/** The 8 statuses of “Agent Status Models”, spelled as its lowercase JSON representation. */
export const AGENT_STATUSES = [
  'idle',
  'initializing',
  'running',
  'thinking',
  'paused',
  'completed',
  'failed',
  'terminated',
] as const;
export const agentStatusSchema = z.enum(AGENT_STATUSES);
export type AgentStatus = z.infer<typeof agentStatusSchema>;

/** Statuses with no outgoing transitions (XState final states). */
export const TERMINAL_STATUSES = ['completed', 'failed', 'terminated'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/**
 * When something happened: an ISO 8601 date-time (any offset) or epoch
 * milliseconds. The machine stores it normalised to UTC ISO, so replaying the
 * same events yields the same context.
 */
export const timestampSchema = z.union([
  z.iso.datetime({ offset: true }),
  z.number().int().min(0).max(8_640_000_000_000_000),
]);
export type Timestamp = z.infer<typeof timestampSchema>;

/** A short name (1–200 characters). */
export const label = z.string().min(1).max(200);
/** Free text (1–16,000 characters). */
export const text = z.string().min(1).max(16_000);

/** “Agent Status Models” §4 AgentError, minus the timestamp (taken from the event's `at`). */
export const agentErrorSchema = z.strictObject({
  code: label,
  message: text,
  details: z.string().max(32_000).optional(),
  recoverable: z.boolean(),
});
export type AgentErrorInput = z.infer<typeof agentErrorSchema>;

/**
 * Events, named after the stream messages of “Agent Status Models” (`status_update`,
 * `thought_update`, `progress_update`, `error`, `output`) in UPPER_SNAKE.
 */
export const events = {
  /** `transition_to(status, reason)`: the only event that changes the status. */
  STATUS_UPDATE: eventSchema('STATUS_UPDATE', {
    status: agentStatusSchema,
    reason: text.optional(),
    at: timestampSchema,
    /** The error that made the agent fail; only with `status: 'failed'`. */
    error: agentErrorSchema.optional(),
  }).refine((e) => e.error === undefined || e.status === 'failed', {
    path: ['error'],
    message: 'an error may only accompany status failed',
  }),
  /** `update_thought`: what the agent is thinking; only while thinking. */
  THOUGHT_UPDATE: eventSchema('THOUGHT_UPDATE', { thought: text, at: timestampSchema }),
  /**
   * `update_progress`: either a percentage (0–100) or steps (current of total,
   * the percentage then computed), never both.
   */
  PROGRESS_UPDATE: eventSchema('PROGRESS_UPDATE', {
    percentage: z.number().min(0).max(100).optional(),
    currentStep: z.number().int().min(0).optional(),
    totalSteps: z.number().int().min(1).optional(),
    message: text.optional(),
    details: z.record(z.string(), jsonValue).optional(),
    at: timestampSchema,
  })
    .refine((e) => (e.currentStep === undefined) === (e.totalSteps === undefined), {
      path: ['totalSteps'],
      message: 'currentStep and totalSteps come together',
    })
    .refine((e) => (e.percentage === undefined) !== (e.totalSteps === undefined), {
      path: ['percentage'],
      message: 'give either a percentage or steps',
    })
    .refine((e) => (e.currentStep ?? 0) <= (e.totalSteps ?? 0), {
      path: ['currentStep'],
      message: 'currentStep cannot exceed totalSteps',
    }),
  /** `set_error`: records a structured error without changing the status. */
  ERROR: eventSchema('ERROR', { error: agentErrorSchema, at: timestampSchema }),
  /** A line the agent wrote to stdout or stderr. */
  OUTPUT: eventSchema('OUTPUT', {
    stream: z.enum(['stdout', 'stderr']),
    content: z.string().max(32_000),
    at: timestampSchema,
  }),
};

export type AgentStatusEvent = EventFromSchemas<typeof events>;
