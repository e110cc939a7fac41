import { assertEvent, assign, setup } from 'xstate';
import { eventMeta } from '../event-meta.ts';
import { endStatus, type RunEnd } from '../final-output.ts';
import {
  DEFAULT_TIMELINE_LIMIT,
  events,
  inputSchema,
  type AgentError,
  type AgentErrorInput,
  type AgentProgress,
  type AgentStatus,
  type AgentStatusContext,
  type AgentStatusEvent,
  type AgentStatusInput,
  type AgentStatusOutput,
  type TerminalStateOutput,
  type Timestamp,
} from './agent-status.types.ts';
import { metaTypes } from '../../src/core/meta-check.ts';

/**
 * The valid-transition list of “Agent Status Models” (`can_transition_to`), the contract of this
 * chart. Terminal statuses have no entry: they are final states.
 */
export const VALID_TRANSITIONS = {
  idle: ['initializing', 'terminated'],
  initializing: ['running', 'thinking', 'failed', 'terminated'],
  running: ['thinking', 'paused', 'completed', 'failed', 'terminated'],
  thinking: ['running', 'paused', 'completed', 'failed', 'terminated'],
  paused: ['running', 'thinking', 'failed', 'terminated'],
} as const satisfies Partial<Record<AgentStatus, readonly AgentStatus[]>>;

/** Event timestamps normalised to UTC ISO; pure, so replay gives the same context. */
export function toIsoTimestamp(at: Timestamp): string {
  return new Date(at).toISOString();
}

function toAgentError(error: AgentErrorInput, at: Timestamp): AgentError {
  return {
    code: error.code,
    message: error.message,
    details: error.details ?? null,
    timestamp: toIsoTimestamp(at),
    recoverable: error.recoverable,
  };
}

function initialContext({ input }: { input: AgentStatusInput }): AgentStatusContext {
  const parsed = inputSchema.parse(input);
  const createdAt = toIsoTimestamp(parsed.createdAt);
  return {
    agentId: parsed.agentId,
    name: parsed.name,
    task: parsed.task,
    modelBackend: parsed.modelBackend,
    pid: parsed.pid ?? null,
    metadata: parsed.metadata ?? {},
    timelineLimit: parsed.timelineLimit ?? DEFAULT_TIMELINE_LIMIT,
    currentThought: null,
    progress: null,
    error: null,
    lastOutput: null,
    createdAt,
    updatedAt: createdAt,
    startedAt: null,
    completedAt: null,
    // As the document's `new()`: the timeline opens with the creation entry.
    timeline: [{ from: null, to: 'idle', timestamp: createdAt, reason: 'Agent created' }],
  };
}

/** The run's output: the status its final state declares, and what the context recorded. */
function statusOutput({ context, event }: RunEnd<AgentStatusContext>): AgentStatusOutput {
  const { agentId, error, progress, startedAt, completedAt } = context;
  const status = endStatus<TerminalStateOutput['status']>(event);
  return { agentId, status, error, progress, startedAt, completedAt };
}

/**
 * What every live status records without changing status: progress, errors, output
 * lines and metadata. Only STATUS_UPDATE moves the agent.
 */
const RECORD_UPDATES = {
  PROGRESS_UPDATE: { actions: 'setProgress' },
  ERROR: { actions: 'setError' },
  OUTPUT: { actions: 'recordOutput' },
  METADATA_UPDATE: { actions: 'setMetadata' },
} as const;

const STARTED_STATUSES: readonly AgentStatus[] = ['initializing', 'running'];
const TERMINAL: readonly AgentStatus[] = ['completed', 'failed', 'terminated'];

export const machine = setup({
  types: {
    ...metaTypes,
    context: {} as AgentStatusContext,
    events: {} as AgentStatusEvent,
    input: {} as AgentStatusInput,
    output: {} as AgentStatusOutput,
  },
  schemas: { events, input: inputSchema },
  guards: {
    /** The STATUS_UPDATE names this target status. */
    isStatus: ({ event }, params: { status: AgentStatus }) => {
      assertEvent(event, 'STATUS_UPDATE');
      return event.status === params.status;
    },
  },
  actions: {
    /** Timeline entry, `updatedAt`, and the document's `started_at`/`completed_at` rules. */
    recordTransition: assign(({ context, event }, params: { from: AgentStatus }) => {
      assertEvent(event, 'STATUS_UPDATE');
      const timestamp = toIsoTimestamp(event.at);
      const entry = {
        from: params.from,
        to: event.status,
        timestamp,
        reason: event.reason ?? null,
      };
      const timeline = [...context.timeline, entry].slice(-context.timelineLimit);
      return {
        timeline,
        updatedAt: timestamp,
        startedAt:
          context.startedAt ?? (STARTED_STATUSES.includes(event.status) ? timestamp : null),
        completedAt: context.completedAt ?? (TERMINAL.includes(event.status) ? timestamp : null),
        error: event.error !== undefined ? toAgentError(event.error, event.at) : context.error,
      };
    }),
    clearThought: assign({ currentThought: null }),
    setThought: assign(({ event }) => {
      assertEvent(event, 'THOUGHT_UPDATE');
      return { currentThought: event.thought, updatedAt: toIsoTimestamp(event.at) };
    }),
    setProgress: assign(({ event }) => {
      assertEvent(event, 'PROGRESS_UPDATE');
      const steps =
        event.currentStep !== undefined && event.totalSteps !== undefined
          ? { currentStep: event.currentStep, totalSteps: event.totalSteps }
          : undefined;
      const progress: AgentProgress = {
        // The schema admits exactly one of percentage or steps.
        percentage: steps ? (steps.currentStep / steps.totalSteps) * 100 : (event.percentage ?? 0),
        currentStep: steps?.currentStep ?? null,
        totalSteps: steps?.totalSteps ?? null,
        message: event.message ?? null,
        details: event.details ?? {},
      };
      return { progress, updatedAt: toIsoTimestamp(event.at) };
    }),
    setMetadata: assign(({ context, event }) => {
      assertEvent(event, 'METADATA_UPDATE');
      return {
        metadata: { ...context.metadata, ...event.metadata },
        ...(event.pid === undefined ? {} : { pid: event.pid }),
        updatedAt: toIsoTimestamp(event.at),
      };
    }),
    setError: assign(({ event }) => {
      assertEvent(event, 'ERROR');
      return { error: toAgentError(event.error, event.at), updatedAt: toIsoTimestamp(event.at) };
    }),
    recordOutput: assign(({ event }) => {
      assertEvent(event, 'OUTPUT');
      const timestamp = toIsoTimestamp(event.at);
      return {
        lastOutput: { stream: event.stream, content: event.content, timestamp },
        updatedAt: timestamp,
      };
    }),
  },
}).createMachine({
  id: 'agent-status',
  initial: 'idle',
  context: initialContext,
  output: statusOutput,
  meta: {
    display: { name: 'name', task: 'task' },
    events: eventMeta({
      STATUS_UPDATE: 'Move to another status (the only event that does).',
      THOUGHT_UPDATE: 'What the agent is thinking; only while thinking.',
      PROGRESS_UPDATE: 'Progress as a percentage or as steps done of total.',
      ERROR: 'Record a structured error without changing the status.',
      OUTPUT: 'A line the agent wrote to stdout or stderr.',
      METADATA_UPDATE: 'Add custom metadata, or set the process id.',
    }),
  },
  states: {
    idle: {
      meta: { class: 'idle' },
      on: { STATUS_UPDATE: statusTransitions('idle'), ...RECORD_UPDATES },
    },
    initializing: {
      meta: { class: 'working', color: '#3b82f6' },
      on: { STATUS_UPDATE: statusTransitions('initializing'), ...RECORD_UPDATES },
    },
    running: {
      meta: { class: 'working', color: '#eab308' },
      on: { STATUS_UPDATE: statusTransitions('running'), ...RECORD_UPDATES },
    },
    thinking: {
      meta: { class: 'working', color: '#a855f7' },
      exit: 'clearThought',
      on: {
        STATUS_UPDATE: statusTransitions('thinking'),
        THOUGHT_UPDATE: { actions: 'setThought' },
        ...RECORD_UPDATES,
      },
    },
    paused: {
      meta: { class: 'paused' },
      on: { STATUS_UPDATE: statusTransitions('paused'), ...RECORD_UPDATES },
    },
    completed: { type: 'final', meta: { class: 'completed' }, output: { status: 'completed' } },
    failed: { type: 'final', meta: { class: 'failed' }, output: { status: 'failed' } },
    terminated: { type: 'final', meta: { class: 'terminated' }, output: { status: 'terminated' } },
  },
});

/**
 * The guarded STATUS_UPDATE branches of one status, one per target the document
 * allows. Built from {@link VALID_TRANSITIONS} so the chart and the list cannot drift;
 * the conformance test still checks the result against its own transcription.
 */
function statusTransitions(from: keyof typeof VALID_TRANSITIONS) {
  return VALID_TRANSITIONS[from].map((to) => ({
    guard: { type: 'isStatus' as const, params: { status: to } },
    target: to,
    actions: { type: 'recordTransition' as const, params: { from } },
  }));
}
