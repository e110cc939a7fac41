/**
 * Durable timers in PostgreSQL (see TimerFacet): read from the actors' snapshots,
 * found due through the projection's index of next due times with the actors
 * written since its watermark overlaid, so exact at any time. Claims take the due
 * actors' leases, earliest due first, skipping rows another worker holds locked
 * (`SKIP LOCKED`).
 */
import { dueOf, snapshotTimers } from '../pending-timers.ts';
import { byTimer, checkLeaseRequest, checkLimit } from '../rules.ts';
import { dueActors } from '../sql-common.ts';
import type { TimerClaim, TimerClaimRequest, TimerRow } from '../types.ts';
import type { PostgresConnection } from './connection.ts';
import { PG_DIRTY } from './read-models.ts';

/** Candidates a claim of `limit` actors looks at: limit × CLAIM_WINDOW + CLAIM_WINDOW_MIN. */
const CLAIM_WINDOW = 4;
const CLAIM_WINDOW_MIN = 16;

const LEGACY_COLUMNS = `actor_id AS "actorId", timer_id AS "timerId", event, due_at AS "dueAt"`;

export class PostgresTimers {
  constructor(private readonly conn: PostgresConnection) {}

  /** Timer rows of these actors written before timers moved into snapshots, by actor. */
  private async legacy(actorIds: readonly string[]): Promise<Map<string, TimerRow[]>> {
    const byActor = new Map<string, TimerRow[]>();
    if (actorIds.length === 0) return byActor;
    const rows = await this.conn.query<TimerRow>({
      name: 'ac_legacy_timers',
      text: `SELECT ${LEGACY_COLUMNS} FROM legacy_timers WHERE actor_id = ANY($1::text[])
        ORDER BY due_at, timer_id`,
      values: [[...actorIds]],
    });
    for (const row of rows) {
      const list = byActor.get(row.actorId);
      if (list) list.push(row);
      else byActor.set(row.actorId, [row]);
    }
    return byActor;
  }

  /** The due timers of actors (id, snapshot), legacy rows read for those that keep none. */
  private async dueOf(
    actors: ReadonlyArray<{ id: string; snapshot: string }>,
    now: number,
    limit: number,
  ): Promise<TimerRow[]> {
    const without = actors.filter((a) => snapshotTimers(a.id, a.snapshot) === undefined);
    const legacy = await this.legacy(without.map((a) => a.id));
    return dueOf(actors, (id) => legacy.get(id) ?? [], now, limit);
  }

  async timers(actorId: string): Promise<TimerRow[]> {
    const rows = await this.conn.query<{ snapshot: string }>({
      name: 'ac_snapshot',
      text: 'SELECT snapshot FROM actors WHERE id = $1',
      values: [actorId],
    });
    const row = rows[0];
    if (row === undefined) return [];
    const own = snapshotTimers(actorId, row.snapshot);
    return (own ?? (await this.legacy([actorId])).get(actorId) ?? []).sort(byTimer);
  }

  async dueTimers(now: number, limit: number): Promise<TimerRow[]> {
    checkLimit(limit, 'timer');
    const actors = await this.conn.query<{ id: string; snapshot: string }>({
      name: 'ac_due_actors',
      text: `WITH ${PG_DIRTY}, ${dueActors('$1::bigint', '$2::bigint')}
        SELECT a.id, a.snapshot FROM due JOIN actors a ON a.id = due.id
        ORDER BY due.due, due.id LIMIT $2`,
      values: [now, limit],
    });
    return this.dueOf(actors, now, limit);
  }

  async nextTimerDue(): Promise<number | undefined> {
    const rows = await this.conn.query<{ due: number | null }>({
      name: 'ac_next_due',
      text: `WITH ${PG_DIRTY}
        SELECT LEAST(
          (SELECT next_due_at FROM actor_index
           WHERE next_due_at IS NOT NULL AND actor_id NOT IN (SELECT id FROM dirty)
           ORDER BY next_due_at LIMIT 1),
          (SELECT MIN(next_due_at) FROM actors WHERE id IN (SELECT id FROM dirty))) AS due`,
    });
    return rows[0]?.due ?? undefined;
  }

  async claimDueTimers(request: TimerClaimRequest): Promise<TimerClaim[]> {
    checkLeaseRequest('timer', request);
    const { owner, now, claimUntil, limit } = request;
    const claimable = `(a.owner IS NULL OR a.lease_until IS NULL OR a.lease_until < $3
      OR a.owner = $1)`;
    // SKIP LOCKED: an actor another worker is claiming (or committing to) is left
    // to it; this call takes the rest and never waits (so the order in which it
    // locks closes no cycle). The limit counts the rows it locked, not the ones it
    // skipped, out of a window of candidates wide enough for claimers that run at
    // once: each would otherwise pick the same earliest actor, find it locked and
    // claim nothing while other timers are due.
    const actors = await this.conn.query<{ id: string; snapshot: string }>(
      `WITH ${PG_DIRTY}, ${dueActors('$3::bigint', '$5::bigint', claimable)},
       picked AS (
         SELECT a.id FROM due JOIN actors a ON a.id = due.id
         WHERE ${claimable}
         ORDER BY due.due, a.id LIMIT $4 FOR UPDATE OF a SKIP LOCKED)
       UPDATE actors SET owner = $1, lease_until = $2 FROM picked WHERE actors.id = picked.id
       RETURNING actors.id, actors.snapshot`,
      [owner, claimUntil, now, limit, limit * CLAIM_WINDOW + CLAIM_WINDOW_MIN],
    );
    const due = await this.dueOf(actors, now, Number.MAX_SAFE_INTEGER);
    return due.map((t) => ({ ...t, claimedBy: owner, claimUntil }));
  }
}
