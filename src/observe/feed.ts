/**
 * One feed of committed transitions for the server's SSE stream and the
 * inspector: transitions made in this process arrive at once through the
 * runtime's observer; transitions other processes wrote to the same store are
 * read from the store's time-ordered feed (`transitionsSince`) by polling.
 * Each (actor, version) is told once, in version order per actor.
 */
import { initialTransition, transition, type AnyMachineSnapshot, type EventObject } from 'xstate';
import type { ChartDefinition, PersistedSnapshot } from '../core/chart.ts';
import type { EventSource, TransitionNotice } from '../durable/notices.ts';
import { decodeActorRow, restoreSnapshot } from '../durable/codec.ts';
import { MIGRATION_EVENT } from '../durable/migrate.ts';
import type { DurableRuntime } from '../durable/runtime.ts';
import type { StreamTransition } from './stream.ts';
import type { ActorRow, TransitionFeedRow, TransitionRow } from '../store/types.ts';
import { EXPECTED, isRuntime, requireArg, requireObject } from '../core/options.ts';

/** Where a transition was seen: committed by this process, or found in the store. */
export type NoticeOrigin = 'local' | 'store';

/** A committed transition as the feed tells it. */
export interface FeedTransition extends StreamTransition {
  /** Actor version after the transition (= its audit row's seq). */
  version: number;
  source: EventSource | 'create';
  /** The snapshot after the transition: present for local ones (the store feed carries none). */
  snapshot?: AnyMachineSnapshot | undefined;
}

export interface TransitionFeedOptions {
  /** Only actors of this machine id. */
  machineId?: string | undefined;
  /** How often to read transitions other processes wrote (ms); 0 turns polling off. Default 1000. */
  pollMs?: number | undefined;
  /**
   * How far back each poll reads again (ms), for rows committed after a later
   * row was already read (timestamps are taken before a group commit). Default 2000.
   */
  lookbackMs?: number | undefined;
  onTransition: (transition: FeedTransition, origin: NoticeOrigin) => void;
  onError?: ((error: unknown) => void) | undefined;
}

export interface TransitionFeed {
  /** Resolves once the feed is following (immediately: it starts from now). */
  ready: Promise<void>;
  /** Reads new transitions from the store now. */
  poll(): Promise<void>;
  stop(): void;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function sourceOf(row: TransitionRow): FeedTransition['source'] {
  const metadata = parse(row.metadata) as { source?: unknown } | undefined;
  const source = metadata?.source;
  if (source === 'send' || source === 'timer' || source === 'recover' || source === 'create') {
    return source;
  }
  return row.fromState === null ? 'create' : 'send';
}

/** A local notice as the feed tells it: everything but the snapshot before. */
function fromNotice({ previous: _previous, ...transition }: TransitionNotice): FeedTransition {
  return transition;
}

/** The event a log row stored, or one of its logged type when the JSON is unreadable. */
function eventOf(row: Pick<TransitionRow, 'event' | 'eventType'>): EventObject {
  const event = parse(row.event) as EventObject | undefined;
  return event && typeof event.type === 'string' ? event : { type: row.eventType };
}

function fromRow(row: TransitionFeedRow): FeedTransition {
  return {
    actorId: row.actorId,
    machineId: row.machineId,
    version: row.seq,
    from: row.fromState,
    to: row.toState,
    event: eventOf(row),
    eventType: row.eventType,
    at: row.at,
    source: sourceOf(row),
  };
}

/**
 * Follows every committed transition from now on.
 *
 * @example
 * const feed = feedTransitions(runtime, { onTransition: (t) => console.log(t.actorId, t.to) });
 */
export function feedTransitions(
  runtime: DurableRuntime,
  options: TransitionFeedOptions,
): TransitionFeed {
  requireArg('feedTransitions', 'runtime', isRuntime(runtime), EXPECTED.runtime);
  requireObject('feedTransitions', 'options', options);
  const seen = new Map<string, number>();
  const pollMs = options.pollMs ?? 1000;
  const lookbackMs = options.lookbackMs ?? 2000;
  const startedAt = runtime.clock.now();
  let cursor = startedAt;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let polling: Promise<void> | undefined;

  const emit = (t: FeedTransition, origin: NoticeOrigin) => {
    if (t.version <= (seen.get(t.actorId) ?? 0)) return;
    seen.set(t.actorId, t.version);
    try {
      options.onTransition(t, origin);
    } catch (error) {
      options.onError?.(error);
    }
  };

  const unobserve = runtime.observe({
    onTransition: (notice) => {
      if (stopped) return;
      if (options.machineId !== undefined && notice.machineId !== options.machineId) return;
      emit(fromNotice(notice), 'local');
    },
  });

  const pollOnce = async () => {
    let since = Math.max(startedAt, cursor - lookbackMs);
    let limit = 1000;
    let newest = cursor;
    for (;;) {
      if (stopped) return;
      const rows = await runtime.store.transitionsSince({
        since,
        machineId: options.machineId,
        limit,
      });
      for (const row of rows) {
        newest = Math.max(newest, row.at);
        emit(fromRow(row), 'store');
      }
      if (rows.length < limit) break;
      const last = (rows[rows.length - 1] as TransitionFeedRow).at;
      // A full page of one timestamp cannot advance the cursor: read a bigger page.
      if (last === since) limit *= 2;
      else since = last;
    }
    cursor = Math.max(cursor, newest);
  };

  // A notification during a poll asks for one more poll after it (the rows it
  // announces may have been committed after this poll read).
  let again = false;
  const poll = (): Promise<void> => {
    if (polling) {
      again = true;
      return polling;
    }
    polling = pollOnce().finally(() => {
      polling = undefined;
      if (again && !stopped) {
        again = false;
        poll().catch((error: unknown) => options.onError?.(error));
      }
    });
    return polling;
  };
  // Where the store tells of other processes' commits (PostgreSQL NOTIFY), read at
  // once; polling stays as the fallback.
  // Notifications are coalesced: at most one read per 25 ms however many commits.
  let soon: ReturnType<typeof setTimeout> | undefined;
  const unlisten = runtime.store.onCommits?.(() => {
    if (stopped || soon !== undefined) return;
    soon = setTimeout(() => {
      soon = undefined;
      if (!stopped) poll().catch((error: unknown) => options.onError?.(error));
    }, 25);
    soon.unref();
  });

  const schedule = () => {
    if (stopped || pollMs <= 0) return;
    timer = setTimeout(() => {
      poll()
        .catch((error: unknown) => options.onError?.(error))
        .finally(schedule);
    }, pollMs);
    timer.unref();
  };
  schedule();

  return {
    ready: Promise.resolve(),
    poll,
    stop() {
      stopped = true;
      unobserve();
      unlisten?.();
      if (soon !== undefined) clearTimeout(soon);
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

/**
 * The snapshot after each audit row, by replaying the trail through the chart's
 * pure `transition()` (as `verify` does); when the trail cannot be replayed
 * (another chart version), every row gets the stored latest snapshot.
 */
export function snapshotsFromTrail(
  chart: ChartDefinition,
  actor: ActorRow,
  rows: readonly TransitionRow[],
): Map<number, AnyMachineSnapshot> {
  const out = new Map<number, AnyMachineSnapshot>();
  const latest = decodeActorRow(
    chart.machine,
    { version: chart.version, migrations: chart.migrations },
    actor,
  );
  // Rows before the last migration were written by another chart version: they
  // are not replayed; replay starts from the migration's recorded snapshot.
  const lastMigration = rows.findLastIndex((r) => r.eventType === MIGRATION_EVENT);
  if (actor.chartVersion === chart.version && (rows[0]?.seq === 1 || lastMigration >= 0)) {
    try {
      let snapshot: AnyMachineSnapshot | undefined;
      for (const [i, row] of rows.entries()) {
        if (i < lastMigration) {
          out.set(row.seq, latest);
          continue;
        }
        const event = parse(row.event) as
          (EventObject & { input?: unknown; snapshot?: unknown }) | undefined;
        if (!event) throw new Error('unreadable event');
        if (i === lastMigration) {
          snapshot = restoreSnapshot(chart.machine, event.snapshot as PersistedSnapshot);
        } else {
          snapshot = snapshot
            ? (transition(
                chart.machine,
                snapshot as never,
                event as never,
              )[0] as AnyMachineSnapshot)
            : (initialTransition(chart.machine, event.input as never)[0] as AnyMachineSnapshot);
        }
        out.set(row.seq, snapshot);
      }
      out.set(actor.version, latest);
      return out;
    } catch {
      out.clear();
    }
  }
  for (const row of rows) out.set(row.seq, latest);
  return out;
}

/** Audit rows after `after` as the notices the runtime would have told, snapshots included. */
export function noticesFromTrail(
  chart: ChartDefinition,
  actor: ActorRow,
  rows: readonly TransitionRow[],
  after: number,
): TransitionNotice[] {
  const wanted = rows.filter((r) => r.seq > after && r.seq <= actor.version);
  if (wanted.length === 0) return [];
  const snapshots = snapshotsFromTrail(chart, actor, rows);
  return wanted.map((row): TransitionNotice => {
    const snapshot = snapshots.get(row.seq) as AnyMachineSnapshot;
    return {
      actorId: actor.id,
      machineId: actor.machineId,
      version: row.seq,
      eventType: row.eventType,
      from: row.fromState,
      to: row.toState,
      event: eventOf(row),
      source: sourceOf(row),
      at: row.at,
      status: row.seq === actor.version ? actor.status : snapshot.status,
      snapshot,
      previous: snapshots.get(row.seq - 1),
    };
  });
}
