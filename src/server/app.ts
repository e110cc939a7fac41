/**
 * The HTTP face of a store (`agentcharts serve`), built with Hono:
 *
 * - reads: actors (filters, keyset pagination), one actor with its trail, chart
 *   and accepted events, counts per state, the SSE stream of seed 003 messages,
 *   `/metrics`; `/healthz` is open;
 * - writes: `POST /api/events` and seed 001's approval webhook
 *   `POST /api/approval-callback`, HMAC-signed, authorized by the key's role;
 * - the dashboard, whose Approve/Deny go through the same signed path.
 *
 * See docs/server.md.
 */
import type { AnyEventObject } from 'xstate';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serve, type ServerType } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Logger } from 'pino';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { z } from 'zod';
import { charts as catalogCharts } from '../../machines/index.ts';
import type { ChartDefinition } from '../core/chart.ts';
import { decodeActorRow } from '../durable/codec.ts';
import { getRuntime } from '../durable/open.ts';
import { type DurableRuntime } from '../durable/runtime.ts';
import { createMetrics } from '../observe/metrics.ts';
import { emittedToStreamMessages, toStreamMessages } from '../observe/stream.ts';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  StoreError,
} from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorRow, Store, TransitionRow } from '../store/types.ts';
import {
  RequestVerifier,
  authorizeEvent,
  keyCoversActor,
  type AuthorizationFailure,
  fromHeaders,
  signRequest,
  type ApiKey,
  type HeaderGetter,
  type SignatureFailure,
} from './auth.ts';
import { highlightedDiagram } from './diagram.ts';
import { SseHub, type SseHubOptions } from './sse.ts';
import { badge, cardLabels, CATEGORIES, type StateCategory } from './badges.ts';
import { agentsStatusRoute } from './routes/agents-status.ts';
import { SessionStore, type SessionPrincipal } from './sessions.ts';
import { allowedHosts } from './middleware/hosts.ts';
import { secureHeaders } from 'hono/secure-headers';
import { labelsFor } from '../core/meanings.ts';
import { feedTransitions, type TransitionFeed } from '../observe/feed.ts';

export interface DashboardOptions {
  /**
   * Whether approvers may sign in to the dashboard (with their key id and secret)
   * to approve or deny there, in their own name. Default true. The read token's
   * session never approves.
   */
  approvals?: boolean | undefined;
  /** How long a dashboard session lasts (ms). Default 12 hours. */
  sessionTtlMs?: number | undefined;
}

export interface ServerOptions {
  store: Store;
  /** Charts actors may run. Default: the six catalog charts. */
  charts?: Iterable<ChartDefinition> | undefined;
  /** Signing keys for writes (and signed reads). */
  keys: readonly ApiKey[];
  /**
   * Token for reads and the dashboard: `Authorization: Bearer <token>`, or once
   * through `/?token=<token>`, which starts a cookie session for the browser.
   */
  accessToken?: string | undefined;
  /** Let anyone read (e.g. behind an authenticating proxy). Default false. */
  publicRead?: boolean | undefined;
  dashboard?: DashboardOptions | undefined;
  /**
   * Host names the server answers for besides loopback (`localhost`, `127.0.0.1`,
   * `::1`); a request for any other host gets 421 (DNS rebinding). A leading `.`
   * allows subdomains; `*` allows any host.
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Behind a TLS-terminating proxy: take the scheme and host from
   * `X-Forwarded-Proto`/`X-Forwarded-Host` for the origin check and mark the
   * session cookie `Secure`. Default false.
   */
  trustProxy?: boolean | undefined;
  /** Freshness window of signed requests, seconds. Default 300. */
  toleranceSeconds?: number | undefined;
  /** Signed requests each key may make per freshness window (then 429). Default 100,000. */
  requestsPerKey?: number | undefined;
  /** Largest accepted request body. Default 64 KiB. */
  maxBodyBytes?: number | undefined;
  /** How often to look for transitions written by other processes (ms); 0 = off. Default 1000. */
  pollMs?: number | undefined;
  /** Fire due durable timers from this process (approval timeouts, retries). Default false. */
  fireTimers?: boolean | undefined;
  sse?: SseHubOptions | undefined;
  logger?: Logger | undefined;
  /** Seconds clock for signature freshness (tests). */
  nowSeconds?: (() => number) | undefined;
}

export interface AgentchartsServer {
  app: Hono;
  runtime: DurableRuntime;
  hub: SseHub;
  feed: TransitionFeed;
  /** Resolves when the transition feed knows where every actor stands. */
  ready: Promise<void>;
  /** Stops the feed and ends SSE streams. The store and runtime stay open. */
  close(): Promise<void>;
}

const SESSION_COOKIE = 'agentcharts_session';
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const TRAIL_LIMIT = 200;
const ACTOR_ID = z.string().min(1).max(200);

/** The JSON error body of every refusal: a code plus structured fields, never a payload value. */
type ErrorBody = { error: string } & Record<string, unknown>;

function zodField(error: z.ZodError, prefix = ''): { field: string; reason: string } {
  const issue = error.issues[0];
  const path = issue?.path.map(String).join('.') ?? '';
  const field =
    issue?.code === 'unrecognized_keys' && issue.keys[0] !== undefined
      ? [path, issue.keys[0]].filter(Boolean).join('.')
      : path;
  return {
    field: `${prefix}${field || '(body)'}`,
    reason:
      issue?.code === 'unrecognized_keys'
        ? 'unexpected_field'
        : issue?.code === 'invalid_type' && issue.input === undefined
          ? 'missing_field'
          : (issue?.code ?? 'invalid'),
  };
}

const plainObject = z.custom<Record<string, unknown>>(
  (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  { message: 'expected an object' },
);

const eventBodySchema = z.strictObject({
  actorId: ACTOR_ID,
  event: plainObject,
});

/** Seed 001 §4 "Integration Pattern with External Approval Systems". */
const approvalBodySchema = z.strictObject({
  task_id: ACTOR_ID,
  decision: z.enum(['approved', 'denied']),
  approver: z.string().trim().min(1).max(1_000),
  comment: z.string().max(10_000).optional(),
  timestamp: z.union([z.string().min(1).max(100), z.number().finite()]),
});

const listQuerySchema = z.strictObject({
  machine: z.string().min(1).max(200).optional(),
  state: z.string().min(1).max(500).optional(),
  userId: z.string().min(1).max(255).optional(),
  status: z.enum(['active', 'done', 'error', 'stopped']).optional(),
  cursor: ACTOR_ID.optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

const historyQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

const signInSchema = z.strictObject({
  keyId: z.string().min(1).max(200),
  secret: z.string().min(1).max(1000),
});

const decisionSchema = z.strictObject({
  actorId: ACTOR_ID,
  decision: z.enum(['approved', 'denied']),
  comment: z.string().max(10_000).optional(),
});

/** Actor row as the API shows it (no snapshot JSON, no hashes). */
function summary(row: ActorRow) {
  const style = badge(row.machineId, row.state, row.status);
  return {
    id: row.id,
    machineId: row.machineId,
    state: row.state,
    stateName: style.name,
    class: style.class,
    ...cardLabels(row.machineId, row.snapshot),
    status: row.status,
    version: row.version,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    category: style.category,
    color: style.color,
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function trailEntry(machineId: string, row: TransitionRow) {
  const metadata = (parseJson(row.metadata) ?? {}) as Record<string, unknown>;
  return {
    seq: row.seq,
    from: row.fromState,
    to: row.toState,
    eventType: row.eventType,
    event: parseJson(row.event) ?? null,
    at: row.at,
    source: typeof metadata['source'] === 'string' ? metadata['source'] : null,
    keyId: typeof metadata['keyId'] === 'string' ? metadata['keyId'] : null,
    toName: badge(machineId, row.toState).name,
    color: badge(machineId, row.toState).color,
    fromColor: row.fromState !== null ? badge(machineId, row.fromState).color : null,
  };
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const here = new URL('./dashboard/', import.meta.url);
function loadAsset(name: string): string {
  return readFileSync(new URL(name, here), 'utf8');
}

/** mermaid's browser bundle from node_modules, if installed. */
function mermaidBundlePath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('mermaid/dist/mermaid.min.js');
  } catch {
    return undefined;
  }
}

/** The Node request behind a Hono context, when served by @hono/node-server. */
function incomingOf(c: Context): IncomingMessage | undefined {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming && typeof env.incoming.on === 'function' ? env.incoming : undefined;
}

/**
 * Header reader: straight from Node's parsed headers when available (cheaper
 * than building Fetch `Headers` for every request), else from the Request.
 */
function headerGetter(c: Context): HeaderGetter {
  const incoming = incomingOf(c);
  if (!incoming) return fromHeaders(c.req.raw.headers);
  const headers = incoming.headers;
  return (name) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}

/**
 * The raw request body, at most `maxBytes` (`undefined` when larger). Read from
 * the Node stream when served by Node, so no web stream is built per request.
 */
async function readBody(c: Context, maxBytes: number): Promise<Uint8Array | undefined> {
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) return undefined;
  const incoming = incomingOf(c);
  if (incoming && !incoming.readableEnded) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of incoming as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) return undefined;
      chunks.push(chunk);
    }
    return chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
  }
  const body = new Uint8Array(await c.req.arrayBuffer());
  return body.byteLength > maxBytes ? undefined : body;
}

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Mermaid writes style attributes and <style> into the SVG it renders.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/**
 * Builds the server: the Hono app plus the runtime, SSE hub and transition feed
 * behind it. Serve `app.fetch` with any adapter, or use {@link listen}.
 *
 * @example
 * const server = createServer({ store, keys, accessToken });
 * const { url } = await listen(server, { port: 7878 });
 */
export function createServer(options: ServerOptions): AgentchartsServer {
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
  let mermaidJs: string | undefined;

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
    c.json(body, status as 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 503);

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

  const errorResponse = (c: Context, error: unknown, fieldPrefix: string): Response => {
    if (error instanceof InvalidTransitionError) {
      return fail(c, 409, {
        error: 'invalid_transition',
        state: error.state,
        eventType: error.eventType,
        message: error.message,
      });
    }
    if (error instanceof InvalidEventError) {
      const field = error.field ?? (error.reason === 'unknown_type' ? 'type' : '');
      return fail(c, 400, {
        error: 'invalid_event',
        field: `${fieldPrefix}${field}`.replace(/\.$/, '') || '(event)',
        reason: error.reason,
        eventType: error.eventType ?? null,
      });
    }
    if (error instanceof ConcurrencyError) {
      return fail(c, 409, { error: 'concurrent_update', actorId: error.actorId, retryable: true });
    }
    if (error instanceof StoreError && error.kind === 'not_found') {
      return fail(c, 404, { error: 'actor_not_found', actorId: error.actorId ?? null });
    }
    if (
      error instanceof StoreError &&
      ['busy', 'locked', 'timeout', 'connection'].includes(error.kind)
    ) {
      logger.warn({ err: error }, 'store unavailable');
      return fail(c, 503, { error: 'store_unavailable', retryable: true });
    }
    logger.error({ err: error }, 'request failed');
    return fail(c, 500, { error: 'internal' });
  };

  /** Authorizes and sends one event for a verified key; the one path every write takes. */
  const dispatch = async (
    c: Context,
    key: ApiKey,
    actorId: string,
    event: Record<string, unknown>,
    fieldPrefix: string,
    metadata: Record<string, unknown>,
  ): Promise<Response> => {
    const type = event['type'];
    if (typeof type !== 'string' || type.length === 0) {
      return fail(c, 400, {
        error: 'invalid_event',
        field: `${fieldPrefix}type`,
        reason: type === undefined ? 'missing_field' : 'invalid_field',
      });
    }
    const refuse = (denied: AuthorizationFailure) => {
      logger.warn({ keyId: key.id, actorId, eventType: type, ...denied }, 'event refused');
      return fail(c, 403, { error: 'forbidden', keyId: key.id, ...denied });
    };
    // The key's actor list before anything is loaded: no existence leaks to it.
    if (!keyCoversActor(key, actorId))
      return refuse({ reason: 'actor_not_allowed_for_key', actorId });
    try {
      const actor = await runtime.actor(actorId);
      // Who may send what is the chart's metadata (event kind and roles).
      const info = chartMeta(actor.machine).event(type);
      const denied = authorizeEvent(key, info);
      if (denied) return refuse(denied);
      // Who the event says sent it is the signing key: filled in when absent,
      // refused when the body names someone else (one key cannot vote for all).
      if (info.signer !== undefined) {
        const named = event[info.signer];
        if (named === undefined) event = { ...event, [info.signer]: key.id };
        else if (named !== key.id) {
          return refuse({ reason: 'identity_mismatch', eventType: type, field: info.signer });
        }
      }
      // Other processes (the agents' workers) write the same store: the runtime
      // re-decides an illegal-looking event on the stored state, and a lost race
      // reloads and retries, so the event is judged against what is stored.
      const snapshot: AnyMachineSnapshot = await actor.send(
        event as AnyEventObject,
        { via: 'http', keyId: key.id, ...metadata },
        { conflictRetries: 3 },
      );
      return c.json({
        ok: true,
        actorId,
        eventType: type,
        state: stateLabel(snapshot.value),
        status: snapshot.status,
      });
    } catch (error) {
      return errorResponse(c, error, fieldPrefix);
    }
  };

  /** Verifies the signature over the raw body, then parses it as JSON. */
  const signedBody = async (
    c: Context,
  ): Promise<{ key: ApiKey; body: unknown } | { response: Response }> => {
    const raw = await readBody(c, maxBodyBytes);
    if (raw === undefined) return { response: tooLarge(c) };
    const result = await verifier.verify(headerGetter(c), signedTarget(c, raw));
    if (!result.ok) return { response: signatureFailure(c, result.error) };
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      return { response: fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'utf8' }) };
    }
    const body = parseJson(text);
    if (body === undefined) {
      return {
        response: fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'invalid_json' }),
      };
    }
    return { key: result.key, body };
  };

  const tooLarge = (c: Context) =>
    fail(c, 413, { error: 'payload_too_large', maxBytes: maxBodyBytes });

  // ---- app ------------------------------------------------------------------

  const app = new Hono();

  app.use('*', allowedHosts(options.allowedHosts ?? []));
  // nosniff, no-referrer, frame and opener policies: hono's own middleware.
  app.use('*', secureHeaders({ crossOriginEmbedderPolicy: false }));

  app.onError((error, c) => {
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

  app.get('/healthz', async (c) => {
    try {
      await options.store.listActors({ limit: 1 });
      return c.json({ ok: true, store: options.store.kind, sseClients: hub.size });
    } catch {
      return fail(c, 503, { error: 'store_unavailable' });
    }
  });

  app.get('/metrics', async (c) => {
    const denied = await wholeStoreRead(c);
    if (denied) return denied;
    const text = await metrics.metrics();
    return c.body(text, 200, { 'content-type': metrics.registry.contentType });
  });

  app.get('/api/machines', async (c) => {
    const denied = await readAccess(c);
    if (denied) return denied;
    return c.json({
      machines: chartList.map((chart) => ({
        id: chart.machine.id,
        name: chart.name,
        description: chart.description,
      })),
    });
  });

  app.get('/api/actors', async (c) => {
    const denied = await readAccess(c);
    if (denied) return denied;
    const query = listQuerySchema.safeParse(c.req.query());
    if (!query.success) {
      return fail(c, 400, { error: 'invalid_query', ...zodField(query.error) });
    }
    const pageSize = query.data.limit ?? 50;
    const rows = await options.store.listActors({
      machineId: query.data.machine,
      // A document name (`executing`), a path (`active.executing`) or a compound state.
      states:
        query.data.state === undefined
          ? undefined
          : labelsFor(query.data.machine, query.data.state),
      userId: query.data.userId,
      status: query.data.status,
      afterId: query.data.cursor,
      limit: pageSize + 1,
    });
    const scope = readScope(c);
    // A scoped key lists only its actors (the cursor still walks every row read).
    const read = rows.slice(0, pageSize);
    const page = read.filter((row) => scope === undefined || keyCoversActor(scope, row.id));
    return c.json({
      actors: page.map(summary),
      nextCursor: rows.length > pageSize ? (read[read.length - 1]?.id ?? null) : null,
    });
  });

  agentsStatusRoute(app, { store: options.store, runtime, readAccess: wholeStoreRead, fail });

  app.get('/api/counts', async (c) => {
    const denied = await wholeStoreRead(c);
    if (denied) return denied;
    const machine = c.req.query('machine');
    const groups = await options.store.countActors(machine ? { machineId: machine } : {});
    // Per label; its badge is read from the chart of the first machine seen with it.
    const byState = new Map<string, { count: number; machineId: string }>();
    const byCategory = Object.fromEntries(CATEGORIES.map((k) => [k, 0])) as Record<
      StateCategory,
      number
    >;
    let total = 0;
    for (const g of groups) {
      total += g.count;
      const seen = byState.get(g.state);
      if (seen) seen.count += g.count;
      else byState.set(g.state, { count: g.count, machineId: g.machineId });
      byCategory[badge(g.machineId, g.state, g.status).category] += g.count;
    }
    return c.json({
      total,
      categories: byCategory,
      states: [...byState.entries()]
        .sort((a, b) => b[1].count - a[1].count || a[0].localeCompare(b[0]))
        .map(([state, { count, machineId }]) => {
          const { name, category, color } = badge(machineId, state);
          return { state, name, count, category, color };
        }),
    });
  });

  /** One page of an actor's trail, oldest first: `?after=<seq>&limit=<n>` (at most 500). */
  app.get('/api/actors/:id/history', async (c) => {
    const denied = await readAccess(c);
    if (denied) return denied;
    const id = c.req.param('id');
    const outOfScope = actorOutOfScope(c, id);
    if (outOfScope) return outOfScope;
    const query = historyQuerySchema.safeParse(c.req.query());
    if (!query.success) return fail(c, 400, { error: 'invalid_query', ...zodField(query.error) });
    try {
      const row = await options.store.loadActor(id);
      if (!row) return fail(c, 404, { error: 'actor_not_found', actorId: id });
      const limit = query.data.limit ?? 100;
      const rows = await options.store.history(id, { afterSeq: query.data.after ?? 0, limit });
      return c.json({
        trail: rows.map((r) => trailEntry(row.machineId, r)),
        next: rows.length === limit ? (rows.at(-1)?.seq ?? null) : null,
        total: row.version,
      });
    } catch (error) {
      return errorResponse(c, error, '');
    }
  });

  app.get('/api/actors/:id', async (c) => {
    const denied = await readAccess(c);
    if (denied) return denied;
    const id = c.req.param('id');
    const outOfScope = actorOutOfScope(c, id);
    if (outOfScope) return outOfScope;
    try {
      const row = await options.store.loadActor(id);
      if (!row) return fail(c, 404, { error: 'actor_not_found', actorId: id });
      const chart = runtime.chartFor(row.machineId);
      // The last page of the trail only (one indexed range read, however long the
      // history); older rows come from /api/actors/:id/history.
      const history = await options.store.history(id, {
        afterSeq: Math.max(0, row.version - TRAIL_LIMIT),
        limit: TRAIL_LIMIT,
      });
      const trail = history.map((r) => trailEntry(row.machineId, r));
      const base = {
        actor: summary(row),
        trail,
        trailTotal: row.version,
      };
      if (!chart) return c.json({ ...base, context: null, diagram: null, accepts: [] });
      const snapshot = decodeActorRow(
        chart.machine,
        { version: chart.version, migrations: chart.migrations },
        row,
      );
      const accepts =
        snapshot.status !== 'active'
          ? []
          : Object.entries(chart.eventSamples ?? {})
              .filter(([, samples]) =>
                (samples as readonly EventObject[]).some((sample) => snapshot.can(sample)),
              )
              .map(([type]) => type)
              .sort();
      return c.json({
        ...base,
        context: snapshot.context as unknown,
        diagram: highlightedDiagram(chart.machine, snapshot.value, summary(row).color),
        accepts,
        awaitingApproval:
          accepts.includes('APPROVAL_GRANTED') && accepts.includes('APPROVAL_DENIED'),
        approvalsEnabled: dashboardApprovals,
        signedInApprover: approverOf(c) ?? null,
      });
    } catch (error) {
      return errorResponse(c, error, '');
    }
  });

  app.get('/api/stream', async (c) => {
    const denied = await readAccess(c);
    if (denied) return denied;
    const header = c.req.header('last-event-id') ?? c.req.query('lastEventId');
    const lastEventId = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    const filter = {
      actorId: c.req.query('actor') || undefined,
      machineId: c.req.query('machine') || undefined,
    };
    // A key limited to some actors follows one of them, never the whole stream.
    const scope = readScope(c);
    if (scope && (filter.actorId === undefined || !keyCoversActor(scope, filter.actorId))) {
      return fail(c, 403, { error: 'forbidden', keyId: scope.id, reason: 'scope_too_narrow' });
    }
    const principal = streamPrincipal(c);
    if (!hub.admits(principal)) return fail(c, 429, { error: 'too_many_streams', retryable: true });
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (incomingOf(c) && outgoing && typeof outgoing.writeHead === 'function') {
      // Under Node, write frames straight to the socket's response: one web stream per
      // client would cost more than the rest of the fan-out.
      hub.connectNode({ filter, principal, lastEventId, response: outgoing });
      return RESPONSE_ALREADY_SENT;
    }
    return hub.connect({ filter, principal, lastEventId, signal: c.req.raw.signal });
  });

  app.post('/api/events', async (c) => {
    const signed = await signedBody(c);
    if ('response' in signed) return signed.response;
    const parsed = eventBodySchema.safeParse(signed.body);
    if (!parsed.success) {
      return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    }
    return dispatch(c, signed.key, parsed.data.actorId, parsed.data.event, 'event.', {
      route: 'events',
    });
  });

  app.post('/api/approval-callback', async (c) => {
    const signed = await signedBody(c);
    if ('response' in signed) return signed.response;
    const parsed = approvalBodySchema.safeParse(signed.body);
    if (!parsed.success) {
      return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    }
    const body = parsed.data;
    const event: Record<string, unknown> = {
      type: body.decision === 'approved' ? 'APPROVAL_GRANTED' : 'APPROVAL_DENIED',
      approver: body.approver,
    };
    if (body.comment !== undefined) event['comment'] = body.comment;
    return dispatch(c, signed.key, body.task_id, event, '', {
      route: 'approval-callback',
      decidedAt: body.timestamp,
    });
  });

  // ---- dashboard ------------------------------------------------------------

  const page = (c: Context) => {
    const token = c.req.query('token');
    if (token !== undefined) {
      if (options.accessToken === undefined || !sameToken(token, options.accessToken)) {
        return c.text('invalid token', 401);
      }
      // Drop the token from the address bar and history. The target is the path
      // as sent (still percent-encoded), so no decoded CR/LF can reach a header;
      // anything else is refused before a session is opened.
      const target = new URL(c.req.url).pathname;
      if (!/^\/[\x21-\x7e]*$/.test(target)) return fail(c, 400, { error: 'invalid_path' });
      startSession(c, { kind: 'reader' });
      return c.redirect(target, 303);
    }
    return c.body(assets.html, 200, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'cache-control': 'no-store',
    });
  };
  app.get('/', page);
  app.get('/actors/:id', page);
  app.post('/logout', (c) => {
    const id = getCookie(c, SESSION_COOKIE);
    sessions.close(id);
    // Its streams end with it.
    if (id !== undefined) hub.closePrincipal(`session:${id}`);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/', 303);
  });

  app.get('/assets/app.js', (c) =>
    c.body(assets.js, 200, { 'content-type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/assets/app.css', (c) =>
    c.body(assets.css, 200, { 'content-type': 'text/css; charset=utf-8' }),
  );
  app.get('/assets/mermaid.min.js', (c) => {
    if (mermaidPath === undefined) return fail(c, 404, { error: 'mermaid_not_installed' });
    mermaidJs ??= readFileSync(mermaidPath, 'utf8');
    return c.body(mermaidJs, 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=86400',
    });
  });

  app.get('/api/session', (c) => {
    const approver = approverOf(c);
    return c.json({
      authenticated: options.publicRead === true || hasSession(c),
      /** Whether approvers may sign in here. */
      approvals: dashboardApprovals,
      /** The approver signed in on this session (their key id), or null for a reader. */
      approver: approver ?? null,
    });
  });

  /**
   * An approver signs in as themselves: their key id and secret, checked like a
   * signature's key. The session then approves in their name only.
   */
  app.post('/dashboard/sign-in', async (c) => {
    const refused = sameOriginJson(c);
    if (refused) return refused;
    if (!dashboardApprovals) return fail(c, 403, { error: 'dashboard_approvals_disabled' });
    const raw = await readBody(c, 4096);
    if (raw === undefined) return tooLarge(c);
    const parsed = signInSchema.safeParse(parseJson(Buffer.from(raw).toString('utf8')));
    if (!parsed.success) return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    const key = verifier.key(parsed.data.keyId);
    // The same answer for an unknown key, a wrong secret and a non-approver key.
    const secretOk = key !== undefined && sameToken(parsed.data.secret, key.secret);
    if (!key || !secretOk || key.role !== 'approver') {
      logger.warn({ keyId: parsed.data.keyId }, 'dashboard sign-in refused');
      return fail(c, 401, { error: 'invalid_credentials' });
    }
    startSession(c, { kind: 'approver', keyId: key.id });
    logger.info({ keyId: key.id }, 'approver signed in to the dashboard');
    return c.json({ ok: true, approver: key.id });
  });

  /**
   * Approve/Deny from the dashboard: the browser holds only its session cookie;
   * the server builds seed 001's approval body, signs it with the dashboard's
   * approver key and sends it through `/api/approval-callback` like any client.
   */
  app.post('/dashboard/decision', async (c) => {
    const principal = sessionOf(c);
    if (!principal) return fail(c, 401, { error: 'unauthorized' });
    const refused = sameOriginJson(c);
    if (refused) return refused;
    if (!dashboardApprovals) return fail(c, 403, { error: 'dashboard_approvals_disabled' });
    // Reading never approves: only an approver's own session decides.
    if (principal.kind !== 'approver') return fail(c, 403, { error: 'approver_sign_in_required' });
    const approverKey = verifier.key(principal.keyId);
    if (approverKey?.role !== 'approver') {
      sessions.closeFor(principal.keyId);
      return fail(c, 403, { error: 'approver_sign_in_required' });
    }
    const raw = await readBody(c, maxBodyBytes);
    if (raw === undefined) return tooLarge(c);
    const parsed = decisionSchema.safeParse(parseJson(Buffer.from(raw).toString('utf8')));
    if (!parsed.success) {
      return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    }
    const body = JSON.stringify({
      task_id: parsed.data.actorId,
      decision: parsed.data.decision,
      approver: approverKey.id,
      ...(parsed.data.comment ? { comment: parsed.data.comment } : {}),
      timestamp: new Date().toISOString(),
    });
    const nowSeconds = options.nowSeconds?.() ?? Math.floor(Date.now() / 1000);
    const request = new Request(new URL('/api/approval-callback', c.req.url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...signRequest(
          approverKey,
          { method: 'POST', path: '/api/approval-callback', body },
          nowSeconds,
        ),
      },
      body,
    });
    return app.fetch(request);
  });

  return {
    app,
    runtime,
    hub,
    feed,
    ready: feed.ready,
    close() {
      feed.stop();
      unobserveEmitted();
      hub.close();
      metrics.stop();
      return Promise.resolve();
    },
  };
}

/** A running HTTP server. */
export interface ListeningServer {
  url: string;
  port: number;
  server: ServerType;
  close(): Promise<void>;
}

/**
 * Serves an {@link AgentchartsServer} over HTTP (default `127.0.0.1`, port 0 =
 * any free port) once its feed is ready.
 */
export async function listen(
  server: AgentchartsServer,
  options: { port?: number; hostname?: string } = {},
): Promise<ListeningServer> {
  await server.ready;
  const hostname = options.hostname ?? '127.0.0.1';
  const http = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: server.app.fetch, port: options.port ?? 0, hostname }, () =>
      resolve(s),
    );
    s.once('error', reject);
  });
  const port = (http.address() as AddressInfo).port;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    server: http,
    async close() {
      await server.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        if ('closeAllConnections' in http) http.closeAllConnections();
      });
    },
  };
}
