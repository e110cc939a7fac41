import type { SnapshotFrom } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { stateLabel } from '../../src/core/state.ts';
import type { EventCatalog } from '../../src/core/chart.ts';
import { machine } from './agent-runtime.machine.ts';
import { events, type AgentRuntimeEvent } from './agent-runtime.types.ts';
import { properties } from './agent-runtime.properties.ts';

export { machine, DEFAULT_MAX_INTERRUPTIONS } from './agent-runtime.machine.ts';
export { events, inputSchema, toolCallSchema, toolResultSchema } from './agent-runtime.types.ts';
export type {
  AgentRuntimeContext,
  AgentRuntimeEmitted,
  AgentRuntimeEvent,
  AgentRuntimeInput,
  AgentRuntimeOutput,
  RuntimeError,
  ToolCall,
  ToolResult,
} from './agent-runtime.types.ts';

/**
 * Sample events per type; BrainResult, AgentInitialized and ProcessingInterrupted
 * have one sample per guarded branch.
 */
export const eventSamples: EventCatalog<AgentRuntimeEvent> = {
  AgentInitialized: [
    { type: 'AgentInitialized' },
    { type: 'AgentInitialized', waitForInput: true },
  ],
  StartThinking: [{ type: 'StartThinking' }],
  BrainResult: [
    { type: 'BrainResult', decision: 'continue', message: 'Reading the repository layout.' },
    {
      type: 'BrainResult',
      decision: 'continue',
      toolCalls: [{ id: 'call-1', name: 'list_files', args: { path: '.' } }],
    },
    { type: 'BrainResult', decision: 'pause', message: 'Which branch should I use?' },
  ],
  StartTools: [{ type: 'StartTools' }],
  ToolsCompleted: [
    { type: 'ToolsCompleted', results: [{ toolCallId: 'call-1', ok: true, summary: '12 files' }] },
  ],
  UserInput: [{ type: 'UserInput', message: 'Use main.' }],
  CancelTask: [{ type: 'CancelTask', reason: 'user pressed stop' }],
  TaskCancelled: [{ type: 'TaskCancelled', reason: 'tool process killed' }],
  TaskCompleted: [{ type: 'TaskCompleted', result: 'Done: the branch is merged.' }],
  TaskFailed: [
    { type: 'TaskFailed', code: 'MODEL_UNAVAILABLE', message: 'the model backend is down' },
  ],
  ProcessingInterrupted: [{ type: 'ProcessingInterrupted', reason: 'process restarted' }],
};

/**
 * A finite identity for exploring this chart: the state, whether tool calls are
 * pending and the interruption count (bounded by `maxInterruptions`). The step
 * counter and messages grow without bound and do not change which events are legal.
 */
export function serializeState(snapshot: SnapshotFrom<typeof machine>): string {
  const context = snapshot.context;
  return JSON.stringify([
    stateLabel(snapshot.value),
    context.hasController,
    context.pendingToolCalls.length > 0,
    context.interruptions,
  ]);
}

/**
 * After a restart, a run found in Processing lost its in-flight brain or tool
 * call: it goes back to Running to re-plan the step (failing once
 * `maxInterruptions` is exceeded). Starting, Running and Paused hold no in-flight
 * work the machine knows of and resume as they are.
 */
export const recovery: RecoveryPolicy = ({ state, now, updatedAt }) => {
  if (state.startsWith('Processing.')) {
    return {
      action: 'send',
      event: {
        type: 'ProcessingInterrupted',
        reason: `process restarted while in ${state} (idle ${Math.max(0, now - updatedAt)} ms)`,
      },
      reason: `the in-flight ${state === 'Processing.tools' ? 'tool' : 'brain'} call was lost; re-plan the step from Running`,
    };
  }
  return {
    action: 'resume',
    reason: `${state} holds no in-flight work; the runtime continues from it`,
  };
};

export const chart = defineChart({
  name: 'agent-runtime',
  description:
    'An agent run, after the runtime loop of “Agent State Machine”: Starting, Running, Processing (brain/tools), Paused, Completed/Failed/Cancelled.',
  machine,
  events,
  eventSamples,
  defaultInput: { agentId: 'agent-1', hasController: true },
  recovery,
  version: 1,
  migrations: {},
  properties,
  serializeState,
});
