import type { SnapshotFrom } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { stateLabel } from '../../src/core/state.ts';
import type { EventCatalog } from '../../src/core/chart.ts';
import { machine } from './agent-status.machine.ts';
import { events, type AgentStatusEvent } from './agent-status.types.ts';
import { properties } from './agent-status.properties.ts';

export { machine, VALID_TRANSITIONS, toIsoTimestamp } from './agent-status.machine.ts';
export {
  AGENT_STATUSES,
  DEFAULT_TIMELINE_LIMIT,
  TERMINAL_STATUSES,
  agentErrorSchema,
  agentStatusSchema,
  events,
  inputSchema,
  timestampSchema,
} from './agent-status.types.ts';
export type {
  AgentError,
  AgentErrorInput,
  AgentProgress,
  AgentStatus,
  AgentStatusContext,
  AgentStatusEvent,
  AgentStatusInput,
  AgentStatusOutput,
  OutputLine,
  StatusTransition,
  TerminalStatus,
  Timestamp,
} from './agent-status.types.ts';

const at = '2025-11-24T05:53:00Z';

/** Sample events: one STATUS_UPDATE per status, both progress forms, both output streams. */
export const eventSamples: EventCatalog<AgentStatusEvent> = {
  STATUS_UPDATE: [
    { type: 'STATUS_UPDATE', status: 'idle', at },
    { type: 'STATUS_UPDATE', status: 'initializing', reason: 'Loading context', at },
    { type: 'STATUS_UPDATE', status: 'running', reason: 'Started execution', at },
    { type: 'STATUS_UPDATE', status: 'thinking', reason: 'Analyzing code patterns', at },
    { type: 'STATUS_UPDATE', status: 'paused', reason: 'Paused by operator', at },
    { type: 'STATUS_UPDATE', status: 'completed', reason: 'Task done', at },
    {
      type: 'STATUS_UPDATE',
      status: 'failed',
      at,
      error: { code: 'MODEL_ERROR', message: 'the backend returned 500', recoverable: true },
    },
    {
      type: 'STATUS_UPDATE',
      status: 'terminated',
      reason: 'Killed by operator',
      at: 1763963580000,
    },
  ],
  THOUGHT_UPDATE: [{ type: 'THOUGHT_UPDATE', thought: 'Analyzing the codebase structure...', at }],
  PROGRESS_UPDATE: [
    { type: 'PROGRESS_UPDATE', percentage: 35.5, at },
    {
      type: 'PROGRESS_UPDATE',
      currentStep: 5,
      totalSteps: 11,
      message: 'Processing file 5 of 11',
      at,
    },
  ],
  ERROR: [
    {
      type: 'ERROR',
      error: { code: 'RATE_LIMITED', message: 'retrying in 2 s', recoverable: true },
      at,
    },
  ],
  OUTPUT: [
    { type: 'OUTPUT', stream: 'stdout', content: 'compiling…', at },
    { type: 'OUTPUT', stream: 'stderr', content: 'warning: unused import', at },
  ],
  METADATA_UPDATE: [{ type: 'METADATA_UPDATE', metadata: { region: 'eu' }, pid: 4242, at }],
};

/**
 * A finite identity for exploring this chart: the status and whether a thought
 * is set. Timeline, timestamps and the last output grow or vary without changing
 * which events are legal.
 */
export function serializeState(snapshot: SnapshotFrom<typeof machine>): string {
  const context = snapshot.context;
  return JSON.stringify([stateLabel(snapshot.value), context.currentThought !== null]);
}

/** Statuses in which the agent is working, so a monitor restart may have missed updates. */
const ACTIVE_STATUSES = new Set(['initializing', 'running', 'thinking']);

/**
 * This chart mirrors an agent's reported status; it owns no work. After a
 * restart, an agent found in an active status (initializing, running, thinking)
 * keeps its status — only the agent may report a new one — but gets a recoverable
 * `MONITOR_RESTARTED` error recording the gap in which updates may have been
 * missed. Idle and paused agents are waiting and resume as they are.
 */
export const recovery: RecoveryPolicy = ({ state, now, updatedAt }) => {
  if (!ACTIVE_STATUSES.has(state)) {
    return { action: 'resume', reason: `${state} waits for the next status update` };
  }
  return {
    action: 'send',
    event: {
      type: 'ERROR',
      error: {
        code: 'MONITOR_RESTARTED',
        message: `status updates between ${new Date(updatedAt).toISOString()} and ${new Date(now).toISOString()} may have been missed`,
        recoverable: true,
      },
      at: Math.floor(now),
    },
    reason: `${state} is an active status whose updates may have been missed; recorded as a recoverable error`,
  };
};

export const chart = defineChart({
  name: 'agent-status',
  description:
    '“Agent Status Models”: the 8 agent statuses with thought, progress, structured error and a timeline.',
  machine,
  events,
  eventSamples,
  defaultInput: {
    agentId: '550e8400-e29b-41d4-a716-446655440000',
    name: 'code-analyzer',
    task: 'Analyze codebase structure',
    modelBackend: 'anthropic',
    createdAt: '2025-11-24T05:52:00Z',
  },
  recovery,
  version: 1,
  migrations: {},
  properties,
  serializeState,
});
