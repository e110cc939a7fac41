/**
 * The shared state of one server (runtime, verifier, sessions, SSE hub, feed),
 * its authentication middleware (middleware/auth.ts) and write path
 * (writes.ts), built once per `createServer` and handed to every route module.
 */
import type { Logger } from 'pino';
import * as z from 'zod';
import { checkOptions, storeOption } from '../core/options.ts';
import { type Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { charts as catalogCharts } from '../../machines/index.ts';
import { getRuntime } from '../durable/open.ts';
import { feedTransitions } from '../observe/feed.ts';
import { createMetrics } from '../observe/metrics.ts';
import { emittedToStreamMessages, toStreamMessages } from '../observe/stream.ts';
import { RequestVerifier } from './auth.ts';
import {
  SESSION_COOKIE,
  SESSION_TTL_MS,
  elkLayoutDir,
  loadAsset,
  mermaidBundlePath,
  type ErrorBody,
} from './http.ts';
import { authMiddleware } from './middleware/auth.ts';
import type { ServerOptions } from './options.ts';
import { InspectionHub, type InspectionSocketSlot } from './inspection.ts';
import { SessionStore, type SessionPrincipal } from './sessions.ts';
import { SignInLinks } from './sign-in-links.ts';
import { SseHub } from './sse.ts';
import { StreamTickets } from './stream-tickets.ts';
import { FailureThrottle } from './throttle.ts';
import { createDispatch } from './writes.ts';

/**
 * Everything the routes share: the runtime, the verifier, sessions, the SSE hub,
 * and the helpers that authenticate, authorise and answer (one place, so every
 * route refuses the same way).
 */
export function createKit(options: ServerOptions) {
  checkOptions(
    'createServer',
    options,
    z.object({
      store: storeOption,
      keys: z.array(z.object({ id: z.string(), secret: z.string(), role: z.string() }), {
        message: 'an array of keys ({ id, secret, role }); [] for a read-only server',
      }),
    }),
  );
  const chartList = [...(options.charts ?? catalogCharts)];
  // A server reads any actor of the store: the ones it loads stay in memory up to a limit.
  const runtime = getRuntime(options.store, {
    charts: chartList,
    maxLiveActors: options.maxLiveActors ?? 10_000,
  });
  for (const chart of chartList) runtime.registerChart(chart);
  const logger = options.logger ?? runtime.logger;
  const verifier = new RequestVerifier(options.keys, {
    toleranceSeconds: options.toleranceSeconds,
    // Nonces live in the store: a captured request stays refused after a restart
    // and on every server sharing the store.
    nonces: (request) => options.store.rememberRequest(request),
    requestsPerKey: options.requestsPerKey,
    nowSeconds: options.nowSeconds,
  });
  // Approvers sign in to the dashboard as themselves; a reader's session never approves.
  const dashboardApprovals =
    options.dashboard?.approvals !== false && options.keys.some((k) => k.role === 'approver');
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const hub = new SseHub(options.sse);
  const metrics = createMetrics(runtime);
  const sessions = new SessionStore({ ttlMs: options.dashboard?.sessionTtlMs ?? SESSION_TTL_MS });
  const streamTickets = new StreamTickets();
  // Wrong secrets (sign-in, MCP bearer keys, the read token), per client and per key.
  const throttle = new FailureThrottle();
  const assets = {
    html: loadAsset('index.html'),
    js: loadAsset('app.js'),
    css: loadAsset('app.css'),
  };
  const mermaidPath = mermaidBundlePath();
  // mermaid's ELK layout (optional): readable charts, labels that do not overlap.
  const elkDir = mermaidPath !== undefined ? elkLayoutDir() : undefined;
  // What inspected XState apps sent, in bounded memory; the socket is attached by `listen`.
  const inspection = new InspectionHub(options.inspection);
  const inspectionSocket: InspectionSocketSlot = {
    enabled: options.inspection?.enabled !== false,
    upgrade: undefined,
  };
  const allowedOrigins = new Set((options.cors?.origins ?? []).map((o) => new URL(o).origin));
  /** mermaid's bundle, read once on first request. */
  const mermaidCache: { js?: string | undefined } = {};

  const feed = feedTransitions(runtime, {
    pollMs: options.pollMs,
    onTransition: (t) => {
      for (const data of toStreamMessages(t)) {
        hub.publish({ actorId: t.actorId, machineId: t.machineId, data });
      }
    },
    onError: (error) => logger.error({ err: error }, 'transition feed failed'),
  });
  // Events a chart emits (an approval reminder) reach the stream as `lifecycle` messages.
  const unobserveEmitted = runtime.observe({
    onEmitted: (notice) => {
      for (const data of emittedToStreamMessages(notice)) {
        hub.publish({ actorId: notice.actorId, machineId: notice.machineId, data });
      }
    },
  });
  if (options.fireTimers) runtime.startTimerPolling(1000);
  const stopRetention = retainRejections(options, logger);

  // ---- helpers ----------------------------------------------------------

  const fail = (c: Context, status: number, body: ErrorBody) =>
    c.json(body, status as 400 | 401 | 403 | 404 | 409 | 413 | 421 | 429 | 500 | 503 | 504);

  /** Ends a dashboard session, its streams and its stream tickets. */
  const endSession = (id: string | undefined): void => {
    if (id === undefined) return;
    sessions.close(id);
    hub.closeSession(id);
    streamTickets.revokeSession(id);
  };

  const startSession = (c: Context, principal: SessionPrincipal): void => {
    // A new sign-in replaces the session the browser had (no fixation).
    endSession(getCookie(c, SESSION_COOKIE));
    const { id, evicted } = sessions.open(principal);
    // The credential's oldest sessions made room: they end whole.
    for (const old of evicted) endSession(old);
    setCookie(c, SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      maxAge: Math.floor(sessions.ttlMs / 1000),
      // Over TLS (directly, or at a trusted proxy) the cookie never travels in clear.
      secure: publicOrigin(c).startsWith('https:'),
    });
  };

  /** The origin the browser sees: the proxy's when it is trusted. */
  const publicOrigin = (c: Context): string => {
    const url = new URL(c.req.url);
    if (!options.trustProxy) return url.origin;
    const proto =
      c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() ?? url.protocol.slice(0, -1);
    const host = c.req.header('x-forwarded-host')?.split(',')[0]?.trim() ?? url.host;
    return `${proto}://${host}`;
  };

  const auth = authMiddleware({
    publicRead: options.publicRead === true,
    accessToken: options.accessToken,
    sessions,
    verifier,
    maxBodyBytes,
    dashboardApprovals,
    fail,
    publicOrigin,
    throttle,
    trustProxy: options.trustProxy === true,
    endSession,
  });
  const dispatch = createDispatch({ fail, logger, runtime });

  return {
    options,
    chartList,
    runtime,
    logger,
    verifier,
    dashboardApprovals,
    maxBodyBytes,
    hub,
    metrics,
    sessions,
    assets,
    mermaidPath,
    mermaidCache,
    elkDir,
    feed,
    unobserveEmitted,
    fail,
    startSession,
    endSession,
    publicOrigin,
    throttle,
    signInLinks: new SignInLinks(),
    auth,
    dispatch,
    inspection,
    inspectionSocket,
    allowedOrigins,
    streamTickets,
    stopRetention,
  };
}

/**
 * Prunes the store's rejection rows on a timer (age, then count): refused events
 * cost bounded storage, however many a key sends. Returns the stop.
 */
function retainRejections(options: ServerOptions, logger: Logger): () => void {
  const {
    maxAgeMs = 7 * 24 * 60 * 60 * 1000,
    maxRows = 100_000,
    everyMs = 60_000,
  } = options.rejections ?? {};
  if (everyMs <= 0) return () => undefined;
  const prune = () => {
    options.store
      .pruneRejections({ before: Date.now() - maxAgeMs, keep: maxRows })
      .catch((error: unknown) => logger.warn({ err: error }, 'rejection retention failed'));
  };
  const timer = setInterval(prune, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** What {@link createKit} returns. */
export type ServerKit = ReturnType<typeof createKit>;
