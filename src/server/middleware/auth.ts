/**
 * Authentication as hono middleware. A guarded route names what it needs —
 * `reader` (any read credential), `wholeStore` (a read over every actor, not for
 * a scoped key), `signer` (a signed write) or `approverSession` (an approver
 * signed in to the dashboard) — and the middleware either answers 401/403/413/429
 * before the handler runs, or puts the typed {@link Principal} on the context
 * (`c.var.principal`). Handlers never look at headers or cookies for credentials.
 */
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { coversActor } from '../../core/scope.ts';
import { RequestVerifier, type ApiKey, type SignatureFailure } from '../auth.ts';
import { clientAddress } from '../client-address.ts';
import {
  SESSION_COOKIE,
  headerGetter,
  parseJson,
  readBody,
  sameToken,
  type ErrorBody,
} from '../http.ts';
import type { SessionPrincipal, SessionStore } from '../sessions.ts';
import type { FailureThrottle } from '../throttle.ts';

/** Who a request speaks for, once authenticated. */
export type Principal =
  /** Nobody in particular: the server was started with `--public-read`. */
  | { kind: 'public' }
  /** The bearer of the read token (a scraper, a viewer). */
  | { kind: 'token' }
  /** A dashboard session: a reader (opened with the token) or a signed-in approver. */
  | { kind: 'session'; sessionId: string; session: SessionPrincipal }
  /** A request signed with a key (reads with an empty body, and every write). */
  | { kind: 'key'; key: ApiKey };

/** What the server's middleware puts on a hono context. */
export interface ServerEnv {
  Variables: {
    principal: Principal;
    /** The verified, parsed JSON body of a signed write. */
    signedJson: unknown;
    /** The raw body a signed read was verified with (read once, by the middleware). */
    signedBody: Uint8Array | undefined;
    /** Prefix of field names in typed errors of this request (`event.` for `/api/events`). */
    fieldPrefix: string;
    /** The filter a stream ticket was issued for (it overrides the query). */
    streamFilter: { actorId: string | undefined; machineId: string | undefined } | undefined;
  };
}

/** A context of this server. */
export type ServerContext = Context<ServerEnv>;

export interface AuthDeps {
  publicRead: boolean;
  accessToken: string | undefined;
  sessions: SessionStore;
  verifier: RequestVerifier;
  maxBodyBytes: number;
  /** Whether approvers may decide from the dashboard at all. */
  dashboardApprovals: boolean;
  fail: (c: Context, status: number, body: ErrorBody) => Response;
  /** The origin the browser sees (the proxy's when trusted). */
  publicOrigin: (c: Context) => string;
  /** Throttles wrong read tokens per client. */
  throttle: FailureThrottle;
  trustProxy: boolean;
  /** Ends a dashboard session with its streams and tickets. */
  endSession: (sessionId: string) => void;
}

/** The actors a principal is limited to, and the key that limits it. */
export interface Scope {
  keyId: string;
  actors: readonly string[];
}

/**
 * The one scope of a principal, applied to every read and write: a key's
 * `actors`, and an approver's dashboard session carries its key's. Undefined:
 * every actor (the read token, its reader sessions, an unlimited key).
 */
export function scopeOf(principal: Principal): Scope | undefined {
  if (principal.kind === 'key') {
    return principal.key.actors !== undefined
      ? { keyId: principal.key.id, actors: principal.key.actors }
      : undefined;
  }
  if (principal.kind === 'session' && principal.session.kind === 'approver') {
    const { keyId, actors } = principal.session;
    return actors !== undefined ? { keyId, actors } : undefined;
  }
  return undefined;
}

/** Whether a principal may read `actorId`. */
export function inScope(principal: Principal, actorId: string): boolean {
  return coversActor(scopeOf(principal)?.actors, actorId);
}

/** The approver behind a principal, if it is an approver's dashboard session. */
export function sessionApprover(principal: Principal): string | undefined {
  return principal.kind === 'session' && principal.session.kind === 'approver'
    ? principal.session.keyId
    : undefined;
}

/**
 * The credential behind a principal, which its bounds (streams, tickets,
 * watchers) count against: `token` for the read token and every reader session
 * opened with it, `key:<id>` for a key and its approver sessions, and for an
 * unauthenticated public server the client's address.
 */
export function credentialOf(principal: Principal, address: string): string {
  if (principal.kind === 'key') return `key:${principal.key.id}`;
  if (principal.kind === 'session') {
    return principal.session.kind === 'approver' ? `key:${principal.session.keyId}` : 'token';
  }
  return principal.kind === 'token' ? 'token' : `public:${address}`;
}

/** The throttle's key for guesses of the read token. */
const TOKEN_THROTTLE_KEY = '(read token)';

/** `429` with `Retry-After`: this client failed too often; its secret was not looked at. */
export function tooManyFailures(c: Context, retryAfterSeconds: number): Response {
  return c.json({ error: 'too_many_failures', retryable: true, retryAfterSeconds }, 429, {
    'retry-after': String(retryAfterSeconds),
  });
}

/** The middleware of one server. */
export function authMiddleware(deps: AuthDeps) {
  const { fail, verifier, maxBodyBytes } = deps;
  const tooLarge = (c: Context) =>
    fail(c, 413, { error: 'payload_too_large', maxBytes: maxBodyBytes });
  const signatureFailure = (c: Context, error: SignatureFailure) =>
    error === 'rate_limited' ? fail(c, 429, { error, retryable: true }) : fail(c, 401, { error });
  /** What a signature covers: method, path with query, and the raw body. */
  const signedTarget = (c: Context, body: Uint8Array) => {
    const url = new URL(c.req.url);
    return { method: c.req.method, path: `${url.pathname}${url.search}`, body };
  };
  const session = (c: Context): Principal | undefined => {
    const sessionId = getCookie(c, SESSION_COOKIE);
    const found = deps.sessions.get(sessionId);
    return found && sessionId !== undefined
      ? { kind: 'session', sessionId, session: found }
      : undefined;
  };

  /** A read credential: bearer token, dashboard session, or a signed request. */
  const authenticateRead = async (c: Context): Promise<Principal | Response> => {
    if (deps.publicRead) return { kind: 'public' };
    const auth = c.req.header('authorization');
    if (auth?.startsWith('Bearer ') && deps.accessToken !== undefined) {
      const client = clientAddress(c, deps.trustProxy).address;
      const wait = deps.throttle.check(client, TOKEN_THROTTLE_KEY);
      if (wait !== undefined) return tooManyFailures(c, wait);
      if (sameToken(auth.slice(7).trim(), deps.accessToken)) return { kind: 'token' };
      deps.throttle.fail(client, TOKEN_THROTTLE_KEY);
      return fail(c, 401, { error: 'invalid_token' });
    }
    const fromSession = session(c);
    if (fromSession) return fromSession;
    const header = headerGetter(c);
    if (RequestVerifier.isSigned(header)) {
      const body = await readBody(c, maxBodyBytes);
      if (body === undefined) return tooLarge(c);
      const result = await verifier.verify(header, signedTarget(c, body));
      if (!result.ok) return signatureFailure(c, result.error);
      // The body is consumed: the route reads it from here (a ticket's filter).
      c.set('signedBody', body);
      return { kind: 'key', key: result.key };
    }
    return fail(c, 401, { error: 'unauthorized' });
  };

  /** Any read credential. */
  const reader = createMiddleware<ServerEnv>(async (c, next) => {
    const principal = await authenticateRead(c);
    if (principal instanceof Response) return principal;
    c.set('principal', principal);
    await next();
  });

  /**
   * Reads that cannot be cut to a scope (metrics, the status of all agents,
   * inspected apps) are not for a scoped key or its approver's session.
   */
  const wholeStore = createMiddleware<ServerEnv>(async (c, next) => {
    const principal = await authenticateRead(c);
    if (principal instanceof Response) return principal;
    const scope = scopeOf(principal);
    if (scope)
      return fail(c, 403, { error: 'forbidden', keyId: scope.keyId, reason: 'scope_too_narrow' });
    c.set('principal', principal);
    await next();
  });

  /** A signed write: the signature over the raw body, then the body as JSON. */
  const signer = createMiddleware<ServerEnv>(async (c, next) => {
    const raw = await readBody(c, maxBodyBytes);
    if (raw === undefined) return tooLarge(c);
    const result = await verifier.verify(headerGetter(c), signedTarget(c, raw));
    if (!result.ok) return signatureFailure(c, result.error);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      return fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'utf8' });
    }
    const json = parseJson(text);
    if (json === undefined) {
      return fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'invalid_json' });
    }
    c.set('principal', { kind: 'key', key: result.key });
    c.set('signedJson', json);
    await next();
  });

  /** A browser form post must be same-origin JSON; the refusal, if it is not. */
  const notSameOriginJson = (c: Context): Response | undefined => {
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== deps.publicOrigin(c)) {
      return fail(c, 403, { error: 'cross_origin' });
    }
    if (!c.req.header('content-type')?.startsWith('application/json')) {
      return fail(c, 400, { error: 'invalid_body', field: '(body)', reason: 'content_type' });
    }
    return undefined;
  };

  /** A browser form post: same origin, JSON body. */
  const sameOriginJson = createMiddleware<ServerEnv>(async (c, next) => {
    const refused = notSameOriginJson(c);
    if (refused) return refused;
    await next();
  });

  /** An approver's own dashboard session (reading never approves), whose key is still an approver's. */
  const approverSession = createMiddleware<ServerEnv>(async (c, next) => {
    const principal = session(c);
    if (!principal) return fail(c, 401, { error: 'unauthorized' });
    const refused = notSameOriginJson(c);
    if (refused) return refused;
    if (!deps.dashboardApprovals) return fail(c, 403, { error: 'dashboard_approvals_disabled' });
    const keyId = sessionApprover(principal);
    if (keyId === undefined) return fail(c, 403, { error: 'approver_sign_in_required' });
    if (verifier.key(keyId)?.role !== 'approver') {
      for (const id of deps.sessions.closeFor(keyId)) deps.endSession(id);
      return fail(c, 403, { error: 'approver_sign_in_required' });
    }
    c.set('principal', principal);
    await next();
  });

  /** The principal of the request's dashboard session, if any (no credential required). */
  const sessionOf = (c: Context): Principal | undefined => session(c);

  /** A scoped principal reading an actor outside its scope: 403, before anything is loaded. */
  const actorOutOfScope = (c: ServerContext, actorId: string): Response | undefined => {
    const scope = scopeOf(c.var.principal);
    if (!scope || coversActor(scope.actors, actorId)) return undefined;
    return fail(c, 403, {
      error: 'forbidden',
      keyId: scope.keyId,
      reason: 'actor_not_allowed_for_key',
      actorId,
    });
  };

  return {
    reader,
    wholeStore,
    signer,
    sameOriginJson,
    approverSession,
    sessionOf,
    actorOutOfScope,
    tooLarge,
  };
}
