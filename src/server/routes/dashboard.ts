/** The dashboard: its page and assets, sessions, approver sign-in and decisions. */
import type { Hono } from 'hono';
import { type Context } from 'hono';
import { deleteCookie, getCookie } from 'hono/cookie';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signRequest } from '../auth.ts';
import { clientAddress } from '../client-address.ts';
import {
  CSP,
  ELK_FILE,
  SESSION_COOKIE,
  decisionSchema,
  parseJson,
  readBody,
  sameToken,
  signInSchema,
  zodField,
} from '../http.ts';
import type { ServerKit } from '../kit.ts';
import { sessionApprover, tooManyFailures, type ServerEnv } from '../middleware/auth.ts';

export function registerDashboardRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const {
    mermaidCache,
    options,
    logger,
    verifier,
    dashboardApprovals,
    maxBodyBytes,
    assets,
    mermaidPath,
    elkDir,
    fail,
    startSession,
    endSession,
    publicOrigin,
    throttle,
    signInLinks,
    auth,
  } = kit;
  const client = (c: Context) => clientAddress(c, options.trustProxy === true).address;
  const page = (c: Context) => {
    const token = c.req.query('token');
    const link = c.req.query('signin');
    if (token !== undefined || link !== undefined) {
      const from = client(c);
      const wait = throttle.check(from, '(read token)');
      if (wait !== undefined) return tooManyFailures(c, wait);
      // The read token, or a one-time sign-in link (what `agentcharts serve` prints).
      const valid =
        token !== undefined
          ? options.accessToken !== undefined && sameToken(token, options.accessToken)
          : signInLinks.redeem(link ?? '');
      if (!valid) {
        throttle.fail(from, '(read token)');
        return c.text(token !== undefined ? 'invalid token' : 'invalid or used sign-in link', 401);
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
  app.get('/inspector', page);
  app.get('/inspector/:id', page);
  app.post('/logout', (c) => {
    // Another site's page may not sign a user out (a cross-origin form post).
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== publicOrigin(c)) {
      return fail(c, 403, { error: 'cross_origin' });
    }
    // Its streams and stream tickets end with it.
    endSession(getCookie(c, SESSION_COOKIE));
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
    mermaidCache.js ??= readFileSync(mermaidPath, 'utf8');
    return c.body(mermaidCache.js, 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=86400',
    });
  });

  /** mermaid's ELK layout, file by file (the entry and its chunks), read once each. */
  const elkFiles = new Map<string, string>();
  app.get('/assets/layout-elk/*', (c) => {
    const file = c.req.path.slice('/assets/layout-elk/'.length);
    if (elkDir === undefined || !ELK_FILE.test(file)) return fail(c, 404, { error: 'not_found' });
    let text = elkFiles.get(file);
    if (text === undefined) {
      try {
        text = readFileSync(join(elkDir, file), 'utf8');
      } catch {
        return fail(c, 404, { error: 'not_found' });
      }
      elkFiles.set(file, text);
    }
    return c.body(text, 200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=86400',
    });
  });

  app.get('/api/session', (c) => {
    const session = auth.sessionOf(c);
    const approver = session && sessionApprover(session);
    return c.json({
      authenticated: options.publicRead === true || session !== undefined,
      /** Whether approvers may sign in here. */
      approvals: dashboardApprovals,
      /** The approver signed in on this session (their key id), or null for a reader. */
      approver: approver ?? null,
      /** Whether mermaid's ELK layout is installed (the dashboard then lays charts out with it). */
      elk: elkDir !== undefined,
    });
  });

  /**
   * An approver signs in as themselves: their key id and secret, checked like a
   * signature's key. The session then approves in their name only.
   */
  app.post('/dashboard/sign-in', auth.sameOriginJson, async (c) => {
    if (!dashboardApprovals) return fail(c, 403, { error: 'dashboard_approvals_disabled' });
    const raw = await readBody(c, 4096);
    if (raw === undefined) return auth.tooLarge(c);
    const parsed = signInSchema.safeParse(parseJson(Buffer.from(raw).toString('utf8')));
    if (!parsed.success) return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    // Guesses are throttled per client and per key (the key's owner, elsewhere, still signs in).
    const from = client(c);
    const wait = throttle.check(from, parsed.data.keyId);
    if (wait !== undefined) return tooManyFailures(c, wait);
    const key = verifier.key(parsed.data.keyId);
    // The same answer for an unknown key, a wrong secret and a non-approver key.
    const secretOk = key !== undefined && sameToken(parsed.data.secret, key.secret);
    if (!key || !secretOk || key.role !== 'approver') {
      throttle.fail(from, parsed.data.keyId);
      logger.warn({ keyId: parsed.data.keyId }, 'dashboard sign-in refused');
      return fail(c, 401, { error: 'invalid_credentials' });
    }
    // The session carries the key's scope: it reads and decides within its actors only.
    startSession(c, { kind: 'approver', keyId: key.id, actors: key.actors });
    logger.info({ keyId: key.id }, 'approver signed in to the dashboard');
    return c.json({ ok: true, approver: key.id });
  });

  /**
   * Approve/Deny from the dashboard: the browser holds only its session cookie;
   * the server builds the approval body of “Agent State Machine Design”, signs it with the
   * dashboard's approver key and sends it through `/api/approval-callback` like any client.
   */
  // Reading never approves: only an approver's own session decides.
  app.post('/dashboard/decision', auth.approverSession, async (c) => {
    const approverKey = verifier.key(sessionApprover(c.var.principal) ?? '');
    if (!approverKey) return fail(c, 403, { error: 'approver_sign_in_required' });
    const raw = await readBody(c, maxBodyBytes);
    if (raw === undefined) return auth.tooLarge(c);
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
}
