import { assertEvent, assign, emit, setup } from 'xstate';
import { endStatus, type RunEnd } from '../final-output.ts';
import {
  events,
  inputSchema,
  type AgentRuntimeContext,
  type AgentRuntimeEmitted,
  type AgentRuntimeEvent,
  type AgentRuntimeInput,
  type AgentRuntimeOutput,
  type TerminalStateOutput,
} from './agent-runtime.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

/** Used when the input does not say how many lost steps to re-plan. */
export const DEFAULT_MAX_INTERRUPTIONS = 3;

/** Initial context; the input is parsed so a hand-built actor gets the same bounds as the schema. */
function initialContext({ input }: { input: AgentRuntimeInput }): AgentRuntimeContext {
  const parsed = inputSchema.parse(input);
  return {
    agentId: parsed.agentId,
    hasController: parsed.hasController,
    maxInterruptions: parsed.maxInterruptions ?? DEFAULT_MAX_INTERRUPTIONS,
    steps: 0,
    pendingToolCalls: [],
    lastToolResults: [],
    lastMessage: null,
    interruptions: 0,
    result: null,
    error: null,
    cancelReason: null,
  };
}

/** The run's output: the status its final state declares, and what the context recorded. */
function runtimeOutput({ context, event }: RunEnd<AgentRuntimeContext>): AgentRuntimeOutput {
  const { agentId, steps, result, error, cancelReason } = context;
  const status = endStatus<TerminalStateOutput['status']>(event);
  return { agentId, status, steps, result, error, cancelReason };
}

/** An effect for the runtime to perform for this run's agent: `type`, `agentId`, `fields`. */
function effect<T extends AgentRuntimeEmitted['type']>(
  type: T,
  context: AgentRuntimeContext,
  fields: Omit<Extract<AgentRuntimeEmitted, { type: T }>, 'type' | 'agentId'>,
) {
  return { type, agentId: context.agentId, ...fields };
}

export const machine = setup({
  types: {
    ...metaTypes,
    context: {} as AgentRuntimeContext,
    events: {} as AgentRuntimeEvent,
    input: {} as AgentRuntimeInput,
    output: {} as AgentRuntimeOutput,
    emitted: {} as AgentRuntimeEmitted,
  },
  schemas: { events, input: inputSchema },
  guards: {
    /** AgentInitialized asked to wait for the user and someone is there to answer. */
    startsPaused: ({ context, event }) => {
      assertEvent(event, 'AgentInitialized');
      return context.hasController && event.waitForInput === true;
    },
    decidedToContinue: ({ event }) => {
      assertEvent(event, 'BrainResult');
      return event.decision === 'continue';
    },
    hasController: ({ context }) => context.hasController,
    hasPendingToolCalls: ({ context }) => context.pendingToolCalls.length > 0,
    /** A new brain step must not silently drop tool calls the last one requested. */
    noPendingToolCalls: ({ context }) => context.pendingToolCalls.length === 0,
    canReplan: ({ context }) => context.interruptions < context.maxInterruptions,
  },
  actions: {
    startBrainStep: assign({ steps: ({ context }) => context.steps + 1 }),
    emitSpawnNextStep: emit(({ context }) =>
      effect('spawn_next_step', context, { step: context.steps }),
    ),
    emitSpawnTools: emit(({ context }) =>
      effect('spawn_tools', context, { toolCalls: context.pendingToolCalls }),
    ),
    /**
     * A step that requested tools is complete only once they ran, so the
     * interruption count survives it: a tool call that crashes the process every
     * time still ends the run after `maxInterruptions` re-plans.
     */
    recordBrainResult: assign(({ context, event }) => {
      assertEvent(event, 'BrainResult');
      return {
        pendingToolCalls: event.toolCalls ?? [],
        lastMessage: event.message ?? null,
        interruptions: event.toolCalls === undefined ? 0 : context.interruptions,
      };
    }),
    /** Without a controller, the brain yielding control ends the run with its message. */
    recordFinalAnswer: assign(({ event }) => {
      assertEvent(event, 'BrainResult');
      return { result: event.message ?? null };
    }),
    recordToolResults: assign(({ event }) => {
      assertEvent(event, 'ToolsCompleted');
      return { pendingToolCalls: [], lastToolResults: event.results, interruptions: 0 };
    }),
    recordUserInput: assign(({ event }) => {
      assertEvent(event, 'UserInput');
      return { lastMessage: event.message };
    }),
    recordCancellation: assign(({ event }) => {
      assertEvent(event, ['CancelTask', 'TaskCancelled']);
      return { cancelReason: event.reason ?? null, pendingToolCalls: [] };
    }),
    emitCancelProcessing: emit(({ context }) =>
      effect('cancel_processing', context, { reason: context.cancelReason }),
    ),
    recordCompletion: assign(({ context, event }) => {
      assertEvent(event, 'TaskCompleted');
      return { result: event.result ?? context.lastMessage };
    }),
    recordFailure: assign(({ event }) => {
      assertEvent(event, 'TaskFailed');
      return { error: { code: event.code, message: event.message } };
    }),
    /** The lost step is re-planned from Running: pending tool calls may or may not have run. */
    recordInterruption: assign(({ context }) => ({
      interruptions: context.interruptions + 1,
      pendingToolCalls: [],
    })),
    recordTooManyInterruptions: assign(({ context, event }) => {
      assertEvent(event, 'ProcessingInterrupted');
      return {
        interruptions: context.interruptions + 1,
        error: {
          code: 'TOO_MANY_INTERRUPTIONS',
          message: `processing was interrupted ${context.interruptions + 1} times in a row: ${event.reason}`,
        },
      };
    }),
  },
}).createMachine({
  id: 'agent-runtime',
  initial: 'Starting',
  context: initialContext,
  output: runtimeOutput,
  states: {
    Starting: {
      meta: { class: 'working', color: '#3b82f6' },
      on: {
        AgentInitialized: [{ guard: 'startsPaused', target: 'Paused' }, { target: 'Running' }],
        CancelTask: { target: 'Cancelled', actions: 'recordCancellation' },
        TaskFailed: { target: 'Failed', actions: 'recordFailure' },
      },
    },
    Running: {
      meta: { class: 'working', color: '#eab308' },
      on: {
        StartThinking: { guard: 'noPendingToolCalls', target: 'Processing.brain' },
        StartTools: { guard: 'hasPendingToolCalls', target: 'Processing.tools' },
        CancelTask: pauseOrCancel('recordCancellation'),
        TaskFailed: { target: 'Failed', actions: 'recordFailure' },
      },
    },
    Processing: {
      initial: 'brain',
      states: {
        brain: {
          meta: { class: 'working', color: '#a855f7' },
          entry: ['startBrainStep', 'emitSpawnNextStep'],
          on: {
            BrainResult: [
              {
                guard: 'decidedToContinue',
                target: '#agent-runtime.Running',
                actions: 'recordBrainResult',
              },
              {
                guard: 'hasController',
                target: '#agent-runtime.Paused',
                actions: 'recordBrainResult',
              },
              {
                target: '#agent-runtime.Completed',
                actions: ['recordBrainResult', 'recordFinalAnswer'],
              },
            ],
          },
        },
        tools: {
          meta: { class: 'working', color: '#eab308' },
          entry: 'emitSpawnTools',
          on: {
            ToolsCompleted: { target: '#agent-runtime.Running', actions: 'recordToolResults' },
          },
        },
      },
      on: {
        TaskCancelled: pauseOrCancel('recordCancellation'),
        CancelTask: pauseOrCancel(['recordCancellation', 'emitCancelProcessing']),
        TaskFailed: { target: 'Failed', actions: 'recordFailure' },
        ProcessingInterrupted: [
          { guard: 'canReplan', target: 'Running', actions: 'recordInterruption' },
          { target: 'Failed', actions: 'recordTooManyInterruptions' },
        ],
      },
    },
    Paused: {
      meta: { class: 'paused' },
      on: {
        UserInput: { target: 'Running', actions: 'recordUserInput' },
        TaskCompleted: { target: 'Completed', actions: 'recordCompletion' },
        TaskFailed: { target: 'Failed', actions: 'recordFailure' },
        CancelTask: { target: 'Cancelled', actions: 'recordCancellation' },
      },
    },
    Completed: { type: 'final', meta: { class: 'completed' }, output: { status: 'completed' } },
    Failed: { type: 'final', meta: { class: 'failed' }, output: { status: 'failed' } },
    Cancelled: { type: 'final', meta: { class: 'terminated' }, output: { status: 'cancelled' } },
  },
});

/**
 * A cancellation while the agent works: with a controller the run pauses for it to
 * decide, without one it ends as cancelled; `actions` run either way.
 */
function pauseOrCancel<const A>(actions: A) {
  return [
    { guard: 'hasController', target: 'Paused', actions },
    { target: 'Cancelled', actions },
  ] as const;
}
