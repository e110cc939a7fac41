/**
 * Server-Sent Events fan-out. Each message is encoded once, when it is
 * published, into shared blocks of memory; a flush writes the frames of one turn
 * of the event loop to every client in one chunk per filter; a ring buffer of
 * recent messages lets a reconnecting client resume from `Last-Event-ID`, and
 * that replay is written from the same shared blocks (views, never copies,
 * whatever the filter), so a hundred clients resuming from 0 cost the buffer
 * once, not a hundred times. A client that stops reading is disconnected once
 * 8 MiB wait for it, instead of buffering without bound; what waits for it is
 * views of the shared blocks.
 */
import { coversActor } from '../core/scope.ts';

/** What a client subscribed to: everything, one actor, or one machine, within a scope. */
export interface StreamFilter {
  actorId?: string | undefined;
  machineId?: string | undefined;
  /** The actor patterns of the credential (`refund-*`): nothing outside them is sent. */
  scope?: readonly string[] | undefined;
}

/** One message to publish: the JSON `data` plus what filters match on. */
export interface StreamItem {
  actorId: string;
  machineId: string;
  data: unknown;
}

interface Buffered {
  id: number;
  actorId: string;
  machineId: string;
  /** The encoded frame: a view into a shared block. */
  frame: Uint8Array;
}

/** Where one client's frames go: a web stream, or Node's response directly. */
interface Sink {
  write(chunk: Uint8Array): void;
  /** Bytes written but not yet taken by the client. */
  queued(): number;
  end(): void;
}

interface Client {
  filter: StreamFilter;
  /** The credential that opened it (the token, a key): caps and budgets count per credential. */
  credential: string;
  /** The dashboard session it belongs to, if any: it ends with that session. */
  session: string | undefined;
  key: string;
  sink: Sink;
  closed: boolean;
  close: () => void;
}

/** What a Node response needs for a stream (`http.ServerResponse` has it). */
export interface NodeResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: Uint8Array): boolean;
  end(): unknown;
  readonly writableLength: number;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  flushHeaders?(): void;
}

/** What a sent queue entry is replaced with (its chunk may be collected). */
const EMPTY = new Uint8Array(0);

/** Whether `b` starts where `a` ends, in the same memory. */
function adjacent(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.byteOffset + a.byteLength === b.byteOffset;
}

/**
 * A Node response as a sink. Once the response pushes back (`write` returns
 * false), chunks wait in a queue of their own until it drains, and a chunk that
 * continues the last one in memory (the next frames of the same shared block)
 * extends it instead of adding an entry: a client that stops reading costs a
 * few views of shared blocks, not three buffered writes per message (chunked
 * encoding) as Node's own queue would.
 */
function nodeSink(response: NodeResponseLike): Sink {
  const queue: Uint8Array[] = [];
  let head = 0;
  let queuedBytes = 0;
  let blocked = false;
  const pump = () => {
    blocked = false;
    while (head < queue.length) {
      const chunk = queue[head] as Uint8Array;
      queue[head++] = EMPTY;
      queuedBytes -= chunk.byteLength;
      if (!response.write(chunk)) {
        blocked = true;
        response.once('drain', pump);
        return;
      }
    }
    queue.length = 0;
    head = 0;
  };
  return {
    write(chunk) {
      if (!blocked) {
        if (!response.write(chunk)) {
          blocked = true;
          response.once('drain', pump);
        }
        return;
      }
      const last = queue.length - 1;
      const tail = queue[last];
      if (last >= head && tail && adjacent(tail, chunk)) {
        queue[last] = new Uint8Array(
          tail.buffer,
          tail.byteOffset,
          tail.byteLength + chunk.byteLength,
        );
      } else {
        queue.push(chunk);
      }
      queuedBytes += chunk.byteLength;
    },
    queued: () => response.writableLength + queuedBytes,
    end: () => {
      response.end();
    },
  };
}

const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export interface SseHubOptions {
  /** Messages kept for `Last-Event-ID` resumption. Default 10,000. */
  bufferSize?: number;
  /** Bytes of messages kept for resumption, whatever their number. Default 16 MiB. */
  maxBufferBytes?: number;
  /** Streams one credential (the read token, one key) may hold open, across its sessions. Default 256. */
  maxStreamsPerPrincipal?: number;
  /** Streams open in all. Default 10,000. */
  maxStreams?: number;
  /** Bytes a client may have queued before it is dropped. Default 8 MiB. */
  maxQueuedBytes?: number;
  /** Keep-alive comment interval. Default 15 s. */
  keepAliveMs?: number;
  /** Longest a client stays connected before it is asked to reconnect (0 = no limit). */
  maxConnectionMs?: number;
}

const encoder = new TextEncoder();
/** Size of the shared blocks frames are encoded into. */
const BLOCK_BYTES = 64 * 1024;

function filterKey(filter: StreamFilter): string {
  return `${filter.actorId ?? ''}\u0000${filter.machineId ?? ''}\u0000${filter.scope?.join('\u0001') ?? '\u0002'}`;
}

function matches(filter: StreamFilter, item: { actorId: string; machineId: string }): boolean {
  return (
    (filter.actorId === undefined || filter.actorId === item.actorId) &&
    (filter.machineId === undefined || filter.machineId === item.machineId) &&
    coversActor(filter.scope, item.actorId)
  );
}

/** Adjacent views of one block joined into one view; others stay apart. */
function coalesce(frames: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const frame of frames) {
    const last = out[out.length - 1];
    if (
      last &&
      last.buffer === frame.buffer &&
      last.byteOffset + last.byteLength === frame.byteOffset
    ) {
      out[out.length - 1] = new Uint8Array(
        last.buffer,
        last.byteOffset,
        last.byteLength + frame.byteLength,
      );
    } else out.push(frame);
  }
  return out;
}

function concat(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 1 && pieces[0]) return pieces[0];
  return Buffer.concat(pieces);
}

/** A stream of SSE frames for many clients. */
export class SseHub {
  private readonly clients = new Set<Client>();
  private readonly ring: Buffered[] = [];
  private pending: Buffered[] = [];
  private flushScheduled = false;
  private nextId = 1;
  private readonly bufferSize: number;
  private readonly maxBufferBytes: number;
  private ringBytes = 0;
  private block = new Uint8Array(0);
  private blockUsed = 0;
  private readonly maxStreamsPerPrincipal: number;
  private readonly maxStreams: number;
  private readonly perPrincipal = new Map<string, number>();
  private readonly maxQueuedBytes: number;
  private readonly keepAlive: ReturnType<typeof setInterval> | undefined;
  private readonly maxConnectionMs: number;
  private closed = false;
  /** Clients dropped for not reading fast enough. */
  dropped = 0;

  constructor(options: SseHubOptions = {}) {
    this.bufferSize = Math.max(1, options.bufferSize ?? 10_000);
    this.maxBufferBytes = Math.max(1024, options.maxBufferBytes ?? 16 * 1024 * 1024);
    this.maxStreamsPerPrincipal = options.maxStreamsPerPrincipal ?? 256;
    this.maxStreams = options.maxStreams ?? 10_000;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 8 * 1024 * 1024;
    this.maxConnectionMs = options.maxConnectionMs ?? 0;
    const keepAliveMs = options.keepAliveMs ?? 15_000;
    if (keepAliveMs > 0) {
      this.keepAlive = setInterval(() => this.broadcastRaw(': keep-alive\n\n'), keepAliveMs);
      this.keepAlive.unref();
    }
  }

  /** Connected clients. */
  get size(): number {
    return this.clients.size;
  }

  /** Id of the last message published (0 before any). */
  get lastId(): number {
    return this.nextId - 1;
  }

  /** Bytes of messages the resume buffer holds. */
  get bufferedBytes(): number {
    return this.ringBytes;
  }

  /** The frame's UTF-8 bytes, in the current shared block (a new one when it is full). */
  private encodeFrame(text: string): Uint8Array {
    const size = Buffer.byteLength(text, 'utf8');
    if (this.block.byteLength - this.blockUsed < size) {
      this.block = new Uint8Array(Math.max(BLOCK_BYTES, size));
      this.blockUsed = 0;
    }
    const view = this.block.subarray(this.blockUsed, this.blockUsed + size);
    encoder.encodeInto(text, view);
    this.blockUsed += size;
    return view;
  }

  /** Queues a message; it is written to matching clients at the end of this turn. */
  publish(item: StreamItem): number {
    const id = this.nextId++;
    const frame = this.encodeFrame(`id: ${id}\ndata: ${JSON.stringify(item.data)}\n\n`);
    const buffered: Buffered = { id, actorId: item.actorId, machineId: item.machineId, frame };
    this.ring.push(buffered);
    this.ringBytes += frame.byteLength;
    if (this.ring.length > this.bufferSize * 2 || this.ringBytes > this.maxBufferBytes) {
      // Trim in bulk (to the count, and to half the bytes) so the buffer costs O(1)
      // per message on average and never holds more than its byte bound.
      let drop = 0;
      while (
        drop < this.ring.length - 1 &&
        (this.ring.length - drop > this.bufferSize || this.ringBytes > this.maxBufferBytes / 2)
      ) {
        this.ringBytes -= (this.ring[drop] as Buffered).frame.byteLength;
        drop++;
      }
      this.ring.splice(0, drop);
    }
    this.pending.push(buffered);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return id;
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0 || this.clients.size === 0) return;
    // One chunk per filter, shared by every client with that filter.
    const chunks = new Map<string, Uint8Array | null>();
    for (const client of this.clients) {
      let chunk = chunks.get(client.key);
      if (chunk === undefined) {
        const frames = batch.filter((m) => matches(client.filter, m)).map((m) => m.frame);
        chunk = frames.length > 0 ? concat(coalesce(frames)) : null;
        chunks.set(client.key, chunk);
      }
      if (chunk) this.write(client, chunk);
    }
  }

  private write(client: Client, chunk: Uint8Array): void {
    if (client.closed) return;
    try {
      client.sink.write(chunk);
    } catch {
      client.close();
      return;
    }
    if (client.sink.queued() > this.maxQueuedBytes) {
      // The client is not reading: drop it; it resumes with Last-Event-ID from the buffer.
      this.dropped++;
      client.close();
    }
  }

  /**
   * The first chunks of a stream: the retry hint, then the buffered messages
   * after `lastEventId` as views of the shared blocks (adjacent ones joined), or
   * a resync when they are gone or more than a client may queue.
   */
  private head(filter: StreamFilter, lastEventId: number | undefined): Uint8Array[] {
    const hello = encoder.encode(`retry: 1000\n: connected ${this.lastId}\n\n`);
    if (lastEventId === undefined || lastEventId >= this.lastId) return [hello];
    const resync = () => [
      hello,
      encoder.encode(`event: resync\ndata: {"lastEventId":${this.lastId}}\n\n`),
    ];
    const oldest = this.ring[0]?.id ?? this.nextId;
    if (lastEventId + 1 < oldest) return resync();
    // Messages not yet flushed are written by the next flush; replay only those before them.
    const flushedUpTo = this.pending[0]?.id ?? this.nextId;
    const frames: Uint8Array[] = [];
    let bytes = 0;
    for (let i = Math.max(0, lastEventId + 1 - oldest); i < this.ring.length; i++) {
      const m = this.ring[i] as Buffered;
      if (m.id >= flushedUpTo) break;
      if (!matches(filter, m)) continue;
      bytes += m.frame.byteLength;
      // Past what a client may queue, the client reloads its view instead.
      if (bytes > this.maxQueuedBytes) return resync();
      frames.push(m.frame);
    }
    return [hello, ...coalesce(frames)];
  }

  /** The head goes out whole (it is bounded by `maxQueuedBytes` already). */
  private writeHead(client: Client, chunks: readonly Uint8Array[]): void {
    try {
      for (const chunk of chunks) client.sink.write(chunk);
    } catch {
      client.close();
    }
  }

  /**
   * Whether `principal` (a credential) may open one more stream: under its own
   * cap and the total. The server answers 429 otherwise.
   */
  admits(principal: string): boolean {
    return (
      this.clients.size < this.maxStreams &&
      (this.perPrincipal.get(principal) ?? 0) < this.maxStreamsPerPrincipal
    );
  }

  /** Ends every stream a credential opened (its key went away). */
  closePrincipal(principal: string): void {
    for (const client of [...this.clients]) if (client.credential === principal) client.close();
  }

  /** Ends every stream of a dashboard session (it logged out or was pushed out). */
  closeSession(session: string): void {
    for (const client of [...this.clients]) if (client.session === session) client.close();
  }

  /** Streams one credential holds now. */
  streamsOf(principal: string): number {
    return this.perPrincipal.get(principal) ?? 0;
  }

  private add(
    filter: StreamFilter,
    credential: string,
    session: string | undefined,
    sink: Sink,
    lastEventId: number | undefined,
    signal: AbortSignal | undefined,
  ): Client {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const client: Client = {
      filter,
      credential,
      session,
      key: filterKey(filter),
      sink,
      closed: false,
      close: () => {
        if (client.closed) return;
        client.closed = true;
        if (this.clients.delete(client)) {
          const left = (this.perPrincipal.get(credential) ?? 1) - 1;
          if (left > 0) this.perPrincipal.set(credential, left);
          else this.perPrincipal.delete(credential);
        }
        if (timer !== undefined) clearTimeout(timer);
        try {
          sink.end();
        } catch {
          // already closed
        }
      },
    };
    if (this.closed) {
      client.closed = true;
      sink.end();
      return client;
    }
    this.clients.add(client);
    this.perPrincipal.set(credential, (this.perPrincipal.get(credential) ?? 0) + 1);
    this.writeHead(client, this.head(filter, lastEventId));
    if (this.maxConnectionMs > 0) {
      timer = setTimeout(() => client.close(), this.maxConnectionMs);
      timer.unref();
    }
    signal?.addEventListener('abort', () => client.close(), { once: true });
    return client;
  }

  /**
   * Streams straight into a Node response (no web stream per client): what the
   * server uses under `@hono/node-server`. `headers` are added to the SSE ones
   * (CORS, for a cross-origin client).
   */
  connectNode(options: {
    filter: StreamFilter;
    principal?: string | undefined;
    session?: string | undefined;
    lastEventId?: number | undefined;
    response: NodeResponseLike;
    headers?: Readonly<Record<string, string>> | undefined;
  }): void {
    const { response } = options;
    response.writeHead(200, { ...SSE_HEADERS, ...options.headers });
    response.flushHeaders?.();
    const client = this.add(
      options.filter,
      options.principal ?? '',
      options.session,
      nodeSink(response),
      options.lastEventId,
      undefined,
    );
    response.once('close', () => client.close());
  }

  private broadcastRaw(text: string): void {
    const chunk = encoder.encode(text);
    for (const client of this.clients) this.write(client, chunk);
  }

  /**
   * Opens a stream for one client as a web `Response`. `lastEventId` (the
   * `Last-Event-ID` header or `?lastEventId=`) replays buffered messages after
   * it; if they are gone from the buffer, a `resync` event tells the client to
   * reload its view.
   */
  connect(options: {
    filter: StreamFilter;
    principal?: string | undefined;
    session?: string | undefined;
    lastEventId?: number | undefined;
    signal?: AbortSignal | undefined;
    headers?: Readonly<Record<string, string>> | undefined;
  }): Response {
    let client: Client | undefined;
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          client = this.add(
            options.filter,
            options.principal ?? '',
            options.session,
            {
              write: (chunk) => controller.enqueue(chunk),
              queued: () => this.maxQueuedBytes - (controller.desiredSize ?? this.maxQueuedBytes),
              end: () => controller.close(),
            },
            options.lastEventId,
            options.signal,
          );
        },
        cancel: () => {
          client?.close();
        },
      },
      { highWaterMark: this.maxQueuedBytes, size: (chunk) => chunk.byteLength },
    );
    return new Response(stream, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
  }

  /** Ends every stream and stops the keep-alive timer. */
  close(): void {
    this.closed = true;
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    for (const client of [...this.clients]) client.close();
  }
}
