/** The SSE stream of the documents' monitoring messages. */
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Hono } from 'hono';
import type { ServerResponse } from 'node:http';
import { keyCoversActor } from '../auth.ts';
import { incomingOf } from '../http.ts';
import type { ServerKit } from '../kit.ts';
import { scopedKey, streamOwner, type ServerEnv } from '../middleware/auth.ts';

export function registerStreamRoute(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { hub, fail, auth } = kit;
  app.get('/api/stream', auth.reader, (c) => {
    const header = c.req.header('last-event-id') ?? c.req.query('lastEventId');
    const lastEventId = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
    const filter = {
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
