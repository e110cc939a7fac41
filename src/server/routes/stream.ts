/** The SSE stream of the documents' monitoring messages. */
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Hono } from 'hono';
import type { ServerResponse } from 'node:http';
import { keyCoversActor } from '../auth.ts';
import { createMiddleware } from 'hono/factory';
import * as z from 'zod';
import { ACTOR_ID, incomingOf, parseJson, readBody, zodField } from '../http.ts';
import type { ServerKit } from '../kit.ts';
import { scopedKey, streamOwner, type ServerEnv } from '../middleware/auth.ts';

const ticketBody = z.strictObject({
  actor: ACTOR_ID.optional(),
  machine: z.string().min(1).max(200).optional(),
});

export function registerStreamRoute(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { hub, fail, auth, streamTickets } = kit;

  /**
   * A single-use ticket for one stream (60 s): a browser on another origin opens
   * `/api/stream?ticket=…` with it, so no lasting secret sits in a URL.
   */
  app.post('/api/stream-tickets', auth.reader, async (c) => {
    const raw = await readBody(c, 4096);
    if (raw === undefined) return auth.tooLarge(c);
    const text = Buffer.from(raw).toString('utf8');
    const parsed = ticketBody.safeParse(text.trim() === '' ? {} : parseJson(text));
    if (!parsed.success) return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    const filter = { actorId: parsed.data.actor, machineId: parsed.data.machine };
    const scope = scopedKey(c.var.principal);
    if (scope && (filter.actorId === undefined || !keyCoversActor(scope, filter.actorId))) {
      return fail(c, 403, { error: 'forbidden', keyId: scope.id, reason: 'scope_too_narrow' });
    }
    return c.json(streamTickets.issue(c.var.principal, filter));
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

  app.get('/api/stream', readerOrTicket, (c) => {
    const header = c.req.header('last-event-id') ?? c.req.query('lastEventId');
    const lastEventId = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    const filter = c.get('streamFilter') ?? {
      actorId: c.req.query('actor') || undefined,
      machineId: c.req.query('machine') || undefined,
    };
    // A key limited to some actors follows one of them, never the whole stream.
    const scope = scopedKey(c.var.principal);
    if (scope && (filter.actorId === undefined || !keyCoversActor(scope, filter.actorId))) {
      return fail(c, 403, { error: 'forbidden', keyId: scope.id, reason: 'scope_too_narrow' });
    }
    const principal = streamOwner(c.var.principal, c);
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
}
