import * as z from 'zod';
import { eventSchema, jsonValue, type EventFromSchemas } from '../../src/strict/events.ts';

/**
 * The states an agent can be paused from and resumed to: the document's "active" states
 * (its status route lists exactly these as active). In the chart they are the
 * children of the compound state `active`.
 */
export const ACTIVE_STATES = [
  'initializing',
  'planning',
  'executing',
  'evaluating',
  'adapting',
  'waiting_input',
  'waiting_agent',
] as const;

export type ActiveState = (typeof ACTIVE_STATES)[number];

/** The twelve agent states of “Agent State Machine” (v1.0), its `AgentState`. */
export const AGENT_STATES = [
  'idle',
  ...ACTIVE_STATES,
  'succeeded',
  'failed',
  'paused',
  'cancelled',
] as const;

export type AgentState = (typeof AGENT_STATES)[number];

/** States the document marks "Terminal": they leave only through `CLEANUP` to `idle`. */
export const TERMINAL_STATES = ['succeeded', 'failed', 'cancelled'] as const;

export type TerminalState = (typeof TERMINAL_STATES)[number];

/** States the document's `isBlocked()` reports: waiting on something outside the agent. */
export const BLOCKED_STATES = ['waiting_input', 'waiting_agent', 'paused'] as const;

// Ids are bounded like the document's `varchar` columns; free text is bounded so that a
// single event stays far below the strict validator's size cap.
const id = z.string().min(1).max(255);
const text = z.string().min(1).max(4000);
/** Evaluation confidence; the document's integration compares it with 0.85. */
const confidence = z.number().min(0).max(1);

/**
 * Event schemas, keyed by event type. Every event has the shape of “Agent State
 * Machine” (v1.0), `{ type, payload: {...} }`; payloads are strict (extra keys
 * rejected).
 */
export const events = {
  START: eventSchema('START', {
    // The document's `agent_states.task_id` column is varchar(100).
    payload: z.strictObject({
      task_id: z.string().min(1).max(100),
      /** The document's `StateMetadata.extra`: anything the caller wants kept with the task. */
      extra: z.record(z.string().max(200), jsonValue).optional(),
    }),
  }),
  INIT_COMPLETE: eventSchema('INIT_COMPLETE', {
    payload: z.strictObject({ context_loaded: z.boolean() }),
  }),
  PLAN_COMPLETE: eventSchema('PLAN_COMPLETE', {
    payload: z.strictObject({ plan_id: id, steps: z.int().min(0) }),
  }),
  STEP_COMPLETE: eventSchema('STEP_COMPLETE', {
    payload: z.strictObject({ step_id: id, output: jsonValue }),
  }),
  STEP_FAILED: eventSchema('STEP_FAILED', {
    payload: z.strictObject({ step_id: id, error: text }),
  }),
  EVALUATION_PASS: eventSchema('EVALUATION_PASS', {
    payload: z.strictObject({ confidence }),
  }),
  EVALUATION_FAIL: eventSchema('EVALUATION_FAIL', {
    payload: z.strictObject({ confidence, reason: text }),
  }),
  ADAPTATION_COMPLETE: eventSchema('ADAPTATION_COMPLETE', {
    payload: z.strictObject({ new_plan_id: id }),
  }),
  INPUT_RECEIVED: eventSchema('INPUT_RECEIVED', {
    payload: z.strictObject({ input_type: id, data: jsonValue }),
  }),
  AGENT_COMPLETE: eventSchema('AGENT_COMPLETE', {
    payload: z.strictObject({ agent_id: id, output: jsonValue }),
  }),
  TIMEOUT: eventSchema('TIMEOUT', {
    payload: z.strictObject({ duration_ms: z.int().min(0) }),
  }),
  MAX_ITERATIONS: eventSchema('MAX_ITERATIONS', {
    payload: z.strictObject({ iterations: z.int().min(0) }),
  }),
  PAUSE: eventSchema('PAUSE', {
    payload: z.strictObject({ reason: text }),
  }),
  RESUME: eventSchema('RESUME', {
    payload: z.strictObject({}),
  }),
  CANCEL: eventSchema('CANCEL', {
    payload: z.strictObject({ reason: text }),
  }),
  // Named here: the document allows these pairs but names no event for them (see README).
  /** executing → waiting_input. */
  WAIT_FOR_INPUT: eventSchema('WAIT_FOR_INPUT', {
    payload: z.strictObject({ waiting_for: text }),
  }),
  /** executing → waiting_agent. */
  WAIT_FOR_AGENT: eventSchema('WAIT_FOR_AGENT', {
    payload: z.strictObject({ agent_id: id }),
  }),
  /** evaluating → executing: the output is acceptable and the plan has more steps. */
  NEXT_STEP: eventSchema('NEXT_STEP', {
    payload: z.strictObject({ confidence }),
  }),
  /** succeeded | failed | cancelled → idle: the document's "after cleanup". */
  CLEANUP: eventSchema('CLEANUP', {
    payload: z.strictObject({}),
  }),
};

export type AgentLifecycleEvent = EventFromSchemas<typeof events>;

export type AgentLifecycleEventType = AgentLifecycleEvent['type'];

/**
 * Input of the chart: the `AgentStateConfig` of “Agent State Machine” (v1.0), without
 * its persistence switch.
 */
export const inputSchema = z.strictObject({
  agent_name: id,
  user_id: id.optional(),
});

export type AgentLifecycleInput = z.infer<typeof inputSchema>;

/**
 * The chart's context: the `StateMetadata` of “Agent State Machine” (v1.0) (same
 * field names) plus the agent's identity from input. Absent values are `null` rather
 * than missing keys so that a snapshot survives a JSON round trip unchanged.
 */
export interface AgentLifecycleContext {
  agent_name: string;
  user_id: string | null;
  task_id: string | null;
  plan_id: string | null;
  current_step_id: string | null;
  /** Number of adapt → execute loops of the current task (0 after `START`). */
  iteration: number;
  confidence: number | null;
  error: string | null;
  waiting_for: string | null;
  /** The state `PAUSE` was taken from; set only while `paused`. */
  paused_from_state: ActiveState | null;
  /** The document's `StateMetadata.extra`, from `START`. */
  extra: Record<string, z.core.util.JSONType> | null;
  /**
   * The state the agent is in (the document's `current_state`), kept so that a state
   * change can name the state it came from (`AGENT_STATE_CHANGED.from_state`).
   * Absent in snapshots written before it existed.
   */
  current_state?: AgentState;
}

/**
 * Emitted when the agent enters one of the "significant" states of “Agent State Machine” (v1.0)
 * (`emitStateChange`): the runtime publishes it to the message bus after commit.
 */
export interface AgentStateChangedEvent {
  type: 'AGENT_STATE_CHANGED';
  agent_name: string;
  user_id: string | null;
  task_id: string | null;
  /** The state left (null when unknown: a snapshot written before it was kept). */
  from_state: AgentState | null;
  to_state: 'succeeded' | 'failed' | 'waiting_input' | 'waiting_agent';
  trigger_event: string;
}

export type AgentLifecycleEmitted = AgentStateChangedEvent;

/** Tags on state nodes, readable as `snapshot.hasTag('terminal')`. */
export type AgentLifecycleTag = 'active' | 'blocked' | 'terminal';
