/**
 * The monitoring stream of “Agent Status Models”: `status_update`, `thought_update`,
 * `progress_update`, `output`, `error`, `lifecycle` and `heartbeat` messages, each
 * with `agent_id` and `timestamp`, one JSON object per line (NDJSON). Durable
 * actors of any chart produce them; a reader validates every line by schema.
 */
import type { EventObject } from 'xstate';
import * as z from 'zod';
import { events as agentStatusEvents } from '../strict/status-vocabulary.ts';
import type { Clock } from '../core/clock.ts';
import type { DurableRuntime } from '../durable/runtime.ts';
import type { ActorStatus, TransitionFeedRow } from '../store/types.ts';
import {
  classifyState,
  isFinishedClass as isFinished,
  stateName,
  type StateClass,
} from '../core/meanings.ts';
import { EXPECTED, requireArg } from '../core/options.ts';

// ---------------------------------------------------------------- schemas

const isoTime = z.iso.datetime({ offset: true });
const name = z.string().min(1).max(1_000);

/** Fields every message carries; `machine_id` is our extension (which chart the agent runs). */
const common = {
  agent_id: name,
  timestamp: isoTime,
  machine_id: name.optional(),
};

/** A message's schema: its `type`, the fields every message carries, then its own. */
function messageSchema<T extends string, S extends z.ZodRawShape>(type: T, shape: S) {
  return z.strictObject({ type: z.literal(type), ...common, ...shape });
}

export const statusUpdateSchema = messageSchema('status_update', {
  /** The document's name of the state (`thinking`, `running`, `executing`), from chart metadata. */
  status: name,
  /** Extension: the state left (null on creation) and the event that moved the agent. */
  previous_status: name.nullable().optional(),
  event: name.optional(),
  /** Extension: the full state path as stored (`active.executing`), when it differs from `status`. */
  state: name.optional(),
});

export const thoughtUpdateSchema = messageSchema('thought_update', {
  thought: z.string(),
});

/** “Agent Status Models” §3 AgentProgress. */
export const progressSchema = z.strictObject({
  percentage: z.number().min(0).max(100),
  current_step: z.number().int().min(0).nullable().optional(),
  total_steps: z.number().int().min(1).nullable().optional(),
  message: z.string().nullable().optional(),
  details: z.record(z.string(), z.json()).optional(),
});

export const progressUpdateSchema = messageSchema('progress_update', {
  progress: progressSchema,
});

export const outputSchema = messageSchema('output', {
  stream: z.enum(['stdout', 'stderr']),
  content: z.string(),
});

/** “Agent Status Models” §4 AgentError. */
export const agentErrorSchema = z.strictObject({
  code: name,
  message: z.string(),
  details: z.string().nullable().optional(),
  timestamp: isoTime,
  recoverable: z.boolean(),
});

export const errorMessageSchema = messageSchema('error', {
  error: agentErrorSchema,
});

/**
 * `spawned`, `started`, `paused`, `resumed`, `completed`, `failed`, `terminated`,
 * or the type of an event the chart emitted (“Agent Status Models”: "spawned, started, etc.").
 */
export const lifecycleSchema = messageSchema('lifecycle', {
  event: name,
});

export const heartbeatSchema = messageSchema('heartbeat', {});

export const streamMessageSchema = z.discriminatedUnion('type', [
  statusUpdateSchema,
  thoughtUpdateSchema,
  progressUpdateSchema,
  outputSchema,
  errorMessageSchema,
  lifecycleSchema,
  heartbeatSchema,
]);

export type StreamMessage = z.infer<typeof streamMessageSchema>;
export type StreamMessageType = StreamMessage['type'];
export const STREAM_MESSAGE_TYPES: readonly StreamMessageType[] = streamMessageSchema.options.map(
  (schema) => schema.shape.type.value,
);
// ---------------------------------------------------------------- transitions → messages

/** What a committed transition tells the stream; a TransitionNotice is one. */
export interface StreamTransition {
  actorId: string;
  machineId: string;
  /** `null` when the actor was created. */
  from: string | null;
  to: string;
  event: EventObject;
  /** The event's name in the log (a timer's is the document's name: `RETRY`), when known. */
  eventType?: string | undefined;
  at: number;
  /** Snapshot status after the transition, when known (a feed row does not carry it). */
  status?: ActorStatus | undefined;
}

const iso = (at: number) => new Date(at).toISOString();

/** The lifecycle event of a state change, if it is one. */
function lifecycleEvent(from: StateClass | null, to: StateClass): string | undefined {
  if (from === to) return undefined;
  if (isFinished(to)) return to;
  if (to === 'paused') return 'paused';
  if (from === 'paused') return 'resumed';
  if (from === 'idle') return 'started';
  return undefined;
}

/**
 * Content messages of “Agent Status Models” for events in its vocabulary (THOUGHT_UPDATE,
 * PROGRESS_UPDATE, ERROR, OUTPUT, STATUS_UPDATE with an error), whatever the
 * chart: an event is mapped only when it matches the agent-status schema of its type.
 */
function contentMessages(
  event: EventObject,
  head: { agent_id: string; timestamp: string; machine_id: string },
): StreamMessage[] {
  switch (event.type) {
    case 'THOUGHT_UPDATE': {
      const e = agentStatusEvents.THOUGHT_UPDATE.safeParse(event);
      return e.success ? [{ type: 'thought_update', ...head, thought: e.data.thought }] : [];
    }
    case 'PROGRESS_UPDATE': {
      const e = agentStatusEvents.PROGRESS_UPDATE.safeParse(event);
      if (!e.success) return [];
      const p = e.data;
      const steps =
        p.currentStep !== undefined && p.totalSteps !== undefined
          ? { current: p.currentStep, total: p.totalSteps }
          : undefined;
      return [
        {
          type: 'progress_update',
          ...head,
          progress: {
            // As the chart computes it: steps give the percentage, else it is given.
            percentage: steps ? (steps.current / steps.total) * 100 : (p.percentage ?? 0),
            current_step: steps?.current ?? null,
            total_steps: steps?.total ?? null,
            message: p.message ?? null,
            ...(p.details !== undefined && Object.keys(p.details).length > 0
              ? { details: p.details }
              : {}),
          },
        },
      ];
    }
    case 'OUTPUT': {
      const e = agentStatusEvents.OUTPUT.safeParse(event);
      return e.success
        ? [{ type: 'output', ...head, stream: e.data.stream, content: e.data.content }]
        : [];
    }
    case 'ERROR':
    case 'STATUS_UPDATE': {
      const e =
        event.type === 'ERROR'
          ? agentStatusEvents.ERROR.safeParse(event)
          : agentStatusEvents.STATUS_UPDATE.safeParse(event);
      if (!e.success || e.data.error === undefined) return [];
      const error = e.data.error;
      return [
        {
          type: 'error',
          ...head,
          error: {
            code: error.code,
            message: error.message,
            details: error.details ?? null,
            timestamp: iso(new Date(e.data.at).getTime()),
            recoverable: error.recoverable,
          },
        },
      ];
    }
    default:
      return [];
  }
}

/**
 * The stream messages of one committed transition, in order: `lifecycle`
 * `spawned` on creation, `status_update` when the state label changed (or on
 * creation), content messages of “Agent Status Models” (thought, progress, output, error) for
 * events in its vocabulary, then a `lifecycle` event when the agent started,
 * paused, resumed or finished. A transition that changes neither state nor
 * content yields nothing. Every message carries the commit time.
 *
 * @example
 * runtime.observe({ onTransition: (n) => toStreamMessages(n).forEach(send) });
 */
export function toStreamMessages(t: StreamTransition): StreamMessage[] {
  requireArg(
    'toStreamMessages',
    'transition',
    typeof (t as { actorId?: unknown } | null)?.actorId === 'string' &&
      Number.isFinite((t as { at?: unknown }).at),
    'a transition ({ actorId, machineId, from, to, at, … })',
  );
  const head = { agent_id: t.actorId, timestamp: iso(t.at), machine_id: t.machineId };
  const messages: StreamMessage[] = [];
  const toClass = classifyState(t.machineId, t.to, t.status);
  if (t.from === null) messages.push({ type: 'lifecycle', ...head, event: 'spawned' });
  if (t.from !== t.to) {
    messages.push({
      type: 'status_update',
      ...head,
      status: stateName(t.machineId, t.to),
      previous_status: t.from === null ? null : stateName(t.machineId, t.from),
      event: t.eventType ?? t.event.type,
      ...(stateName(t.machineId, t.to) === t.to ? {} : { state: t.to }),
    });
  }
  messages.push(...contentMessages(t.event, head));
  if (t.from !== null && t.from !== t.to) {
    const lifecycle = lifecycleEvent(classifyState(t.machineId, t.from), toClass);
    if (lifecycle !== undefined) messages.push({ type: 'lifecycle', ...head, event: lifecycle });
  } else if (t.from === null && isFinished(toClass)) {
    messages.push({ type: 'lifecycle', ...head, event: toClass });
  }
  return messages;
}

/** A feed row (what `tail` reads from the store) as a stream transition. */
export function feedRowTransition(row: TransitionFeedRow): StreamTransition {
  let event: EventObject;
  try {
    const parsed = JSON.parse(row.event) as unknown;
    event =
      typeof parsed === 'object' && parsed !== null && 'type' in parsed
        ? (parsed as EventObject)
        : { type: row.eventType };
  } catch {
    event = { type: row.eventType };
  }
  return {
    actorId: row.actorId,
    machineId: row.machineId,
    from: row.fromState,
    to: row.toState,
    event,
    at: row.at,
  };
}

/** An event a chart emitted, as a `lifecycle` message named after its type. */
export function emittedToStreamMessages(notice: {
  actorId: string;
  machineId: string;
  event: EventObject;
  at: number;
}): StreamMessage[] {
  return [
    {
      type: 'lifecycle',
      agent_id: notice.actorId,
      timestamp: iso(notice.at),
      machine_id: notice.machineId,
      event: notice.event.type,
    },
  ];
}

// ---------------------------------------------------------------- writing

/** Where NDJSON goes: a Node Writable, or anything with `write(text)`. */
export interface TextSink {
  write(chunk: string): unknown;
}

export interface NdjsonWriterOptions {
  /**
   * Sends a `heartbeat` for every agent this writer follows (seen, not finished)
   * that has had no message for this long; checked every `heartbeatMs`. Off by default.
   */
  heartbeatMs?: number | undefined;
  /** Clock for timestamps and the heartbeat timer (default: the attached runtime's or the system's). */
  clock?: Clock | undefined;
  /** Validate each message against its schema before writing (default true). */
  validate?: boolean | undefined;
}

/**
 * Writes stream messages as NDJSON. `attach(runtime)` turns every committed
 * transition (and emitted event) of a durable runtime into messages; a message
 * that fails validation is dropped and counted, never written. Writing never waits:
 * the send path must not block on a slow reader, so a Node stream buffers what its
 * reader has not taken yet.
 *
 * @example
 * const writer = new NdjsonWriter(process.stdout, { heartbeatMs: 15_000 });
 * const detach = writer.attach(getRuntime(store));
 */
export class NdjsonWriter {
  private readonly sink: TextSink;
  private readonly heartbeatMs: number | undefined;
  private readonly validate: boolean;
  private clock: Clock | undefined;
  /** Agents followed for heartbeats: id → time of their last message. */
  private readonly followed = new Map<string, { lastAt: number; machineId: string | undefined }>();
  private heartbeatHandle: unknown;
  private readonly detachers = new Set<() => void>();
  /** Messages written, and dropped for failing their schema. */
  written = 0;
  invalid = 0;

  constructor(sink: TextSink, options: NdjsonWriterOptions = {}) {
    this.sink = sink;
    this.heartbeatMs = options.heartbeatMs;
    this.validate = options.validate ?? true;
    this.clock = options.clock;
    if (this.heartbeatMs !== undefined && !(this.heartbeatMs > 0)) {
      throw new RangeError('heartbeatMs must be a positive number of milliseconds');
    }
  }

  private now(): number {
    return this.clock ? this.clock.now() : Date.now();
  }

  /** Writes one message (one line). Returns false when it failed validation and was dropped. */
  write(message: StreamMessage): boolean {
    if (this.validate && !streamMessageSchema.safeParse(message).success) {
      this.invalid++;
      return false;
    }
    this.sink.write(`${JSON.stringify(message)}\n`);
    this.written++;
    this.follow(message);
    return true;
  }

  private follow(message: StreamMessage): void {
    if (this.heartbeatMs === undefined) return;
    if (message.type === 'lifecycle' && isFinishedEvent(message.event)) {
      this.followed.delete(message.agent_id);
      return;
    }
    this.followed.set(message.agent_id, {
      lastAt: Date.parse(message.timestamp),
      machineId: message.machine_id,
    });
    this.armHeartbeat();
  }

  private armHeartbeat(): void {
    if (this.heartbeatHandle !== undefined || this.heartbeatMs === undefined) return;
    const clock = this.clock ?? systemTimers;
    this.heartbeatHandle = clock.setTimeout(() => {
      this.heartbeatHandle = undefined;
      this.beat();
      if (this.followed.size > 0) this.armHeartbeat();
    }, this.heartbeatMs);
  }

  /** Sends the heartbeats that are due now (the timer calls this). */
  beat(): void {
    if (this.heartbeatMs === undefined) return;
    const now = this.now();
    for (const [agentId, { lastAt, machineId }] of [...this.followed]) {
      if (now - lastAt < this.heartbeatMs) continue;
      this.write({
        type: 'heartbeat',
        agent_id: agentId,
        timestamp: iso(now),
        ...(machineId !== undefined ? { machine_id: machineId } : {}),
      });
    }
  }

  /** Streams every transition and emitted event of `runtime`; returns the detach function. */
  attach(runtime: DurableRuntime, options: { emitted?: boolean } = {}): () => void {
    this.clock ??= runtime.clock;
    const emitted = options.emitted ?? true;
    const stop = runtime.observe({
      onTransition: (notice) => {
        for (const m of toStreamMessages(notice)) this.write(m);
      },
      ...(emitted
        ? {
            onEmitted: (notice) => {
              for (const m of emittedToStreamMessages(notice)) this.write(m);
            },
          }
        : {}),
    });
    const detach = () => {
      stop();
      this.detachers.delete(detach);
    };
    this.detachers.add(detach);
    return detach;
  }

  /** Detaches from every runtime and stops heartbeats. */
  close(): void {
    for (const detach of [...this.detachers]) detach();
    if (this.heartbeatHandle !== undefined)
      (this.clock ?? systemTimers).clearTimeout(this.heartbeatHandle);
    this.heartbeatHandle = undefined;
    this.followed.clear();
  }
}

function isFinishedEvent(event: string): boolean {
  return event === 'completed' || event === 'failed' || event === 'terminated';
}

/** Node timers that never hold the process open (heartbeats are not work). */
const systemTimers: Pick<Clock, 'setTimeout' | 'clearTimeout'> = {
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

// ---------------------------------------------------------------- reading

export type ParsedLine = { line: number; message: StreamMessage } | { line: number; error: string };

export interface ParseOptions {
  /** Longest accepted line in characters (default 1 MiB); longer ones are reported, not parsed. */
  maxLineLength?: number | undefined;
}

/**
 * Parses NDJSON from chunks (strings or bytes, split anywhere), validating every
 * line against the message schemas. A bad line is reported with its 1-based
 * number and the stream goes on; blank lines are skipped. Errors name fields and
 * schema rules, never the line's content.
 *
 * @example
 * for await (const r of parseNdjson(process.stdin)) {
 *   if ('error' in r) console.error(`line ${r.line}: ${r.error}`);
 *   else render(r.message);
 * }
 */
export async function* parseNdjson(
  source: AsyncIterable<string | Uint8Array> | Iterable<string | Uint8Array>,
  options: ParseOptions = {},
): AsyncGenerator<ParsedLine> {
  const maxLength = options.maxLineLength ?? 1024 * 1024;
  const decoder = new TextDecoder();
  let pending = '';
  let line = 0;
  let overlong = false;
  for await (const chunk of source) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      line++;
      const text = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      const result = overlong
        ? { line, error: `line longer than ${maxLength} characters` }
        : parseLine(text, line, maxLength);
      overlong = false;
      if (result) yield result;
      newline = pending.indexOf('\n');
    }
    if (pending.length > maxLength) {
      // Drop what cannot become a valid line; report it when its newline arrives.
      overlong = true;
      pending = '';
    }
  }
  pending += decoder.decode();
  if (overlong) yield { line: line + 1, error: `line longer than ${maxLength} characters` };
  else if (pending.length > 0) {
    const result = parseLine(pending, line + 1, maxLength);
    if (result) yield result;
  }
}

/** Parses and validates one line; undefined for a blank line. */
export function parseLine(
  text: string,
  line: number,
  maxLength = 1024 * 1024,
): ParsedLine | undefined {
  requireArg('parseLine', 'text', typeof text === 'string', EXPECTED.string);
  const trimmed = text.endsWith('\r') ? text.slice(0, -1) : text;
  if (trimmed.trim() === '') return undefined;
  if (trimmed.length > maxLength)
    return { line, error: `line longer than ${maxLength} characters` };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return { line, error: 'not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { line, error: 'not a JSON object' };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string' || !(STREAM_MESSAGE_TYPES as readonly string[]).includes(type)) {
    return { line, error: 'unknown message type' };
  }
  const parsed = streamMessageSchema.safeParse(value);
  if (parsed.success) return { line, message: parsed.data };
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(message)'}: ${i.message}`);
  return { line, error: `invalid ${type}: ${issues.join('; ')}` };
}
