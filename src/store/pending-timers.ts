/**
 * The one thing a store reads inside a snapshot: the actor's pending timers. The
 * runtime keeps what an actor has pending in its snapshot JSON under
 * {@link PENDING_KEY} (`{ timers: [{ key, id?, sendId?, event, due, to? }], invokes: […] }`,
 * `{}` when nothing is pending; a timer whose key is also its id, send id and
 * event type is written `{ after: key, due }`); a snapshot without the key was written before
 * timers moved into snapshots, and its timers are rows of the store's legacy
 * timer table.
 */
import { byTimer } from './rules.ts';
import type { TimerRow } from './types.ts';

/** The snapshot JSON key that holds what an actor has pending. */
export const PENDING_KEY = 'agentcharts';

interface PendingTimerJson {
  key?: unknown;
  event?: unknown;
  due?: unknown;
  /** The short form: the key, which is also the event's type. */
  after?: unknown;
}

/**
 * The pending timers `snapshot` (JSON text) carries, as timer rows in the order the
 * actor armed them; undefined when the snapshot keeps none of its own (written
 * before timers moved into snapshots, or not a JSON object).
 */
export function snapshotTimers(actorId: string, snapshot: string): TimerRow[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(snapshot);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const pending = (parsed as Record<string, unknown>)[PENDING_KEY];
  if (pending === undefined) return undefined;
  if (pending === null || typeof pending !== 'object') return [];
  const timers = (pending as { timers?: unknown }).timers;
  if (!Array.isArray(timers)) return [];
  return (timers as PendingTimerJson[]).map((t) =>
    typeof t.after === 'string'
      ? {
          actorId,
          timerId: t.after,
          event: JSON.stringify({ type: t.after }),
          dueAt: Number(t.due),
        }
      : {
          actorId,
          timerId: String(t.key),
          event: JSON.stringify(t.event ?? null),
          dueAt: Number(t.due),
        },
  );
}

/**
 * The timers of actors found due (each with its snapshot, and its legacy rows when
 * the snapshot keeps none), due at or before `now`, earliest first, at most `limit`.
 */
export function dueOf(
  actors: ReadonlyArray<{ id: string; snapshot: string }>,
  legacy: (actorId: string) => readonly TimerRow[],
  now: number,
  limit: number,
): TimerRow[] {
  const due: TimerRow[] = [];
  for (const actor of actors) {
    const timers = snapshotTimers(actor.id, actor.snapshot) ?? legacy(actor.id);
    for (const timer of timers) if (timer.dueAt <= now) due.push(timer);
  }
  return due.sort(byTimer).slice(0, limit);
}
