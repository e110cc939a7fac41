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
import { highlightedDiagram } from '../diagram.ts';
import { incomingOf } from '../http.ts';
import { inspectedSummary, type InspectedActor } from '../inspection.ts';
import type { ServerKit } from '../kit.ts';
import { hostOf, LOOPBACK_HOSTS } from '../middleware/hosts.ts';
import type { ServerEnv } from '../middleware/auth.ts';

/** The colour of an inspected actor's current state. */
const INSPECTED_COLOR = '#1d4ed8';
/** Timeline entries an actor's page shows (the newest). */
const PAGE_ENTRIES = 500;
/** Dashboard streams of inspector changes open at once. */
const MAX_WATCHERS = 256;

function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return plain === '::1' || /^127\.\d+\.\d+\.\d+$/.test(plain);
}

/** Machines rebuilt from definitions, shared by the actors that sent the same one. */
class DefinitionCache {
  private readonly entries = new Map<string, AnyStateMachine | InvalidDefinitionError>();
  constructor(private readonly max = 200) {}
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
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(definition, built);
    return built;
  }
}

export function registerInspectionRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { inspection, inspectionSocket, options, fail, auth, logger, allowedOrigins } = kit;
  const enabled = inspectionSocket.enabled;
  const machines = new DefinitionCache();
  let watchers = 0;

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
    const peer = incomingOf(c)?.socket.remoteAddress;
    // Behind a trusted proxy every peer looks local: then only forwarded-free requests are.
    const forwarded = options.trustProxy === true && c.req.header('x-forwarded-for') !== undefined;
    if (isLoopbackAddress(peer) && !forwarded) {
      await next();
      return undefined;
    }
    return auth.wholeStore(c, next);
  });

  app.get('/inspect', socketGuard, async (c) => {
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      return fail(c, 426, {
        error: 'upgrade_required',
        hint: "the inspection socket: createWebSocketInspector({ url: 'ws://<this host>/inspect' })",
      });
    }
    const upgrade = inspectionSocket.upgrade;
    if (!upgrade) return fail(c, 503, { error: 'inspection_socket_unavailable' });
    const connection = inspection.openConnection();
    logger.info({ connection }, 'inspection connection opened');
    const response = await upgrade(c, {
      onMessage(event) {
        // The protocol is JSON text; a binary frame is refused and counted.
        const refused =
          typeof event.data === 'string'
            ? inspection.receive(connection, event.data)
            : inspection.refuse('invalid_message');
        if (refused) logger.debug({ connection, refused }, 'inspection message refused');
      },
      onClose() {
        logger.info({ connection }, 'inspection connection closed');
      },
    });
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
    if (watchers >= MAX_WATCHERS) return fail(c, 429, { error: 'too_many_streams' });
    watchers += 1;
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
      entries: actor.entries.slice(-PAGE_ENTRIES),
      parent: parent ? inspectedSummary(parent) : null,
      children: inspection.childrenOf(actor.id).map(inspectedSummary),
    });
  });
}
