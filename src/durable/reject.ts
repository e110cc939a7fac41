/**
 * A refused event: logged at WARN, recorded as a rejection row (for metrics and
 * alerts), told to observers. The state is unchanged. What is kept of the
 * caller's event type is bounded: a megabyte of `type` costs a few dozen bytes.
 */
import type { InvalidEventError } from '../core/errors.ts';
import { InvalidTransitionError } from '../core/errors.ts';
import { sha256 } from './row.ts';
import type { ActorCore } from './actor-core.ts';

/** Longest event type kept whole in rejection rows and logs. */
export const MAX_KEPT_TYPE = 128;

/**
 * The event type as rejection rows and logs keep it: whole when short, else a
 * prefix and a hash of the whole (`<prefix>…#<sha256 prefix>`).
 */
export function boundedType(type: string | undefined): string {
  if (type === undefined) return '';
  if (type.length <= MAX_KEPT_TYPE) return type;
  return `${type.slice(0, MAX_KEPT_TYPE - 20)}…#${sha256(type).slice(0, 16)}`;
}

export async function rejectEvent(
  core: ActorCore,
  error: InvalidEventError | InvalidTransitionError,
  now: number,
): Promise<void> {
  const runtime = core.runtime;
  const state = core.row.state;
  const reason = error instanceof InvalidTransitionError ? 'invalid_transition' : error.reason;
  const eventType = boundedType(error.eventType);
  runtime.logger.warn(
    { actorId: core.id, machineId: core.machine.id, state, eventType, reason },
    'event rejected',
  );
  try {
    await runtime.store.recordRejection({
      actorId: core.id,
      machineId: core.machine.id,
      state,
      eventType,
      reason,
      at: now,
    });
  } catch (storeError) {
    runtime.logger.error({ actorId: core.id, err: storeError }, 'could not record rejection');
  }
  runtime.notify('onRejection', {
    actorId: core.id,
    machineId: core.machine.id,
    state,
    eventType: error.eventType === undefined ? undefined : eventType,
    error,
    at: now,
  });
}
