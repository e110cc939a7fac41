/**
 * The HTTP face of a store (`agentcharts serve`), built with Hono:
 *
 * - reads: actors (filters, keyset pagination), one actor with its trail, chart
 *   and accepted events, counts per state, the SSE stream of “Agent Status Models” messages,
 *   `/metrics`; `/healthz` is open;
 * - writes: `POST /api/events` and the approval webhook of “Agent State Machine Design”
 *   `POST /api/approval-callback`, HMAC-signed, authorized by the chart's event
 *   metadata and the key;
 * - the dashboard, whose Approve/Deny go through the same signed path.
 *
 * Routes live one resource a file under routes/; what they share (state,
 * authentication, the write path) is built once in kit.ts. See docs/server.md.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { cors } from 'hono/cors';
import { secureHeaders } from 'hono/secure-headers';
import { timeout } from 'hono/timeout';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type DurableRuntime } from '../durable/runtime.ts';
import type { TransitionFeed } from '../observe/feed.ts';
import { typedErrorResponse } from './errors.ts';
import { createKit } from './kit.ts';
import type { ServerEnv } from './middleware/auth.ts';
import { allowedHosts } from './middleware/hosts.ts';
import { requestLog } from './middleware/request-log.ts';
import type { ServerOptions } from './options.ts';
import { registerActorRoutes } from './routes/actors.ts';
import { registerDashboardRoutes } from './routes/dashboard.ts';
import { registerEventRoutes } from './routes/events.ts';
import { registerInspectionRoutes } from './routes/inspection.ts';
import { attachInspectionSocket } from './inspection-socket.ts';
import type { InspectionHub, InspectionSocketSlot } from './inspection.ts';
import { registerMcpRoute } from './routes/mcp.ts';
import { registerOpsRoutes } from './routes/ops.ts';
import { registerPropertyRoutes } from './routes/properties.ts';
import { registerStreamRoute } from './routes/stream.ts';
import type { SseHub } from './sse.ts';
import { requireArg, requireOptions } from '../core/options.ts';
import { AgentchartsError } from '../core/errors.ts';
export type {
  CorsOptions,
  DashboardOptions,
  InspectionOptions,
  RejectionRetention,
  ServerOptions,
} from './options.ts';

export interface AgentchartsServer {
  app: Hono<ServerEnv>;
  runtime: DurableRuntime;
  hub: SseHub;
  feed: TransitionFeed;
  /** What inspected XState apps sent (the local inspector), in bounded memory. */
  inspection: InspectionHub;
  /** @internal The inspection socket's upgrade, set by {@link listen}. */
  inspectionSocket: InspectionSocketSlot;
  /** Resolves when the transition feed knows where every actor stands. */
  ready: Promise<void>;
  /**
   * A one-time sign-in link for the dashboard (`/?signin=<code>`, relative to the
   * server's URL): it opens one reader session, once, within 15 minutes, so the
   * read token itself need not be shown.
   */
  signInLink(): string;
  /** Stops the feed and ends SSE streams. The store and runtime stay open. */
  close(): Promise<void>;
}

/**
 * Builds the server: the Hono app (middleware, one error handler, the routes,
 * one resource a file) plus the runtime, SSE hub and transition feed behind it.
 * Serve `app.fetch` with any adapter, or use {@link listen}.
 *
 * @example
 * const server = createServer({ store, keys, accessToken });
 * const { url } = await listen(server, { port: 7878 });
 */
export function createServer(options: ServerOptions): AgentchartsServer {
  const kit = createKit(options);
  const { logger, runtime, hub, feed, unobserveEmitted, metrics, fail, inspection } = kit;
  const app = new Hono<ServerEnv>();

  app.use('*', allowedHosts(options.allowedHosts ?? []));
  // nosniff, no-referrer, frame and opener policies: hono's own middleware.
  app.use('*', secureHeaders({ crossOriginEmbedderPolicy: false }));
  // Browser apps of the allowed origins may read, with credentials (cookie or ticket).
  if (kit.allowedOrigins.size > 0) {
    app.use(
      '/api/*',
      cors({
        origin: [...kit.allowedOrigins],
        credentials: true,
        allowMethods: ['GET', 'POST'],
        allowHeaders: ['content-type', 'authorization', 'last-event-id'],
        maxAge: 600,
      }),
    );
  }
  // One line per request at INFO into the server's pino, query values redacted
  // (off with `requestLogs: false`, e.g. under a load test).
  if (options.requestLogs !== false) app.use('*', requestLog(logger));
  // A request that takes longer than this gets 504 (the streams are exempt).
  const requestTimeout = timeout(options.requestTimeoutMs ?? 30_000);
  const streams = new Set(['/api/stream', '/api/inspections/stream']);
  app.use('/api/*', async (c, next) =>
    streams.has(c.req.path) ? next() : requestTimeout(c, next),
  );

  app.onError((error, c) => {
    // hono's own refusals (the request timeout's 504) keep their status.
    if (error instanceof HTTPException) {
      return fail(c, error.status, { error: error.status === 504 ? 'timeout' : 'refused' });
    }
    // The runtime's typed errors (invalid event or transition, a lost race, the store).
    const typed = typedErrorResponse(c, error, c.get('fieldPrefix') ?? '', fail, logger);
    if (typed) return typed;
    // A client that went away mid-request is not a server fault.
    const code = (error as { code?: unknown }).code;
    if (
      code === 'ECONNRESET' ||
      code === 'ERR_STREAM_PREMATURE_CLOSE' ||
      error.message === 'aborted'
    ) {
      logger.info({ path: c.req.path }, 'client disconnected mid-request');
      return fail(c, 400, { error: 'client_disconnected' });
    }
    const requestId = randomUUID();
    logger.error({ err: error, path: c.req.path, requestId }, 'unhandled error');
    return fail(c, 500, { error: 'internal', requestId });
  });
  app.notFound((c) => fail(c, 404, { error: 'not_found' }));

  registerOpsRoutes(app, kit);
  registerPropertyRoutes(app, kit);
  registerActorRoutes(app, kit);
  registerStreamRoute(app, kit);
  registerEventRoutes(app, kit);
  registerDashboardRoutes(app, kit);
  registerInspectionRoutes(app, kit);
  const closeMcp = registerMcpRoute(app, kit);

  return {
    app,
    runtime,
    hub,
    feed,
    inspection,
    inspectionSocket: kit.inspectionSocket,
    ready: feed.ready,
    signInLink: () => `/?signin=${kit.signInLinks.issue()}`,
    async close() {
      kit.stopRetention();
      feed.stop();
      unobserveEmitted();
      hub.close();
      metrics.stop();
      await closeMcp();
    },
  };
}

/** The server could not listen: the port is taken or not ours to bind. */
export class ListenError extends AgentchartsError {
  override name = 'ListenError';
  readonly host: string;
  readonly port: number;
  readonly reason: 'EADDRINUSE' | 'EACCES' | 'EADDRNOTAVAIL';
  constructor(host: string, port: number, reason: 'EADDRINUSE' | 'EACCES' | 'EADDRNOTAVAIL') {
    super(
      'LISTEN',
      reason === 'EADDRINUSE'
        ? `port ${port} on ${host} is taken (another server listens there); choose another with --port`
        : reason === 'EACCES'
          ? `port ${port} on ${host} may not be bound by this user; choose one above 1023 with --port`
          : `address ${host} is not an address of this machine; choose another with --host`,
    );
    this.host = host;
    this.port = port;
    this.reason = reason;
  }
}

/** A running HTTP server. */
export interface ListeningServer {
  url: string;
  port: number;
  /**
   * The inspection socket XState apps send to (`createWebSocketInspector({ url })`),
   * or undefined when it is off (`inspection.enabled: false`, or `@hono/node-ws`
   * is not installed).
   */
  inspectUrl: string | undefined;
  server: ServerType;
  close(): Promise<void>;
}

/**
 * Serves an {@link AgentchartsServer} over HTTP (default `127.0.0.1`, port 0 =
 * any free port) once its feed is ready.
 */
export async function listen(
  server: AgentchartsServer,
  options: {
    port?: number;
    hostname?: string;
    /** Open connections at most; more wait in the kernel's backlog. Default 10,000. */
    maxConnections?: number;
  } = {},
): Promise<ListeningServer> {
  requireArg(
    'listen',
    'server',
    typeof (server as { ready?: { then?: unknown } } | null)?.ready?.then === 'function',
    'a server (what createServer returns)',
  );
  requireOptions('listen', options);
  await server.ready;
  const hostname = options.hostname ?? '127.0.0.1';
  const port0 = options.port ?? 0;
  const http = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: server.app.fetch, port: port0, hostname }, () => resolve(s));
    s.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' || error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL'
          ? new ListenError(hostname, port0, error.code)
          : error,
      ),
    );
  });
  // Slow clients cannot hold a connection open forever: headers within 10 s,
  // a whole request within 60 s (streams are responses, not requests).
  if ('headersTimeout' in http) {
    http.headersTimeout = 10_000;
    http.requestTimeout = 60_000;
  }
  http.maxConnections = options.maxConnections ?? 10_000;
  const port = (http.address() as AddressInfo).port;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  const socket = server.inspectionSocket.enabled
    ? await attachInspectionSocket(
        server.app as never,
        http,
        server.inspectionSocket,
        server.inspection.limits.maxMessageBytes,
        server.runtime.logger,
      )
    : undefined;
  return {
    url,
    port,
    inspectUrl: socket ? `${url.replace(/^http/, 'ws')}/inspect` : undefined,
    server: http,
    async close() {
      socket?.close();
      await server.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        if ('closeAllConnections' in http) http.closeAllConnections();
      });
    },
  };
}
