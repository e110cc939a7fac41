/**
 * Server-Sent Events fan-out. Messages published in one turn of the event loop
 * are framed once and written to every client in one chunk; a ring buffer of
 * recent messages lets a reconnecting client resume from `Last-Event-ID`; a
 * client that stops reading is disconnected instead of buffering without bound.
 */

/** What a client subscribed to: everything, one actor, or one machine. */
export interface StreamFilter {
  actorId?: string | undefined;
  machineId?: string | undefined;
}

/** One message to publish: the JSON `data` plus what filters match on. */
export interface StreamItem {
  actorId: string;
  machineId: string;
  data: unknown;
}

interface Buffered extends StreamItem {
  id: number;
  frame: string;
  bytes: number;
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
  /** Who opened it (a session, a key, the token): caps and logout act on it. */
  principal: string;
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
  once(event: 'close', listener: () => void): unknown;
  flushHeaders?(): void;
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
  /** Streams one principal may hold open. Default 256. */
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

function filterKey(filter: StreamFilter): string {
  return `${filter.actorId ?? ''}\u0000${filter.machineId ?? ''}`;
}

function matches(filter: StreamFilter, item: StreamItem): boolean {
  return (
    (filter.actorId === undefined || filter.actorId === item.actorId) &&
    (filter.machineId === undefined || filter.machineId === item.machineId)
  );
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

  /** Queues a message; it is written to matching clients at the end of this turn. */
  publish(item: StreamItem): number {
    const id = this.nextId++;
    const frame = `id: ${id}\ndata: ${JSON.stringify(item.data)}\n\n`;
    const buffered: Buffered = { ...item, id, frame, bytes: Buffer.byteLength(frame, 'utf8') };
    this.ring.push(buffered);
    this.ringBytes += buffered.bytes;
    if (this.ring.length > this.bufferSize * 2 || this.ringBytes > this.maxBufferBytes) {
      // Trim in bulk (to the count, and to half the bytes) so the buffer costs O(1)
      // per message on average and never holds more than its byte bound.
      let drop = 0;
      while (
        drop < this.ring.length - 1 &&
        (this.ring.length - drop > this.bufferSize || this.ringBytes > this.maxBufferBytes / 2)
      ) {
        this.ringBytes -= (this.ring[drop] as Buffered).bytes;
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
    const chunks = new Map<string, Uint8Array | null>();
    for (const client of this.clients) {
      let chunk = chunks.get(client.key);
      if (chunk === undefined) {
        const text = batch
          .filter((m) => matches(client.filter, m))
          .map((m) => m.frame)
          .join('');
        chunk = text.length > 0 ? encoder.encode(text) : null;
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

  /** The first bytes of a stream: retry hint, and the buffered messages after `lastEventId`. */
  private head(filter: StreamFilter, lastEventId: number | undefined): Uint8Array {
    const head: string[] = [`retry: 1000\n: connected ${this.lastId}\n\n`];
    if (lastEventId !== undefined && lastEventId < this.lastId) {
      const oldest = this.ring[0]?.id ?? this.nextId;
      const resync = `event: resync\ndata: {"lastEventId":${this.lastId}}\n\n`;
      if (lastEventId + 1 < oldest) {
        head.push(resync);
      } else {
        // Messages not yet flushed are written by the next flush; replay only those
        // before them, and no more than a client may have queued: past that the
        // client reloads its view (resync) instead of one huge first chunk.
        const flushedUpTo = this.pending[0]?.id ?? this.nextId;
        let bytes = 0;
        for (const m of this.ring) {
          if (m.id > lastEventId && m.id < flushedUpTo && matches(filter, m)) {
            bytes += m.bytes;
            if (bytes > this.maxQueuedBytes) {
              head.length = 1;
              head.push(resync);
              break;
            }
            head.push(m.frame);
          }
        }
      }
    }
    return encoder.encode(head.join(''));
  }

  /**
   * Whether `principal` may open one more stream: under its own cap and the
   * total. The server answers 429 otherwise.
   */
  admits(principal: string): boolean {
    return (
      this.clients.size < this.maxStreams &&
      (this.perPrincipal.get(principal) ?? 0) < this.maxStreamsPerPrincipal
    );
  }

  /** Ends every stream a principal opened (its session ended, its key went away). */
  closePrincipal(principal: string): void {
    for (const client of [...this.clients]) if (client.principal === principal) client.close();
  }

  private add(
    filter: StreamFilter,
    principal: string,
    sink: Sink,
    lastEventId: number | undefined,
    signal: AbortSignal | undefined,
  ): Client {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const client: Client = {
      filter,
      principal,
      key: filterKey(filter),
      sink,
      closed: false,
      close: () => {
        if (client.closed) return;
        client.closed = true;
        if (this.clients.delete(client)) {
          const left = (this.perPrincipal.get(principal) ?? 1) - 1;
          if (left > 0) this.perPrincipal.set(principal, left);
          else this.perPrincipal.delete(principal);
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
    sink.write(this.head(filter, lastEventId));
    this.clients.add(client);
    this.perPrincipal.set(principal, (this.perPrincipal.get(principal) ?? 0) + 1);
    if (this.maxConnectionMs > 0) {
      timer = setTimeout(() => client.close(), this.maxConnectionMs);
      timer.unref();
    }
    signal?.addEventListener('abort', () => client.close(), { once: true });
    return client;
  }

  /**
   * Streams straight into a Node response (no web stream per client): what the
   * server uses under `@hono/node-server`.
   */
  connectNode(options: {
    filter: StreamFilter;
    principal?: string | undefined;
    lastEventId?: number | undefined;
    response: NodeResponseLike;
  }): void {
    const { response } = options;
    response.writeHead(200, { ...SSE_HEADERS });
    response.flushHeaders?.();
    const client = this.add(
      options.filter,
      options.principal ?? '',
      {
        write: (chunk) => {
          response.write(chunk);
        },
        queued: () => response.writableLength,
        end: () => {
          response.end();
        },
      },
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
    lastEventId?: number | undefined;
    signal?: AbortSignal | undefined;
  }): Response {
    let client: Client | undefined;
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          client = this.add(
            options.filter,
            options.principal ?? '',
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
    return new Response(stream, { status: 200, headers: { ...SSE_HEADERS } });
  }

  /** Ends every stream and stops the keep-alive timer. */
  close(): void {
    this.closed = true;
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    for (const client of [...this.clients]) client.close();
  }
}
