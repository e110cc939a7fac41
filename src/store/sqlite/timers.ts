/**
 * Durable timers in SQLite (see TimerFacet): read from the actors' snapshots,
 * found due through the projection's index of next due times with the actors
 * written since its last refresh overlaid, so exact at any time. Claims take the
 * due actors' leases under the write lock (BEGIN IMMEDIATE).
 */
import type Database from 'better-sqlite3';
import { dueOf, snapshotTimers } from '../pending-timers.ts';
import { byTimer, checkLeaseRequest, checkLimit } from '../rules.ts';
import { dirtyActors, dueActors } from '../sql-common.ts';
import type { TimerClaim, TimerClaimRequest, TimerRow } from '../types.ts';
import type { Statements } from './connection.ts';

const DIRTY = dirtyActors('rowid > @applied');

const LEGACY = `SELECT actor_id AS actorId, timer_id AS timerId, event, due_at AS dueAt
  FROM legacy_timers WHERE actor_id = ? ORDER BY due_at, timer_id`;

/** A lease that `@owner` may take at `@now`: none, expired, or its own. */
const CLAIMABLE = `(a.owner IS NULL OR a.lease_until IS NULL OR a.lease_until < @now
  OR a.owner = @owner)`;

export class SqliteTimers {
  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
    /** The read models' watermark (folding a large overlay in first, when writable). */
    private readonly applied: () => number,
  ) {}

  /** Timer rows of an actor written before timers moved into snapshots. */
  private legacy(actorId: string): TimerRow[] {
    return this.sql.get(LEGACY).all(actorId) as TimerRow[];
  }

  timers(actorId: string): TimerRow[] {
    const row = this.sql.get('SELECT snapshot FROM actors WHERE id = ?').get(actorId) as
      { snapshot: string } | undefined;
    if (row === undefined) return [];
    return (snapshotTimers(actorId, row.snapshot) ?? this.legacy(actorId)).sort(byTimer);
  }

  dueTimers(now: number, limit: number): TimerRow[] {
    checkLimit(limit, 'timer');
    const actors = this.sql
      .get(
        `WITH ${DIRTY}, ${dueActors('@now', '@limit')}
         SELECT a.id, a.snapshot FROM due JOIN actors a ON a.id = due.id
         ORDER BY due.due, due.id LIMIT @limit`,
      )
      .all({ now, limit, applied: this.applied() }) as Array<{ id: string; snapshot: string }>;
    return dueOf(actors, (id) => this.legacy(id), now, limit);
  }

  nextTimerDue(): number | undefined {
    const due = this.sql
      .get(
        `WITH ${DIRTY}
         SELECT MIN(due) FROM (
           SELECT * FROM (SELECT next_due_at AS due FROM actor_index
             WHERE next_due_at IS NOT NULL AND actor_id NOT IN (SELECT id FROM dirty)
             ORDER BY next_due_at LIMIT 1)
           UNION ALL
           SELECT MIN(next_due_at) FROM actors WHERE id IN (SELECT id FROM dirty))`,
      )
      .pluck()
      .get({ applied: this.applied() }) as number | null;
    return due ?? undefined;
  }

  claimDueTimers(request: TimerClaimRequest): TimerClaim[] {
    checkLeaseRequest('timer', request);
    const { owner, now, claimUntil, limit } = request;
    const claim = this.db.transaction(
      () =>
        this.sql
          .get(
            `WITH ${DIRTY}, ${dueActors('@now', '@limit', CLAIMABLE)}
             UPDATE actors SET owner = @owner, lease_until = @claimUntil
             WHERE id IN (SELECT id FROM due ORDER BY due, id LIMIT @limit)
             RETURNING id, snapshot`,
          )
          .all({ owner, now, claimUntil, limit, applied: this.applied() }) as Array<{
          id: string;
          snapshot: string;
        }>,
    );
    const actors = claim.immediate();
    return dueOf(actors, (id) => this.legacy(id), now, Number.MAX_SAFE_INTEGER).map((t) => ({
      ...t,
      claimedBy: owner,
      claimUntil,
    }));
  }
}
