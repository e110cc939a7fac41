import { z } from 'zod';
import {
  AGENT_STATUSES,
  TERMINAL_STATUSES,
  agentErrorSchema,
  agentStatusSchema,
  events,
  label,
  text,
  timestampSchema,
  type AgentErrorInput,
  type AgentStatus,
  type AgentStatusEvent,
  type TerminalStatus,
  type Timestamp,
} from '../../src/strict/status-vocabulary.ts';

export {
  AGENT_STATUSES,
  TERMINAL_STATUSES,
  agentErrorSchema,
  agentStatusSchema,
  events,
  timestampSchema,
  type AgentErrorInput,
  type AgentStatus,
  type AgentStatusEvent,
  type TerminalStatus,
  type Timestamp,
};

/** Default number of timeline entries kept (the seed recommends limiting it). */
export const DEFAULT_TIMELINE_LIMIT = 200;

export const inputSchema = z.strictObject({
  agentId: label,
  name: label,
  task: text,
  modelBackend: label,
  /** When the agent was created: the first timeline entry and `createdAt`. */
  createdAt: timestampSchema,
  /** Largest number of timeline entries kept; older ones are dropped first. */
  timelineLimit: z.number().int().min(1).max(100_000).optional(),
});
export type AgentStatusInput = z.infer<typeof inputSchema>;

/** Seed 003 §3 AgentProgress. */
export interface AgentProgress {
  percentage: number;
  currentStep: number | null;
  totalSteps: number | null;
  message: string | null;
  details: Record<string, z.core.util.JSONType>;
}

/** Seed 003 §4 AgentError. */
export interface AgentError {
  code: string;
  message: string;
  details: string | null;
  /** UTC ISO time the error was reported. */
  timestamp: string;
  recoverable: boolean;
}

/** Seed 003 §5 StatusTransition. */
export interface StatusTransition {
  from: AgentStatus | null;
  to: AgentStatus;
  /** UTC ISO time. */
  timestamp: string;
  reason: string | null;
}

export interface OutputLine {
  stream: 'stdout' | 'stderr';
  content: string;
  timestamp: string;
}

/** Seed 003 §2 AgentRuntimeState, minus `status` (the state value) and `pid`/`metadata`. */
export interface AgentStatusContext {
  agentId: string;
  name: string;
  task: string;
  modelBackend: string;
  timelineLimit: number;
  /** Set only while thinking; cleared on leaving thinking. */
  currentThought: string | null;
  progress: AgentProgress | null;
  error: AgentError | null;
  lastOutput: OutputLine | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  completedAt: string | null;
  timeline: StatusTransition[];
}

/** `snapshot.output` once a terminal status is reached. */
export interface AgentStatusOutput {
  agentId: string;
  status: TerminalStatus;
  error: AgentError | null;
  progress: AgentProgress | null;
  startedAt: string | null;
  completedAt: string | null;
}

/** The static output each terminal state declares (read by the machine's output mapper). */
export interface TerminalStateOutput {
  status: TerminalStatus;
}
