/**
 * What inspected XState apps told the server, kept in bounded memory. An app
 * that calls `createWebSocketInspector({ url })` from `@statelyai/inspect`
 * sends three kinds of JSON messages over the inspection socket:
 *
 * - `@xstate.actor`: an actor started (`sessionId`, `name`, `parentId`,
 *   `rootId`, its machine config as JSON in `definition`, its first `snapshot`);
 * - `@xstate.event`: an event reached an actor (`event`, `sourceId`);
 * - `@xstate.snapshot`: the actor's snapshot after an event (`snapshot`, `event`).
 *
 * Each actor keeps its latest snapshot and a timeline of its last events and
 * snapshots. Memory is bounded four ways: the number of actors (the least
 * recently updated leaves first), entries per actor (the oldest drop), the size
 * of one message (a larger one is refused), and the bytes of everything kept
 * (least recently updated actors leave until it fits). Bytes are counted as the
 * server holds them — the estimated heap of the parsed values kept, not the
 * length of their JSON text (`[{},{},…]` costs twenty times its text) — and a
 * message nested deeper than an event may be is refused. Nothing here touches
 * the store: inspected actors are not durable.
 */
import type { UpgradeWebSocket } from 'hono/ws';
import type { AnyStateMachine } from 'xstate';
import * as z from 'zod';
import { MAX_EVENT_DEPTH } from '../strict/events.ts';
import { jsonHeapBytes, jsonTextHeapBytes } from './heap-size.ts';

/** Where the inspection socket's upgrade comes from, once `listen` attached one. */
export interface InspectionSocketSlot {
  /** Whether the server takes inspection connections at all. */
  enabled: boolean;
  upgrade: UpgradeWebSocket | undefined;
}

export interface InspectionLimits {
  /** Actors kept at most; past it the least recently updated one leaves. Default 1,000. */
  maxActors?: number | undefined;
  /** Timeline entries per actor; past it the oldest drop. Default 1,000. */
  maxEntriesPerActor?: number | undefined;
  /**
   * Largest message accepted, in bytes of its JSON text; one whose parsed values
   * would take more than eight times that in memory is refused too. Default 1 MiB.
   */
  maxMessageBytes?: number | undefined;
  /**
   * Memory the kept messages may take in all (their estimated heap); past it the
   * least recently updated actors leave. Default 32 MiB.
   */
  maxTotalBytes?: number | undefined;
}

/** What a snapshot message says of an actor's state. */
export interface InspectedSnapshot {
  value: unknown;
  status: string | null;
  context: unknown;
  output: unknown;
  error: unknown;
}

/** One line of an inspected actor's timeline. */
export interface InspectionEntry {
  /** Position in the actor's timeline (1, 2, …; kept when older entries drop). */
  seq: number;
  kind: 'event' | 'snapshot';
  /** When the server received it (ms since the epoch). */
  at: number;
  eventType: string;
  event: unknown;
  /** The inspector's id of the actor that sent the event, if it said. */
  sourceId: string | null;
  /** The snapshot after the event (`kind: 'snapshot'`). */
  snapshot: InspectedSnapshot | null;
}

/** An actor an inspected app announced. */
export interface InspectedActor {
  /** Unique in this server: the connection number and the app's session id (`2~x:0`). */
  id: string;
  /** The app's own session id (`x:0`, or `durable:<id>` for a durable actor). */
  sessionId: string;
  /** Which inspection connection sent it (0: this process). */
  connection: number;
  name: string;
  /** `id` of the parent actor, if it has one. */
  parentId: string | null;
  rootId: string | null;
  /** The machine config as JSON, as the inspector sent it (absent for non-machine actors). */
  definition: string | null;
  createdAt: number;
  updatedAt: number;
  snapshot: InspectedSnapshot | null;
  entries: InspectionEntry[];
  /** Entries dropped from the front of the timeline. */
  droppedEntries: number;
  /** Bytes of the messages kept for it. */
  bytes: number;
  nextSeq: number;
  /** Message sizes, parallel to `entries`. */
  entryBytes: number[];
  definitionBytes: number;
  /** The machine itself, when the actor runs in this process (its definition needs no rebuilding). */
  machine: AnyStateMachine | null;
}

/** Why a message was refused. */
export type InspectionRefusal = 'too_large' | 'too_deep' | 'invalid_json' | 'invalid_message';

/** What one timeline entry costs besides its values (the entry object, its fields). */
const ENTRY_OVERHEAD = 256;

const ID = z.string().min(1).max(500);
const optionalId = z
  .union([ID, z.null()])
  .optional()
  .transform((v) => v ?? null);
const eventObject = z.looseObject({ type: z.string().max(1_000) });
const snapshotObject = z.looseObject({}).optional();

const messageSchema = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('@xstate.actor'),
    sessionId: ID,
    name: z.string().max(500).optional(),
    parentId: optionalId,
    rootId: optionalId,
    definition: z.string().optional(),
    snapshot: snapshotObject,
  }),
  z.looseObject({
    type: z.literal('@xstate.event'),
    sessionId: ID,
    event: eventObject,
    sourceId: optionalId,
  }),
  z.looseObject({
    type: z.literal('@xstate.snapshot'),
    sessionId: ID,
    event: eventObject.optional(),
    snapshot: z.looseObject({}),
  }),
]);

/** A message as the hub reads it. */
export type InspectionMessage = z.infer<typeof messageSchema>;

function snapshotOf(raw: Record<string, unknown> | undefined): InspectedSnapshot | null {
  if (raw === undefined) return null;
  return {
    value: raw['value'] ?? null,
    status: typeof raw['status'] === 'string' ? raw['status'] : null,
    context: raw['context'] ?? null,
    output: raw['output'] ?? null,
    error: raw['error'] ?? null,
  };
}

/** The summary of an inspected actor, as the list shows it. */
export function inspectedSummary(actor: InspectedActor) {
  return {
    id: actor.id,
    sessionId: actor.sessionId,
    connection: actor.connection,
    name: actor.name,
    parentId: actor.parentId,
    rootId: actor.rootId,
    value: actor.snapshot?.value ?? null,
    status: actor.snapshot?.status ?? null,
    hasDefinition: actor.definition !== null || actor.machine !== null,
    entries: actor.nextSeq - 1,
    droppedEntries: actor.droppedEntries,
    createdAt: actor.createdAt,
    updatedAt: actor.updatedAt,
  };
}

/** Inspected actors in bounded memory, and who wants to hear of changes. */
export class InspectionHub {
  readonly limits: Required<{ [K in keyof InspectionLimits]: number }>;
  /** In insertion order of last update: the first is the least recently updated. */
  private readonly actors = new Map<string, InspectedActor>();
  private readonly listeners = new Set<(actorId: string) => void>();
  private totalBytes = 0;
  private connections = 0;
  /** Counters since the server started. */
  readonly stats = {
    received: 0,
    refused: { too_large: 0, too_deep: 0, invalid_json: 0, invalid_message: 0 } as Record<
      InspectionRefusal,
      number
    >,
    actorsDropped: 0,
    entriesDropped: 0,
  };

  constructor(limits: InspectionLimits = {}) {
    const positive = (value: number | undefined, fallback: number) =>
      value !== undefined && Number.isInteger(value) && value > 0 ? value : fallback;
    this.limits = {
      maxActors: positive(limits.maxActors, 1_000),
      maxEntriesPerActor: positive(limits.maxEntriesPerActor, 1_000),
      maxMessageBytes: positive(limits.maxMessageBytes, 1024 * 1024),
      maxTotalBytes: positive(limits.maxTotalBytes, 32 * 1024 * 1024),
    };
  }

  /** Memory one message may cost: eight times the text limit (an array of empty objects costs twenty). */
  private get maxMessageCost(): number {
    return Math.min(this.limits.maxTotalBytes, this.limits.maxMessageBytes * 8);
  }

  /** A number for a new inspection connection (1, 2, …); 0 is this process. */
  openConnection(): number {
    this.connections += 1;
    return this.connections;
  }

  /** Bytes (estimated heap) of the messages kept now. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** Calls `listener` with an actor's id whenever it changes; returns the unsubscribe. */
  subscribe(listener: (actorId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Reads one message of the inspection protocol from connection `connection`;
   * returns why it was refused, or undefined when it was kept.
   */
  receive(connection: number, text: string): InspectionRefusal | undefined {
    this.stats.received += 1;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > this.limits.maxMessageBytes) return this.refuse('too_large');
    // What parsing it would cost, read off the text: the costly ones are never parsed.
    const estimate = jsonTextHeapBytes(text, MAX_EVENT_DEPTH + 2);
    if (estimate === undefined) return this.refuse('too_deep');
    if (estimate > this.maxMessageCost) return this.refuse('too_large');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return this.refuse('invalid_json');
    }
    const parsed = messageSchema.safeParse(json);
    if (!parsed.success) return this.refuse('invalid_message');
    // Kept at the estimate read off its text (strings at two bytes a character).
    this.record(connection, parsed.data, estimate);
    return undefined;
  }

  /**
   * What keeping a message given as values costs (the estimated heap of its
   * event, its snapshot, its definition; a socket's messages are estimated from
   * their text instead), or undefined when one of them nests deeper than an event
   * may (`MAX_EVENT_DEPTH`): such a value would make every later read of
   * the actor fail, so it is never kept.
   */
  cost(message: InspectionMessage): number | undefined {
    let bytes = ENTRY_OVERHEAD;
    for (const part of [
      'event' in message ? message.event : undefined,
      'snapshot' in message ? message.snapshot : undefined,
      'definition' in message ? message.definition : undefined,
    ]) {
      if (part === undefined) continue;
      const size = jsonHeapBytes(part, MAX_EVENT_DEPTH);
      if (size === undefined) return undefined;
      bytes += size;
    }
    return bytes;
  }

  /** Keeps one well-formed message (what `receive` does after checking it). */
  record(
    connection: number,
    message: InspectionMessage,
    bytes: number,
    machine?: AnyStateMachine,
  ): void {
    const id = `${connection}~${message.sessionId}`;
    const now = Date.now();
    let actor = this.actors.get(id);
    if (message.type === '@xstate.actor') {
      if (actor) this.remove(actor, false);
      const definition = message.definition ?? null;
      actor = {
        id,
        sessionId: message.sessionId,
        connection,
        name: message.name ?? message.sessionId,
        parentId: message.parentId === null ? null : `${connection}~${message.parentId}`,
        rootId: message.rootId === null ? null : `${connection}~${message.rootId}`,
        definition,
        createdAt: now,
        updatedAt: now,
        snapshot: snapshotOf(message.snapshot),
        entries: [],
        droppedEntries: 0,
        bytes,
        nextSeq: 1,
        entryBytes: [],
        definitionBytes: bytes,
        machine: machine ?? null,
      };
      this.actors.set(id, actor);
      this.totalBytes += bytes;
    } else {
      if (!actor) {
        // An event for an actor whose announcement was never seen: keep it under its id.
        actor = {
          id,
          sessionId: message.sessionId,
          connection,
          name: message.sessionId,
          parentId: null,
          rootId: null,
          definition: null,
          createdAt: now,
          updatedAt: now,
          snapshot: null,
          entries: [],
          droppedEntries: 0,
          bytes: 0,
          nextSeq: 1,
          entryBytes: [],
          definitionBytes: 0,
          machine: null,
        };
      } else {
        this.actors.delete(id);
      }
      this.actors.set(id, actor);
      const snapshot = message.type === '@xstate.snapshot' ? snapshotOf(message.snapshot) : null;
      if (snapshot) actor.snapshot = snapshot;
      actor.entries.push({
        seq: actor.nextSeq++,
        kind: message.type === '@xstate.event' ? 'event' : 'snapshot',
        at: now,
        eventType: message.event?.type ?? '',
        event: message.event ?? null,
        sourceId:
          message.type === '@xstate.event' && message.sourceId !== null
            ? `${connection}~${message.sourceId}`
            : null,
        snapshot,
      });
      actor.entryBytes.push(bytes);
      actor.bytes += bytes;
      actor.updatedAt = now;
      this.totalBytes += bytes;
      while (actor.entries.length > this.limits.maxEntriesPerActor) this.dropOldestEntry(actor);
    }
    this.enforceLimits(actor);
    for (const listener of this.listeners) listener(id);
  }

  /** Every actor, most recently updated first. */
  list(): InspectedActor[] {
    return [...this.actors.values()].reverse();
  }

  get(id: string): InspectedActor | undefined {
    return this.actors.get(id);
  }

  /** The actors whose parent is `id`. */
  childrenOf(id: string): InspectedActor[] {
    return [...this.actors.values()].filter((a) => a.parentId === id);
  }

  /** Forgets every actor. */
  clear(): void {
    this.actors.clear();
    this.totalBytes = 0;
  }

  /** Counts a message refused before it could be read (a binary frame). */
  refuse(reason: InspectionRefusal): InspectionRefusal {
    this.stats.refused[reason] += 1;
    return reason;
  }

  private dropOldestEntry(actor: InspectedActor): void {
    actor.entries.shift();
    const bytes = actor.entryBytes.shift() ?? 0;
    actor.bytes -= bytes;
    this.totalBytes -= bytes;
    actor.droppedEntries += 1;
    this.stats.entriesDropped += 1;
  }

  private remove(actor: InspectedActor, dropped = true): void {
    this.actors.delete(actor.id);
    this.totalBytes -= actor.bytes;
    if (dropped) this.stats.actorsDropped += 1;
  }

  /** Drops the least recently updated actors (never `current`) until the limits hold. */
  private enforceLimits(current: InspectedActor): void {
    for (const oldest of this.actors.values()) {
      const over =
        this.actors.size > this.limits.maxActors || this.totalBytes > this.limits.maxTotalBytes;
      if (!over) return;
      if (oldest !== current) this.remove(oldest);
    }
    // Only `current` is left over the byte budget: its oldest entries go.
    while (this.totalBytes > this.limits.maxTotalBytes && current.entries.length > 0) {
      this.dropOldestEntry(current);
    }
  }
}
