import * as z from 'zod';
import { eventSchema, jsonValue, type EventFromSchemas } from '../../src/strict/events.ts';

/** A short, non-empty identifier or label (ids, tool names, error codes). */
const label = z.string().min(1).max(200);
/** Free text a human or a model wrote (messages, reasons, results). */
const text = z.string().min(1).max(16_000);

/** One tool call the brain asked for. */
export const toolCallSchema = z.strictObject({
  id: label,
  name: label,
  args: z.record(z.string(), jsonValue).optional(),
});
export type ToolCall = z.infer<typeof toolCallSchema>;

/** The outcome of one tool call, as reported by the tool executor. */
export const toolResultSchema = z.strictObject({
  toolCallId: label,
  ok: z.boolean(),
  summary: text.optional(),
});
export type ToolResult = z.infer<typeof toolResultSchema>;

/**
 * Events of “Agent State Machine” (runtime loop), with the document's own PascalCase names.
 * `StartTools`, `UserInput`, `TaskCompleted`, `TaskFailed` and `ProcessingInterrupted`
 * name transitions the document draws without naming an event (see README, Decisions).
 */
export const events = {
  /** Initialisation finished. `waitForInput` asks to start Paused (only with a controller). */
  AgentInitialized: eventSchema('AgentInitialized', {
    waitForInput: z.boolean().optional(),
  }),
  /** Run the next brain step (the document's `spawn_next_step`). */
  StartThinking: eventSchema('StartThinking'),
  /** The brain's decision. `continue` may carry tool calls; `pause` yields to the user. */
  BrainResult: eventSchema('BrainResult', {
    decision: z.enum(['continue', 'pause']),
    message: text.optional(),
    toolCalls: z.array(toolCallSchema).min(1).max(64).optional(),
  }).refine((e) => e.decision === 'continue' || e.toolCalls === undefined, {
    path: ['toolCalls'],
    message: 'only a continue decision may request tool calls',
  }),
  /** Run the tool calls the last brain step requested (the document's `spawn_tools`). */
  StartTools: eventSchema('StartTools'),
  /** Every requested tool call finished. */
  ToolsCompleted: eventSchema('ToolsCompleted', {
    results: z.array(toolResultSchema).min(1).max(64),
  }),
  /** The user answered while the agent was paused (the document's "user input"). */
  UserInput: eventSchema('UserInput', { message: text }),
  /** The user (or an operator) cancels the current operation. */
  CancelTask: eventSchema('CancelTask', { reason: text.optional() }),
  /** The executor reports that the in-flight brain or tool call was cancelled. */
  TaskCancelled: eventSchema('TaskCancelled', { reason: text.optional() }),
  /** The user accepts the result while paused (the document's "completion"). */
  TaskCompleted: eventSchema('TaskCompleted', { result: text.optional() }),
  /** An unrecoverable error (the document's "error"). */
  TaskFailed: eventSchema('TaskFailed', { code: label, message: text }),
  /** The in-flight brain or tool call was lost (process crash); recovery sends this. */
  ProcessingInterrupted: eventSchema('ProcessingInterrupted', { reason: text }),
};

export type AgentRuntimeEvent = EventFromSchemas<typeof events>;

/** Input of one agent run. */
export const inputSchema = z.strictObject({
  agentId: label,
  /** Whether a controller (a user) is attached; without one, Paused is skipped. */
  hasController: z.boolean(),
  /** How many lost Processing steps are re-planned before the run fails. Default 3. */
  maxInterruptions: z.number().int().min(0).max(100).optional(),
});
export type AgentRuntimeInput = z.infer<typeof inputSchema>;

/** Structured error of a failed run. */
export interface RuntimeError {
  code: string;
  message: string;
}

export interface AgentRuntimeContext {
  agentId: string;
  hasController: boolean;
  maxInterruptions: number;
  /** Brain steps started so far. */
  steps: number;
  /** Tool calls requested by the last `continue` decision and not yet run. */
  pendingToolCalls: ToolCall[];
  /** Results of the last tool run. */
  lastToolResults: ToolResult[];
  /** The last message from the brain (on pause) or the user (on input). */
  lastMessage: string | null;
  /**
   * Processing steps lost to interruptions since the last completed step (a brain
   * result without tool calls, or finished tools).
   */
  interruptions: number;
  result: string | null;
  error: RuntimeError | null;
  cancelReason: string | null;
}

/** Effects the runtime performs after a committed transition. */
export type AgentRuntimeEmitted =
  | { type: 'spawn_next_step'; agentId: string; step: number }
  | { type: 'spawn_tools'; agentId: string; toolCalls: ToolCall[] }
  | { type: 'cancel_processing'; agentId: string; reason: string | null };

/** `snapshot.output` once a terminal state is reached. */
export interface AgentRuntimeOutput {
  agentId: string;
  status: 'completed' | 'failed' | 'cancelled';
  steps: number;
  result: string | null;
  error: RuntimeError | null;
  cancelReason: string | null;
}

/** The static output each terminal state declares (read by the machine's output mapper). */
export interface TerminalStateOutput {
  status: AgentRuntimeOutput['status'];
}
