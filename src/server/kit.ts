/**
 * The shared state of one server (runtime, verifier, sessions, SSE hub, feed)
 * and the helpers that authenticate and authorise requests, built once per
 * `createServer` and handed to every route module.
 */
import { type Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { charts as catalogCharts } from '../../machines/index.ts';
import { getRuntime } from '../durable/open.ts';
import { feedTransitions } from '../observe/feed.ts';
import { createMetrics } from '../observe/metrics.ts';
import { emittedToStreamMessages, toStreamMessages } from '../observe/stream.ts';
import { RequestVerifier, keyCoversActor, type ApiKey, type SignatureFailure } from './auth.ts';
import {
  SESSION_COOKIE,
  SESSION_TTL_MS,
  headerGetter,
  incomingOf,
  loadAsset,
  mermaidBundlePath,
  readBody,
  sameToken,
  type ErrorBody,
} from './http.ts';
import type { ServerOptions } from './options.ts';
import { SessionStore, type SessionPrincipal } from './sessions.ts';
import { SseHub } from './sse.ts';
import { createWrites } from './writes.ts';

/**
 * Everything the routes share: the runtime, the verifier, sessions, the SSE hub,
 * and the helpers that authenticate, authorise and answer (one place, so every
 * route refuses the same way).
 */
export function createKit(options: ServerOptions) {
  const chartList = [...(options.charts ?? catalogCharts)];
  const runtime = getRuntime(options.store, { charts: chartList });
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
  const assets = {
    html: loadAsset('index.html'),
    js: loadAsset('app.js'),
    css: loadAsset('app.css'),
  };
  const mermaidPath = mermaidBundlePath();
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

  // ---- helpers ----------------------------------------------------------

  const fail = (c: Context, status: number, body: ErrorBody) =>
    c.json(body, status as 400 | 401 | 403 | 404 | 409 | 413 | 421 | 429 | 500 | 503 | 504);

  const signatureFailure = (c: Context, error: SignatureFailure) =>
    error === 'rate_limited' ? fail(c, 429, { error, retryable: true }) : fail(c, 401, { error });

  /** What a signature covers: method, path with query, and the raw body. */
  const signedTarget = (c: Context, body: Uint8Array) => {
    const url = new URL(c.req.url);
    return { method: c.req.method, path: `${url.pathname}${url.search}`, body };
  };

  /** Keys of verified signed reads, by request: a key's actor scope applies to what it reads. */
  const signedReaders = new WeakMap<Request, ApiKey>();

  /** The principal of the request's dashboard session, if it has a live one. */
  const sessionOf = (c: Context): SessionPrincipal | undefined =>
    sessions.get(getCookie(c, SESSION_COOKIE));
  const hasSession = (c: Context): boolean => sessionOf(c) !== undefined;

  const startSession = (c: Context, principal: SessionPrincipal): void => {
    // A new sign-in replaces the session the browser had (no fixation).
    sessions.close(getCookie(c, SESSION_COOKIE));
    const id = sessions.open(principal);
    setCookie(c, SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      maxAge: Math.floor(sessions.ttlMs / 1000),
      // Over TLS (directly, or at a trusted proxy) the cookie never travels in clear.
      secure: publicOrigin(c).startsWith('https:'),
    });
  };

  /** The approver signed in on the request's session, if any. */
  const approverOf = (c: Context): string | undefined => {
    const principal = sessionOf(c);
    return principal?.kind === 'approver' ? principal.keyId : undefined;
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

  /** A browser form post: same origin, JSON body. */
  const sameOriginJson = (c: Context): Response | undefined => {
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== publicOrigin(c)) {
      return fail(c, 403, { error: 'cross_origin' });
    }
    if (!c.req.header('content-type')?.startsWith('application/json')) {
      return fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'content_type' });
    }
    return undefined;
  };

  /** Reads: bearer token, dashboard session, or a signed request (empty body). */
  const readAccess = async (c: Context): Promise<Response | undefined> => {
    if (options.publicRead) return undefined;
    const auth = c.req.header('authorization');
    if (auth?.startsWith('Bearer ') && options.accessToken !== undefined) {
      if (sameToken(auth.slice(7).trim(), options.accessToken)) return undefined;
      return fail(c, 401, { error: 'invalid_token' });
    }
    if (hasSession(c)) return undefined;
    const header = headerGetter(c);
    if (RequestVerifier.isSigned(header)) {
      const body = await readBody(c, maxBodyBytes);
      if (body === undefined) return tooLarge(c);
      const result = await verifier.verify(header, signedTarget(c, body));
      if (!result.ok) return signatureFailure(c, result.error);
      signedReaders.set(c.req.raw, result.key);
      return undefined;
    }
    return fail(c, 401, { error: 'unauthorized' });
  };

  /** The key of a signed read whose key is limited to some actors; undefined otherwise. */
  const readScope = (c: Context): ApiKey | undefined => {
    const key = signedReaders.get(c.req.raw);
    return key?.actors !== undefined ? key : undefined;
  };

  /** Who holds a stream, for the per-principal cap and for ending it at logout. */
  const streamPrincipal = (c: Context): string => {
    const key = signedReaders.get(c.req.raw);
    if (key) return `key:${key.id}`;
    const session = getCookie(c, SESSION_COOKIE);
    if (session !== undefined && sessions.get(session)) return `session:${session}`;
    const address = incomingOf(c)?.socket.remoteAddress ?? 'unknown';
    if (c.req.header('authorization') !== undefined) return `token:${address}`;
    return `address:${address}`;
  };

  /** A scoped key reading an actor outside its list: 403, before anything is loaded. */
  const actorOutOfScope = (c: Context, actorId: string): Response | undefined => {
    const scope = readScope(c);
    if (!scope || keyCoversActor(scope, actorId)) return undefined;
    return fail(c, 403, {
      error: 'forbidden',
      keyId: scope.id,
      reason: 'actor_not_allowed_for_key',
      actorId,
    });
  };

  /** Reads over every actor (counts, metrics, the whole stream) are not for a scoped key. */
  const wholeStoreRead = async (c: Context): Promise<Response | undefined> => {
    const denied = await readAccess(c);
    if (denied) return denied;
    const scope = readScope(c);
    if (scope) {
      return fail(c, 403, { error: 'forbidden', keyId: scope.id, reason: 'scope_too_narrow' });
    }
    return undefined;
  };

  const tooLarge = (c: Context) =>
    fail(c, 413, { error: 'payload_too_large', maxBytes: maxBodyBytes });
  const { errorResponse, dispatch, signedBody } = createWrites({
    fail,
    logger,
    runtime,
    verifier,
    signatureFailure,
    signedTarget,
    maxBodyBytes,
    tooLarge,
  });

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
    feed,
    unobserveEmitted,
    fail,
    signatureFailure,
    signedTarget,
    signedReaders,
    sessionOf,
    hasSession,
    startSession,
    approverOf,
    publicOrigin,
    sameOriginJson,
    readAccess,
    readScope,
    streamPrincipal,
    actorOutOfScope,
    wholeStoreRead,
    errorResponse,
    dispatch,
    signedBody,
    tooLarge,
  };
}

/** What {@link createKit} returns. */
export type ServerKit = ReturnType<typeof createKit>;
