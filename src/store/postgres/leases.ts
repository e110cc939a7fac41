/**
 * Leases on actors and claims on due timers in PostgreSQL. Rows another worker is
 * taking are skipped (`FOR UPDATE SKIP LOCKED`), so concurrent workers never take
 * the same one and never wait on each other; rows are locked in actor-id order, as
 * commits lock them, so a lease statement cannot deadlock with a batch.
 */
import * as rules from '../rules.ts';
import type * as S from '../types.ts';
import type { PostgresConnection } from './connection.ts';

export class PostgresLeases {
  constructor(private readonly conn: PostgresConnection) {}

  async acquire(request: S.LeaseRequest): Promise<S.LeaseRow[]> {
    rules.checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, limit, actorIds } = request;
    const free = '(owner IS NULL OR lease_until IS NULL OR lease_until < $3)';
    // SKIP LOCKED: a row another worker is taking (or committing to) is left
    // to it; this call takes the rest and never waits.
    const pick =
      actorIds === undefined
        ? `SELECT id FROM actors WHERE status = 'active' AND ${free}
           ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED`
        : `SELECT id FROM actors WHERE id = ANY($5::text[]) AND (${free} OR owner = $1)
           ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED`;
    const values: unknown[] = [owner, leaseUntil, now, limit];
    if (actorIds !== undefined) values.push([...actorIds]);
    const rows = await this.conn.query<S.LeaseRow>(
      `WITH picked AS (${pick})
       UPDATE actors SET owner = $1, lease_until = $2 FROM picked WHERE actors.id = picked.id
       RETURNING actors.id AS "actorId", owner, lease_until AS "leaseUntil"`,
      values,
    );
    return rows.sort((a, b) => rules.compareText(a.actorId, b.actorId));
  }

  async renew(request: S.LeaseRenewal): Promise<string[]> {
    rules.checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, actorIds } = request;
    // Locks in id order, as commits do, so a renewal cannot deadlock with a batch.
    const rows = await this.conn.query<{ id: string }>(
      `WITH mine AS (
         SELECT id FROM actors WHERE id = ANY($4::text[]) AND owner = $1 AND lease_until >= $3
         ORDER BY id FOR UPDATE)
       UPDATE actors SET lease_until = $2 FROM mine
       WHERE actors.id = mine.id AND owner = $1 AND lease_until >= $3
       RETURNING actors.id`,
      [owner, leaseUntil, now, [...actorIds]],
    );
    return rows.map((r) => r.id).sort(rules.compareText);
  }

  async release(owner: string, actorIds: readonly string[]): Promise<void> {
    rules.checkLeaseRequest('commit', { owner });
    await this.conn.query(
      `WITH mine AS (
         SELECT id FROM actors WHERE id = ANY($2::text[]) AND owner = $1 ORDER BY id FOR UPDATE)
       UPDATE actors SET owner = NULL, lease_until = NULL FROM mine
       WHERE actors.id = mine.id AND owner = $1`,
      [owner, [...actorIds]],
    );
  }

  async lease(actorId: string): Promise<S.LeaseRow | undefined> {
    const rows = await this.conn.query<S.LeaseRow>(
      `SELECT id AS "actorId", owner, lease_until AS "leaseUntil" FROM actors
       WHERE id = $1 AND owner IS NOT NULL AND lease_until IS NOT NULL`,
      [actorId],
    );
    return rows[0];
  }

  async claimDueTimers(request: S.TimerClaimRequest): Promise<S.TimerClaim[]> {
    rules.checkLeaseRequest('timer', request);
    const { owner, now, claimUntil, limit } = request;
    const rows = await this.conn.query<S.TimerClaim>(
      `WITH picked AS (
         SELECT actor_id, timer_id FROM timers
         WHERE due_at <= $3 AND (claimed_by IS NULL OR claim_until IS NULL OR claim_until < $3)
         ORDER BY due_at, actor_id, timer_id LIMIT $4 FOR UPDATE SKIP LOCKED)
       UPDATE timers SET claimed_by = $1, claim_until = $2 FROM picked
       WHERE timers.actor_id = picked.actor_id AND timers.timer_id = picked.timer_id
       RETURNING timers.actor_id AS "actorId", timers.timer_id AS "timerId", event,
         due_at AS "dueAt", claimed_by AS "claimedBy", claim_until AS "claimUntil"`,
      [owner, claimUntil, now, limit],
    );
    return rows.sort(
      (a, b) =>
        a.dueAt - b.dueAt ||
        rules.compareText(a.actorId, b.actorId) ||
        rules.compareText(a.timerId, b.timerId),
    );
  }
}
