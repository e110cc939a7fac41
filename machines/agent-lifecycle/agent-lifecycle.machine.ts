import { assertEvent, assign, emit, setup } from 'xstate';
import { eventMeta } from '../event-meta.ts';
import type { StateClass } from '../../src/core/meta.ts';
import {
  events,
  inputSchema,
  type ActiveState,
  type AgentLifecycleContext,
  type AgentLifecycleEmitted,
  type AgentLifecycleEvent,
  type AgentLifecycleInput,
  type AgentLifecycleTag,
  type AgentState,
  type AgentStateChangedEvent,
} from './agent-lifecycle.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

/** Metadata of a task, cleared on `START` and `CLEANUP` so nothing leaks between tasks. */
const EMPTY_TASK = {
  task_id: null,
  plan_id: null,
  current_step_id: null,
  iteration: 0,
  confidence: null,
  error: null,
  waiting_for: null,
  paused_from_state: null,
  extra: null,
} as const satisfies Omit<AgentLifecycleContext, 'agent_name' | 'user_id' | 'current_state'>;

/** Each event's payload, by type: every event of the document is `{ type, payload }`. */
type Payloads = { [E in AgentLifecycleEvent as E['type']]: E['payload'] };

/** The payload of `event`, which is asserted to be of `type` (or of one of `type`). */
function payloadOf<const T extends AgentLifecycleEvent['type']>(
  event: AgentLifecycleEvent,
  type: T | T[],
): Payloads[T] {
  assertEvent(event, type);
  // Checked above; TypeScript does not narrow the union by a generic type.
  return (event as unknown as { payload: Payloads[T] }).payload;
}

/** What a state's `meta` says to a monitor (src/core/meta.ts). */
interface StateMeta {
  class: StateClass;
  color: string;
}

/** Entry of every state: records it as `current_state`. */
function enter<const S extends AgentState>(state: S) {
  return { type: 'enterState', params: { state } } as const;
}

/** Entry of the states the document announces: AGENT_STATE_CHANGED, then {@link enter}. */
function announce<const S extends AgentStateChangedEvent['to_state']>(state: S) {
  return [{ type: 'announceStateChange', params: { state } }, enter(state)] as const;
}

/**
 * A child of `active` with its own transitions `on`: entering it records it, and
 * PAUSE from it goes to `paused`, remembering it (`paused_from_state`) for RESUME.
 */
function activeState<
  const S extends ActiveState,
  const M extends StateMeta,
  const On extends object,
>(state: S, meta: M, on: On) {
  const pause = {
    target: '#agent-lifecycle.paused',
    actions: { type: 'rememberPausedFrom', params: { state } },
  } as const;
  return {
    meta,
    entry: enter(state),
    // One object type, as the transitions written inline would have.
    on: { ...on, PAUSE: pause } as {
      [K in keyof On | 'PAUSE']: K extends 'PAUSE' ? typeof pause : On[K & keyof On];
    },
  } as const;
}

/** An active state that does the work (class `working`), drawn in `color`. */
function working<const S extends ActiveState, const C extends string, const On extends object>(
  state: S,
  color: C,
  on: On,
) {
  return activeState(state, { class: 'working', color }, on);
}

/**
 * An active state that waits on a person or another agent (class `waiting`, tag
 * `blocked`), drawn in `color`; its entry is announced.
 */
function waiting<
  const S extends ActiveState & AgentStateChangedEvent['to_state'],
  const C extends string,
  const On extends object,
>(state: S, color: C, on: On) {
  const config = activeState(state, { class: 'waiting', color }, on);
  return { ...config, tags: 'blocked', entry: announce(state) } as const;
}

/** Where a task ends (tag `terminal`): CLEANUP resets the task and returns to idle. */
function finishedState<const M extends StateMeta, const Entry>(meta: M, entry: Entry) {
  return {
    meta,
    tags: 'terminal',
    entry,
    on: { CLEANUP: { target: 'idle', actions: 'resetTask' } },
  } as const;
}

/**
 * “Agent State Machine” (v1.0) as a statechart. The seven active states live in
 * the compound state `active` so that the transitions the document allows "from any
 * active state" (`STEP_FAILED`, `TIMEOUT`, `MAX_ITERATIONS`, `CANCEL`) are declared
 * once, and so that `RESUME` can return through a history state to the exact
 * state `PAUSE` was taken from. State labels are therefore `active.executing`; the
 * document's state name is the last segment (see `agentState()`).
 */
export const machine = setup({
  types: {
    ...metaTypes,
    context: {} as AgentLifecycleContext,
    events: {} as AgentLifecycleEvent,
    input: {} as AgentLifecycleInput,
    emitted: {} as AgentLifecycleEmitted,
    tags: {} as AgentLifecycleTag,
  },
  schemas: { events, input: inputSchema },
  actions: {
    startTask: assign(({ event }) => {
      const { task_id, extra } = payloadOf(event, 'START');
      return { ...EMPTY_TASK, task_id, extra: extra ?? null };
    }),
    recordPlan: assign(({ event }) => ({ plan_id: payloadOf(event, 'PLAN_COMPLETE').plan_id })),
    recordStep: assign(({ event }) => ({
      current_step_id: payloadOf(event, 'STEP_COMPLETE').step_id,
    })),
    recordStepError: assign(({ event }) => ({ error: payloadOf(event, 'STEP_FAILED').error })),
    // The document leaves `error` unset for these two; `failed` would then read
    // "unknown error", so the cause is recorded from the payload.
    recordTimeout: assign(({ event }) => ({
      error: `timeout after ${payloadOf(event, 'TIMEOUT').duration_ms} ms`,
    })),
    recordMaxIterations: assign(({ event }) => ({
      error: `max iterations reached (${payloadOf(event, 'MAX_ITERATIONS').iterations})`,
    })),
    recordConfidence: assign(({ event }) => ({
      confidence: payloadOf(event, ['EVALUATION_PASS', 'EVALUATION_FAIL', 'NEXT_STEP']).confidence,
    })),
    // One adapt → execute loop: the new plan replaces the old one.
    recordAdaptation: assign(({ context, event }) => ({
      plan_id: payloadOf(event, 'ADAPTATION_COMPLETE').new_plan_id,
      iteration: context.iteration + 1,
    })),
    recordWaitingForInput: assign(({ event }) => ({
      waiting_for: payloadOf(event, 'WAIT_FOR_INPUT').waiting_for,
    })),
    recordWaitingForAgent: assign(({ event }) => ({
      waiting_for: payloadOf(event, 'WAIT_FOR_AGENT').agent_id,
    })),
    clearWaitingFor: assign({ waiting_for: null }),
    rememberPausedFrom: assign((_, params: { state: ActiveState }) => ({
      paused_from_state: params.state,
    })),
    clearPausedFrom: assign({ paused_from_state: null }),
    enterState: assign((_, params: { state: AgentState }) => ({ current_state: params.state })),
    resetTask: assign(EMPTY_TASK),
    announceStateChange: emit(
      ({ context, event }, params: { state: AgentStateChangedEvent['to_state'] }) => ({
        type: 'AGENT_STATE_CHANGED' as const,
        agent_name: context.agent_name,
        user_id: context.user_id,
        task_id: context.task_id,
        // Entry actions run in order: this one before `enterState` records the new state.
        from_state: context.current_state ?? null,
        to_state: params.state,
        trigger_event: event.type,
      }),
    ),
  },
}).createMachine({
  id: 'agent-lifecycle',
  initial: 'idle',
  context: ({ input }) => ({
    agent_name: input.agent_name,
    user_id: input.user_id ?? null,
    ...EMPTY_TASK,
    current_state: 'idle',
  }),
  meta: {
    display: { name: 'agent_name', task: 'task_id' },
    events: eventMeta({
      START: 'Give the idle agent a task: it starts initializing.',
      INIT_COMPLETE: 'Initialized: start planning.',
      PLAN_COMPLETE: 'A plan exists: start executing it.',
      STEP_COMPLETE: 'A step finished: evaluate it.',
      WAIT_FOR_INPUT: 'The next step needs input from a person.',
      WAIT_FOR_AGENT: 'The next step needs another agent.',
      INPUT_RECEIVED: 'The awaited input arrived: resume executing.',
      AGENT_COMPLETE: 'The awaited agent finished: resume executing.',
      EVALUATION_PASS: 'The result is good: the task succeeded.',
      EVALUATION_FAIL: 'The result is not good enough: adapt the plan.',
      NEXT_STEP: 'Evaluated: execute the next step.',
      ADAPTATION_COMPLETE: 'The plan is adapted: execute again.',
      STEP_FAILED: 'A step failed: the task fails.',
      TIMEOUT: 'The task ran out of time: it fails.',
      MAX_ITERATIONS: 'Too many iterations: the task fails.',
      PAUSE: { roles: ['agent', 'operator'], description: 'Pause the agent where it is.' },
      RESUME: {
        roles: ['agent', 'operator'],
        description: 'Resume the paused agent where it left off.',
      },
      CANCEL: { roles: ['agent', 'operator'], description: 'Cancel the task.' },
      CLEANUP: 'After a finished task: back to idle for the next one.',
    }),
  },
  states: {
    idle: {
      meta: { class: 'idle', color: '#6b7280' },
      entry: enter('idle'),
      on: { START: { target: 'active', actions: 'startTask' } },
    },
    active: {
      tags: 'active',
      initial: 'initializing',
      on: {
        STEP_FAILED: { target: 'failed', actions: 'recordStepError' },
        TIMEOUT: { target: 'failed', actions: 'recordTimeout' },
        MAX_ITERATIONS: { target: 'failed', actions: 'recordMaxIterations' },
        CANCEL: { target: 'cancelled' },
      },
      states: {
        // Where RESUME returns: the child of `active` that was left for `paused`.
        history: { type: 'history', history: 'deep' },
        initializing: working('initializing', '#3b82f6', { INIT_COMPLETE: { target: 'planning' } }),
        planning: working('planning', '#a855f7', {
          PLAN_COMPLETE: { target: 'executing', actions: 'recordPlan' },
        }),
        executing: working('executing', '#eab308', {
          STEP_COMPLETE: { target: 'evaluating', actions: 'recordStep' },
          WAIT_FOR_INPUT: { target: 'waiting_input', actions: 'recordWaitingForInput' },
          WAIT_FOR_AGENT: { target: 'waiting_agent', actions: 'recordWaitingForAgent' },
        }),
        evaluating: working('evaluating', '#f97316', {
          EVALUATION_PASS: { target: '#agent-lifecycle.succeeded', actions: 'recordConfidence' },
          EVALUATION_FAIL: { target: 'adapting', actions: 'recordConfidence' },
          NEXT_STEP: { target: 'executing', actions: 'recordConfidence' },
        }),
        adapting: working('adapting', '#ec4899', {
          ADAPTATION_COMPLETE: { target: 'executing', actions: 'recordAdaptation' },
        }),
        waiting_input: waiting('waiting_input', '#06b6d4', {
          INPUT_RECEIVED: { target: 'executing', actions: 'clearWaitingFor' },
        }),
        waiting_agent: waiting('waiting_agent', '#6366f1', {
          AGENT_COMPLETE: { target: 'executing', actions: 'clearWaitingFor' },
        }),
      },
    },
    paused: {
      meta: { class: 'paused', color: '#9ca3af' },
      entry: enter('paused'),
      tags: 'blocked',
      // Cleared on every way out (RESUME and CANCEL): it is set only while paused.
      exit: 'clearPausedFrom',
      on: {
        RESUME: { target: '#agent-lifecycle.active.history' },
        CANCEL: { target: 'cancelled' },
      },
    },
    // Terminal for the runtime but not XState `final`: the document returns them to idle
    // after cleanup, so the actor stays alive for the next task.
    succeeded: finishedState({ class: 'completed', color: '#22c55e' }, announce('succeeded')),
    failed: finishedState({ class: 'failed', color: '#ef4444' }, announce('failed')),
    cancelled: finishedState({ class: 'terminated', color: '#4b5563' }, enter('cancelled')),
  },
});
