/** The SSE stream of the documents' monitoring messages, and its single-use tickets. */
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context, Hono } from 'hono';
import type { ServerResponse } from 'node:http';
import { createMiddleware } from 'hono/factory';
import * as z from 'zod';
import { clientAddress } from '../client-address.ts';
import { ACTOR_ID, incomingOf, parseJson, readBody, zodField } from '../http.ts';
import type { ServerKit } from '../kit.ts';
import {
  credentialOf,
  inScope,
  scopeOf,
  type Principal,
  type ServerEnv,
} from '../middleware/auth.ts';

const ticketBody = z.strictObject({
  actor: ACTOR_ID.optional(),
  machine: z.string().min(1).max(200).optional(),
});

export function registerStreamRoute(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { hub, fail, auth, streamTickets, allowedOrigins, options } = kit;
  const credential = (c: Context, principal: Principal) =>
    credentialOf(principal, clientAddress(c, options.trustProxy === true).address);
  /** A filter naming an actor outside the principal's scope: 403 (nothing is said of it). */
  const outOfScope = (c: Context, principal: Principal, actorId: string | undefined) => {
    const scope = scopeOf(principal);
    if (!scope || actorId === undefined || inScope(principal, actorId)) return undefined;
    return fail(c, 403, {
      error: 'forbidden',
      keyId: scope.keyId,
      reason: 'actor_not_allowed_for_key',
      actorId,
    });
  };

  /**
   * A single-use ticket for one stream (60 s): a browser on another origin opens
   * `/api/stream?ticket=…` with it, so no lasting secret sits in a URL.
   */
  app.post('/api/stream-tickets', auth.reader, async (c) => {
    // A signed request's body was read (and verified) by the middleware.
    const raw = c.var.signedBody ?? (await readBody(c, 4096));
    if (raw === undefined || raw.byteLength > 4096) return auth.tooLarge(c);
    const text = Buffer.from(raw).toString('utf8');
    const parsed = ticketBody.safeParse(text.trim() === '' ? {} : parseJson(text));
    if (!parsed.success) return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    const filter = { actorId: parsed.data.actor, machineId: parsed.data.machine };
    const refused = outOfScope(c, c.var.principal, filter.actorId);
    if (refused) return refused;
    return c.json(streamTickets.issue(c.var.principal, filter, credential(c, c.var.principal)));
  });

  /** A ticket in the query stands for the credential it was issued to (once). */
  const readerOrTicket = createMiddleware<ServerEnv>(async (c, next) => {
    const ticket = c.req.query('ticket');
    if (ticket === undefined) return auth.reader(c, next);
    const grant = streamTickets.redeem(ticket);
    if (!grant) return fail(c, 401, { error: 'invalid_ticket' });
    c.set('principal', grant.principal);
    c.set('streamFilter', grant.filter);
    await next();
    return undefined;
  });

  /** hono's cors middleware cannot reach a response written to Node directly: the same headers here. */
  const corsHeaders = (c: Context): Record<string, string> => {
    const origin = c.req.header('origin');
    if (origin === undefined || !allowedOrigins.has(origin)) return {};
    return {
      'access-control-allow-origin': origin,
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    };
  };

  app.get('/api/stream', readerOrTicket, (c) => {
    const principal = c.var.principal;
    const header = c.req.header('last-event-id') ?? c.req.query('lastEventId');
    const lastEventId = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    const asked = c.get('streamFilter') ?? {
      actorId: c.req.query('actor') || undefined,
      machineId: c.req.query('machine') || undefined,
    };
    const refused = outOfScope(c, principal, asked.actorId);
    if (refused) return refused;
    // A scoped principal's stream carries its own actors only, whatever it filters on.
    const filter = { ...asked, scope: scopeOf(principal)?.actors };
    const owner = credential(c, principal);
    if (!hub.admits(owner)) return fail(c, 429, { error: 'too_many_streams', retryable: true });
    const session = principal.kind === 'session' ? principal.sessionId : undefined;
    const headers = corsHeaders(c);
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (incomingOf(c) && outgoing && typeof outgoing.writeHead === 'function') {
      // Under Node, write frames straight to the socket's response: one web stream per
      // client would cost more than the rest of the fan-out.
      hub.connectNode({
        filter,
        principal: owner,
        session,
        lastEventId,
        response: outgoing,
        headers,
      });
      return RESPONSE_ALREADY_SENT;
    }
    return hub.connect({
      filter,
      principal: owner,
      session,
      lastEventId,
      signal: c.req.raw.signal,
      headers,
    });
  });
}
