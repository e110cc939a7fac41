/**
 * Typed errors to HTTP answers, in one place (the app's `onError`): a route
 * throws what the runtime threw and every route answers the same way.
 */
import type { Context } from 'hono';
import type { Logger } from 'pino';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  StoreError,
} from '../core/errors.ts';
import type { ErrorBody } from './http.ts';

/** The answer to a typed error, or undefined for anything else (a 500). */
export function typedErrorResponse(
  c: Context,
  error: unknown,
  fieldPrefix: string,
  fail: (c: Context, status: number, body: ErrorBody) => Response,
  logger: Logger,
): Response | undefined {
  if (error instanceof InvalidTransitionError) {
    return fail(c, 409, {
      error: 'invalid_transition',
      state: error.state,
      eventType: error.eventType,
      message: error.message,
    });
  }
  if (error instanceof InvalidEventError) {
    const field = (f: string | undefined): string =>
      `${fieldPrefix}${f ?? ''}`.replace(/\.$/, '') || '(event)';
    return fail(c, 400, {
      error: 'invalid_event',
      field: field(error.field ?? (error.reason === 'unknown_type' ? 'type' : '')),
      reason: error.reason,
      eventType: error.eventType ?? null,
      // The schema's further problems, so a client fixes them in one go.
      ...(error.more === undefined
        ? {}
        : { more: error.more.map((p) => ({ field: field(p.field), reason: p.reason })) }),
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
  return undefined;
}
