/**
 * The local inspector: the inspection socket plain XState apps send to
 * (`createWebSocketInspector({ url: 'ws://127.0.0.1:7878/inspect' })` from
 * `@statelyai/inspect`), and the reads the dashboard's inspector pages make.
 *
 * The socket writes into the server's memory, so it is guarded: a browser page
 * of another site may not open it (its `Origin` must be this server's, a
 * loopback one, or allow-listed), and a connection that does not come from
 * loopback must carry a read credential (the session cookie, the bearer token,
 * or a signed request), as every read does.
 */
import type { Context, Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import { streamSSE } from 'hono/streaming';
import type { AnyStateMachine } from 'xstate';
import { machineFromDefinition, InvalidDefinitionError } from '../../inspect/definition.ts';
import { clientAddress, isLoopbackAddress } from '../client-address.ts';
import { highlightedDiagram } from '../diagram.ts';
import { inspectedSummary, type InspectedActor } from '../inspection.ts';
import type { ServerKit } from '../kit.ts';
import { hostOf, LOOPBACK_HOSTS } from '../middleware/hosts.ts';
import { credentialOf, type ServerEnv } from '../middleware/auth.ts';

/** The colour of an inspected actor's current state. */
const INSPECTED_COLOR = '#1d4ed8';
/** Timeline entries an actor's page shows (the newest), and the bytes they may cost. */
const PAGE_ENTRIES = 500;
const PAGE_BYTES = 8 * 1024 * 1024;
/** Dashboard streams of inspector changes open at once, in all and per credential. */
const MAX_WATCHERS = 256;
const MAX_WATCHERS_PER_CREDENTIAL = 16;
/**
 * Inspection connections one credential may hold open (the apps on loopback
 * count as one): each may have a frame of up to twice `maxMessageBytes` in flight.
 */
const MAX_SOCKETS_PER_CREDENTIAL = 16;
/**
 * Bytes the sockets of one credential may deliver per second; past it they stop
 * being read until the next second (the sender waits, the server's memory does
 * not churn through a flood of megabyte messages).
 */
const BYTES_PER_SECOND_PER_CREDENTIAL = 4 * 1024 * 1024;

/** A socket that can stop being read for a while (`ws`'s pause and resume). */
interface PausableSocket {
  pause?(): void;
  resume?(): void;
  readonly readyState?: number;
}
/** Definitions larger than this are not drawn (a chart that size is not readable anyway). */
const MAX_DRAWN_DEFINITION = 256 * 1024;

/**
 * Machines rebuilt from definitions, shared by the actors that sent the same
 * one, bounded by the text of the definitions they were built from.
 */
class DefinitionCache {
  private readonly entries = new Map<string, AnyStateMachine | InvalidDefinitionError>();
  private bytes = 0;
  constructor(private readonly maxBytes = 4 * 1024 * 1024) {}
  get(definition: string): AnyStateMachine | InvalidDefinitionError {
    const cached = this.entries.get(definition);
    if (cached !== undefined) return cached;
    let built: AnyStateMachine | InvalidDefinitionError;
    try {
      built = machineFromDefinition(definition);
    } catch (error) {
      built =
        error instanceof InvalidDefinitionError
          ? error
          : new InvalidDefinitionError('rejected_by_xstate', { cause: error });
    }
    for (const oldest of this.entries.keys()) {
      if (this.bytes + definition.length <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= oldest.length;
    }
    this.entries.set(definition, built);
    this.bytes += definition.length;
    return built;
  }
}

/** The newest entries of a timeline, at most {@link PAGE_ENTRIES} and {@link PAGE_BYTES}. */
function newestEntries(actor: InspectedActor): InspectedActor['entries'] {
  let bytes = 0;
  let first = actor.entries.length;
  while (first > 0 && actor.entries.length - first < PAGE_ENTRIES) {
    bytes += actor.entryBytes[first - 1] ?? 0;
    if (bytes > PAGE_BYTES && first < actor.entries.length) break;
    first--;
  }
  return actor.entries.slice(first);
}

export function registerInspectionRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { inspection, inspectionSocket, options, fail, auth, logger, allowedOrigins } = kit;
  const enabled = inspectionSocket.enabled;
  const machines = new DefinitionCache();
  let watchers = 0;
  const watchersOf = new Map<string, number>();

  /** A browser may open the socket only from this server's page, loopback, or an allowed origin. */
  const originAllowed = (c: Context, origin: string): boolean => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    const host = c.req.header('host');
    if (host !== undefined && url.host === host.toLowerCase()) return true;
    if (LOOPBACK_HOSTS.includes(hostOf(url.host))) return true;
    return allowedOrigins.has(url.origin);
  };

  const socketGuard = createMiddleware<ServerEnv>(async (c, next) => {
    if (!enabled) return fail(c, 404, { error: 'not_found' });
    const origin = c.req.header('origin');
    if (origin !== undefined && !originAllowed(c, origin)) {
      return fail(c, 403, { error: 'cross_origin' });
    }
    // Behind a trusted proxy every peer looks local: then a request the proxy
    // forwarded (Forwarded, X-Forwarded-For or X-Real-IP) is not.
    const client = clientAddress(c, options.trustProxy === true);
    if (!client.forwarded && isLoopbackAddress(client.address)) {
      c.set('principal', { kind: 'public' });
      await next();
      return undefined;
    }
    return auth.wholeStore(c, next);
  });
  /** Open inspection connections per credential (loopback apps count as one). */
  const socketsOf = new Map<string, number>();
  /** Bytes each credential's sockets delivered in the current second. */
  const rates = new Map<string, { second: number; bytes: number }>();
  /** Counts a message against its credential's rate; pauses the socket until the next second past it. */
  const metered = (owner: string, bytes: number, socket: PausableSocket | undefined): void => {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    let rate = rates.get(owner);
    if (rate?.second !== second) {
      rate = { second, bytes: 0 };
      rates.set(owner, rate);
    }
    rate.bytes += bytes;
    if (rate.bytes <= BYTES_PER_SECOND_PER_CREDENTIAL || !socket?.pause || !socket.resume) return;
    socket.pause();
    setTimeout(() => socket.resume?.(), (second + 1) * 1000 - now).unref();
  };

  app.get('/inspect', socketGuard, async (c) => {
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      return fail(c, 426, {
        error: 'upgrade_required',
        hint: "the inspection socket: createWebSocketInspector({ url: 'ws://<this host>/inspect' })",
      });
    }
    const upgrade = inspectionSocket.upgrade;
    if (!upgrade) return fail(c, 503, { error: 'inspection_socket_unavailable' });
    const owner = credentialOf(
      c.var.principal,
      clientAddress(c, options.trustProxy === true).address,
    );
    const open = socketsOf.get(owner) ?? 0;
    if (open >= MAX_SOCKETS_PER_CREDENTIAL) {
      return fail(c, 429, { error: 'too_many_inspection_connections', retryable: true });
    }
    socketsOf.set(owner, open + 1);
    let closed = false;
    const release = () => {
      if (closed) return;
      closed = true;
      const left = (socketsOf.get(owner) ?? 1) - 1;
      if (left > 0) socketsOf.set(owner, left);
      else socketsOf.delete(owner);
    };
    const connection = inspection.openConnection();
    logger.info({ connection }, 'inspection connection opened');
    const response = await upgrade(c, {
      onMessage(event, ws) {
        const size = typeof event.data === 'string' ? event.data.length : 0;
        metered(owner, size, ws.raw as PausableSocket | undefined);
        // The protocol is JSON text; a binary frame is refused and counted.
        const refused =
          typeof event.data === 'string'
            ? inspection.receive(connection, event.data)
            : inspection.refuse('invalid_message');
        if (refused) logger.debug({ connection, refused }, 'inspection message refused');
      },
      onClose() {
        release();
        if (!socketsOf.has(owner)) rates.delete(owner);
        logger.info({ connection }, 'inspection connection closed');
      },
    });
    if (!response) release();
    return response ?? fail(c, 400, { error: 'upgrade_failed' });
  });

  app.get('/api/inspections', auth.wholeStore, (c) => {
    if (!enabled) return fail(c, 404, { error: 'not_found' });
    return c.json({
      actors: inspection.list().map(inspectedSummary),
      limits: inspection.limits,
      stats: { ...inspection.stats, bytes: inspection.bytes },
    });
  });

  /** Server-Sent Events naming the inspected actors that changed (the dashboard re-reads them). */
  app.get('/api/inspections/stream', auth.wholeStore, (c) => {
    if (!enabled) return fail(c, 404, { error: 'not_found' });
    const owner = credentialOf(
      c.var.principal,
      clientAddress(c, options.trustProxy === true).address,
    );
    const mine = watchersOf.get(owner) ?? 0;
    if (watchers >= MAX_WATCHERS || mine >= MAX_WATCHERS_PER_CREDENTIAL) {
      return fail(c, 429, { error: 'too_many_streams', retryable: true });
    }
    watchers += 1;
    watchersOf.set(owner, mine + 1);
    return streamSSE(c, async (stream) => {
      const changed = new Set<string>();
      let flushing: ReturnType<typeof setTimeout> | undefined;
      const flush = () => {
        flushing = undefined;
        const ids = [...changed];
        changed.clear();
        stream.writeSSE({ event: 'change', data: JSON.stringify({ ids }) }).catch(() => {});
      };
      const unsubscribe = inspection.subscribe((id) => {
        // At most 100 ids a message; past that the page re-reads everything.
        if (changed.size < 100) changed.add(id);
        flushing ??= setTimeout(flush, 100);
      });
      const keepAlive = setInterval(() => {
        stream.write(': keep-alive\n\n').catch(() => {});
      }, 15_000);
      try {
        await stream.writeSSE({ event: 'ready', data: '{}' });
        await new Promise<void>((resolve) => stream.onAbort(resolve));
      } finally {
        watchers -= 1;
        const left = (watchersOf.get(owner) ?? 1) - 1;
        if (left > 0) watchersOf.set(owner, left);
        else watchersOf.delete(owner);
        unsubscribe();
        clearInterval(keepAlive);
        if (flushing !== undefined) clearTimeout(flushing);
      }
    });
  });

  const diagramOf = (actor: InspectedActor) => {
    if (actor.definition === null && actor.machine === null) {
      return { diagram: null, diagramError: 'no_definition' };
    }
    if (actor.machine === null && (actor.definition?.length ?? 0) > MAX_DRAWN_DEFINITION) {
      return { diagram: null, diagramError: 'too_large' };
    }
    const machine = actor.machine ?? machines.get(actor.definition ?? '');
    if (machine instanceof InvalidDefinitionError) {
      return { diagram: null, diagramError: machine.problem };
    }
    const value = actor.snapshot?.value;
    const stateValue =
      typeof value === 'string' || (typeof value === 'object' && value !== null)
        ? (value as string)
        : machine.root.initial?.target[0]?.key;
    try {
      return {
        diagram: highlightedDiagram(machine, stateValue ?? {}, INSPECTED_COLOR),
        diagramError: null,
      };
    } catch {
      return { diagram: null, diagramError: 'rejected_by_xstate' };
    }
  };

  app.get('/api/inspections/:id', auth.wholeStore, (c) => {
    if (!enabled) return fail(c, 404, { error: 'not_found' });
    const id = c.req.param('id');
    const actor = inspection.get(id);
    if (!actor) return fail(c, 404, { error: 'inspected_actor_not_found', id });
    const parent = actor.parentId !== null ? inspection.get(actor.parentId) : undefined;
    return c.json({
      actor: inspectedSummary(actor),
      snapshot: actor.snapshot,
      ...diagramOf(actor),
      entries: newestEntries(actor),
      parent: parent ? inspectedSummary(parent) : null,
      children: inspection.childrenOf(actor.id).map(inspectedSummary),
    });
  });
}
