/** Signed writes: events, and the approval callback of the task lifecycle. */
import type { Hono } from 'hono';
import { approvalBodySchema, eventBodySchema, zodField } from '../http.ts';
import type { ServerKit } from '../kit.ts';

export function registerEventRoutes(app: Hono, kit: ServerKit): void {
  const { fail, dispatch, signedBody } = kit;
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
}
