import * as z from 'zod';
import { eventSchema, jsonValue, type EventFromSchemas } from '../../src/strict/events.ts';
import {
  AGENT_STATUSES,
  TERMINAL_STATUSES,
  agentErrorSchema,
  agentStatusSchema,
  events as statusEvents,
  label,
  text,
  timestampSchema,
  type AgentErrorInput,
  type AgentStatus,
  type TerminalStatus,
  type Timestamp,
} from '../../src/strict/status-vocabulary.ts';

export {
  AGENT_STATUSES,
  TERMINAL_STATUSES,
  agentErrorSchema,
  agentStatusSchema,
  timestampSchema,
  type AgentErrorInput,
  type AgentStatus,
  type TerminalStatus,
  type Timestamp,
};

/** “Agent Status Models” §2 `pid: Option<u32>`. */
export const pidSchema = z.number().int().min(0).max(4_294_967_295);
/** “Agent Status Models” §2 `metadata: HashMap<String, Value>`: at most 100 keys. */
export const metadataSchema = z
  .record(z.string().min(1).max(200), jsonValue)
  .refine((m) => Object.keys(m).length <= 100, 'at most 100 metadata keys');

/**
 * The vocabulary of “Agent Status Models” (statuses, thought, progress, error, output) plus
 * `METADATA_UPDATE`, the document's `add_metadata()` (and the process id once known).
 */
export const events = {
  ...statusEvents,
  METADATA_UPDATE: eventSchema('METADATA_UPDATE', {
    /** Keys merged into `metadata` (a key with value null is kept as null). */
    metadata: metadataSchema.optional(),
    pid: pidSchema.nullable().optional(),
    at: timestampSchema,
  }),
};

export type AgentStatusEvent = EventFromSchemas<typeof events>;

/** Default number of timeline entries kept (“Agent Status Models” recommends limiting it). */
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
  /** The `pid` of “Agent Status Models”: the agent's process, when it has one. */
  pid: pidSchema.optional(),
  /** The `metadata` of “Agent Status Models”: the caller's own fields. */
  metadata: metadataSchema.optional(),
});
export type AgentStatusInput = z.infer<typeof inputSchema>;

/** “Agent Status Models” §3 AgentProgress. */
export interface AgentProgress {
  percentage: number;
  currentStep: number | null;
  totalSteps: number | null;
  message: string | null;
  details: Record<string, z.core.util.JSONType>;
}

/** “Agent Status Models” §4 AgentError. */
export interface AgentError {
  code: string;
  message: string;
  details: string | null;
  /** UTC ISO time the error was reported. */
  timestamp: string;
  recoverable: boolean;
}

/** “Agent Status Models” §5 StatusTransition. */
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

/** “Agent Status Models” §2 AgentRuntimeState, minus `status` (the state value). */
export interface AgentStatusContext {
  agentId: string;
  name: string;
  task: string;
  modelBackend: string;
  /** The agent's process id, when it has one (absent in snapshots written before it existed). */
  pid?: number | null;
  /** The caller's own fields (absent in snapshots written before it existed). */
  metadata?: Record<string, z.core.util.JSONType>;
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
