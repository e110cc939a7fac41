import { assertEvent, assign, emit, setup } from 'xstate';
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
    context: {} as AgentLifecycleContext,
    events: {} as AgentLifecycleEvent,
    input: {} as AgentLifecycleInput,
    emitted: {} as AgentLifecycleEmitted,
    tags: {} as AgentLifecycleTag,
  },
  schemas: { events, input: inputSchema },
  actions: {
    startTask: assign(({ event }) => {
      assertEvent(event, 'START');
      return { ...EMPTY_TASK, task_id: event.payload.task_id, extra: event.payload.extra ?? null };
    }),
    recordPlan: assign(({ event }) => {
      assertEvent(event, 'PLAN_COMPLETE');
      return { plan_id: event.payload.plan_id };
    }),
    recordStep: assign(({ event }) => {
      assertEvent(event, 'STEP_COMPLETE');
      return { current_step_id: event.payload.step_id };
    }),
    recordStepError: assign(({ event }) => {
      assertEvent(event, 'STEP_FAILED');
      return { error: event.payload.error };
    }),
    // The document leaves `error` unset for these two; `failed` would then read
    // "unknown error", so the cause is recorded from the payload.
    recordTimeout: assign(({ event }) => {
      assertEvent(event, 'TIMEOUT');
      return { error: `timeout after ${event.payload.duration_ms} ms` };
    }),
    recordMaxIterations: assign(({ event }) => {
      assertEvent(event, 'MAX_ITERATIONS');
      return { error: `max iterations reached (${event.payload.iterations})` };
    }),
    recordConfidence: assign(({ event }) => {
      assertEvent(event, ['EVALUATION_PASS', 'EVALUATION_FAIL', 'NEXT_STEP']);
      return { confidence: event.payload.confidence };
    }),
    // One adapt → execute loop: the new plan replaces the old one.
    recordAdaptation: assign(({ context, event }) => {
      assertEvent(event, 'ADAPTATION_COMPLETE');
      return { plan_id: event.payload.new_plan_id, iteration: context.iteration + 1 };
    }),
    recordWaitingForInput: assign(({ event }) => {
      assertEvent(event, 'WAIT_FOR_INPUT');
      return { waiting_for: event.payload.waiting_for };
    }),
    recordWaitingForAgent: assign(({ event }) => {
      assertEvent(event, 'WAIT_FOR_AGENT');
      return { waiting_for: event.payload.agent_id };
    }),
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
    events: {
      START: { description: 'Give the idle agent a task: it starts initializing.' },
      INIT_COMPLETE: { description: 'Initialized: start planning.' },
      PLAN_COMPLETE: { description: 'A plan exists: start executing it.' },
      STEP_COMPLETE: { description: 'A step finished: evaluate it.' },
      WAIT_FOR_INPUT: { description: 'The next step needs input from a person.' },
      WAIT_FOR_AGENT: { description: 'The next step needs another agent.' },
      INPUT_RECEIVED: { description: 'The awaited input arrived: resume executing.' },
      AGENT_COMPLETE: { description: 'The awaited agent finished: resume executing.' },
      EVALUATION_PASS: { description: 'The result is good: the task succeeded.' },
      EVALUATION_FAIL: { description: 'The result is not good enough: adapt the plan.' },
      NEXT_STEP: { description: 'Evaluated: execute the next step.' },
      ADAPTATION_COMPLETE: { description: 'The plan is adapted: execute again.' },
      STEP_FAILED: { description: 'A step failed: the task fails.' },
      TIMEOUT: { description: 'The task ran out of time: it fails.' },
      MAX_ITERATIONS: { description: 'Too many iterations: the task fails.' },
      PAUSE: { roles: ['agent', 'operator'], description: 'Pause the agent where it is.' },
      RESUME: {
        roles: ['agent', 'operator'],
        description: 'Resume the paused agent where it left off.',
      },
      CANCEL: { roles: ['agent', 'operator'], description: 'Cancel the task.' },
      CLEANUP: { description: 'After a finished task: back to idle for the next one.' },
    },
  },
  states: {
    idle: {
      meta: { class: 'idle', color: '#6b7280' },
      entry: { type: 'enterState', params: { state: 'idle' } },
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
        initializing: {
          meta: { class: 'working', color: '#3b82f6' },
          entry: { type: 'enterState', params: { state: 'initializing' } },
          on: {
            INIT_COMPLETE: { target: 'planning' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'initializing' } },
            },
          },
        },
        planning: {
          meta: { class: 'working', color: '#a855f7' },
          entry: { type: 'enterState', params: { state: 'planning' } },
          on: {
            PLAN_COMPLETE: { target: 'executing', actions: 'recordPlan' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'planning' } },
            },
          },
        },
        executing: {
          meta: { class: 'working', color: '#eab308' },
          entry: { type: 'enterState', params: { state: 'executing' } },
          on: {
            STEP_COMPLETE: { target: 'evaluating', actions: 'recordStep' },
            WAIT_FOR_INPUT: { target: 'waiting_input', actions: 'recordWaitingForInput' },
            WAIT_FOR_AGENT: { target: 'waiting_agent', actions: 'recordWaitingForAgent' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'executing' } },
            },
          },
        },
        evaluating: {
          meta: { class: 'working', color: '#f97316' },
          entry: { type: 'enterState', params: { state: 'evaluating' } },
          on: {
            EVALUATION_PASS: { target: '#agent-lifecycle.succeeded', actions: 'recordConfidence' },
            EVALUATION_FAIL: { target: 'adapting', actions: 'recordConfidence' },
            NEXT_STEP: { target: 'executing', actions: 'recordConfidence' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'evaluating' } },
            },
          },
        },
        adapting: {
          meta: { class: 'working', color: '#ec4899' },
          entry: { type: 'enterState', params: { state: 'adapting' } },
          on: {
            ADAPTATION_COMPLETE: { target: 'executing', actions: 'recordAdaptation' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'adapting' } },
            },
          },
        },
        waiting_input: {
          meta: { class: 'waiting', color: '#06b6d4' },
          tags: 'blocked',
          entry: [
            { type: 'announceStateChange', params: { state: 'waiting_input' } },
            { type: 'enterState', params: { state: 'waiting_input' } },
          ],
          on: {
            INPUT_RECEIVED: { target: 'executing', actions: 'clearWaitingFor' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'waiting_input' } },
            },
          },
        },
        waiting_agent: {
          meta: { class: 'waiting', color: '#6366f1' },
          tags: 'blocked',
          entry: [
            { type: 'announceStateChange', params: { state: 'waiting_agent' } },
            { type: 'enterState', params: { state: 'waiting_agent' } },
          ],
          on: {
            AGENT_COMPLETE: { target: 'executing', actions: 'clearWaitingFor' },
            PAUSE: {
              target: '#agent-lifecycle.paused',
              actions: { type: 'rememberPausedFrom', params: { state: 'waiting_agent' } },
            },
          },
        },
      },
    },
    paused: {
      meta: { class: 'paused', color: '#9ca3af' },
      entry: { type: 'enterState', params: { state: 'paused' } },
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
    succeeded: {
      meta: { class: 'completed', color: '#22c55e' },
      tags: 'terminal',
      entry: [
        { type: 'announceStateChange', params: { state: 'succeeded' } },
        { type: 'enterState', params: { state: 'succeeded' } },
      ],
      on: { CLEANUP: { target: 'idle', actions: 'resetTask' } },
    },
    failed: {
      meta: { class: 'failed', color: '#ef4444' },
      tags: 'terminal',
      entry: [
        { type: 'announceStateChange', params: { state: 'failed' } },
        { type: 'enterState', params: { state: 'failed' } },
      ],
      on: { CLEANUP: { target: 'idle', actions: 'resetTask' } },
    },
    cancelled: {
      meta: { class: 'terminated', color: '#4b5563' },
      entry: { type: 'enterState', params: { state: 'cancelled' } },
      tags: 'terminal',
      on: { CLEANUP: { target: 'idle', actions: 'resetTask' } },
    },
  },
});
