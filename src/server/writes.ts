/**
 * The write path every route shares: a signed body verified, an event
 * authorised by the chart's metadata and the key, sent through the durable
 * runtime, and every failure answered the same way.
 */

import type { Logger } from 'pino';
import type { DurableRuntime } from '../durable/runtime.ts';
import { type Context } from 'hono';
import type { AnyEventObject, AnyMachineSnapshot } from 'xstate';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  StoreError,
} from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import type { RequestVerifier } from './auth.ts';
import {
  authorizeEvent,
  keyCoversActor,
  type ApiKey,
  type AuthorizationFailure,
  type SignatureFailure,
} from './auth.ts';
import { headerGetter, parseJson, readBody, type ErrorBody } from './http.ts';

export interface WritesDeps {
  fail: (c: Context, status: number, body: ErrorBody) => Response;
  logger: Logger;
  runtime: DurableRuntime;
  verifier: RequestVerifier;
  signatureFailure: (c: Context, error: SignatureFailure) => Response;
  signedTarget: (
    c: Context,
    body: Uint8Array,
  ) => { method: string; path: string; body: Uint8Array };
  maxBodyBytes: number;
  tooLarge: (c: Context) => Response;
}

export function createWrites({
  fail,
  logger,
  runtime,
  verifier,
  signatureFailure,
  signedTarget,
  maxBodyBytes,
  tooLarge,
}: WritesDeps) {
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

  return { errorResponse, dispatch, signedBody };
}
