/**
 * The write path every route shares: an event authorised by the chart's
 * metadata and the signing key, its signer fields bound to the key, and sent
 * through the durable runtime. Typed failures are thrown to the app's
 * `onError` (errors.ts).
 */
import type { Logger } from 'pino';
import type { AnyEventObject, AnyMachineSnapshot } from 'xstate';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import type { DurableRuntime } from '../durable/runtime.ts';
import { authorizeEvent, keyCoversActor, type ApiKey, type AuthorizationFailure } from './auth.ts';
import type { ErrorBody } from './http.ts';
import type { ServerContext } from './middleware/auth.ts';

export interface WritesDeps {
  fail: (c: ServerContext, status: number, body: ErrorBody) => Response;
  logger: Logger;
  runtime: DurableRuntime;
}

/** Authorizes and sends one event for a verified key; the one path every write takes. */
export function createDispatch({ fail, logger, runtime }: WritesDeps) {
  return async (
    c: ServerContext,
    key: ApiKey,
    actorId: string,
    event: Record<string, unknown>,
    fieldPrefix: string,
    metadata: Record<string, unknown>,
  ): Promise<Response> => {
    c.set('fieldPrefix', fieldPrefix);
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
    if (!keyCoversActor(key, actorId)) {
      return refuse({ reason: 'actor_not_allowed_for_key', actorId });
    }
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
  };
}
