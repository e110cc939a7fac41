/** Signed writes: events, and the approval callback of the task lifecycle. */
import type { Hono } from 'hono';
import { approvalBodySchema, eventBodySchema, zodField } from '../http.ts';
import type { ServerKit } from '../kit.ts';
import type { ServerEnv } from '../middleware/auth.ts';

export function registerEventRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { fail, dispatch, auth } = kit;
  /** The key that signed the request (the `signer` middleware ran). */
  const keyOf = (principal: ServerEnv['Variables']['principal']) => {
    if (principal.kind !== 'key') throw new Error('signed route without a signing key');
    return principal.key;
  };
  app.post('/api/events', auth.signer, async (c) => {
    const parsed = eventBodySchema.safeParse(c.var.signedJson);
    if (!parsed.success) {
      return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    }
    return dispatch(c, keyOf(c.var.principal), parsed.data.actorId, parsed.data.event, 'event.', {
      route: 'events',
    });
  });

  app.post('/api/approval-callback', auth.signer, async (c) => {
    const parsed = approvalBodySchema.safeParse(c.var.signedJson);
    if (!parsed.success) {
      return fail(c, 400, { error: 'invalid_body', ...zodField(parsed.error) });
    }
    const body = parsed.data;
    const event: Record<string, unknown> = {
      type: body.decision === 'approved' ? 'APPROVAL_GRANTED' : 'APPROVAL_DENIED',
      approver: body.approver,
    };
    if (body.comment !== undefined) event['comment'] = body.comment;
    return dispatch(c, keyOf(c.var.principal), body.task_id, event, '', {
      route: 'approval-callback',
      decidedAt: body.timestamp,
    });
  });
}
