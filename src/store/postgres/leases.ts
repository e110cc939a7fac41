/**
 * Leases on actors in PostgreSQL. Rows another worker is
 * taking are skipped (`FOR UPDATE SKIP LOCKED`), so concurrent workers never take
 * the same one and never wait on each other; rows are locked in actor-id order, as
 * commits lock them, so a lease statement cannot deadlock with a batch.
 */
import * as rules from '../rules.ts';
import type * as S from '../types.ts';
import { actorsByStatus } from '../sql-common.ts';
import type { PostgresConnection } from './connection.ts';
import { PG_DIRTY } from './read-models.ts';

export class PostgresLeases {
  constructor(private readonly conn: PostgresConnection) {}

  async acquire(request: S.LeaseRequest): Promise<S.LeaseRow[]> {
    rules.checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, limit, actorIds } = request;
    const free = '(a.owner IS NULL OR a.lease_until IS NULL OR a.lease_until < $3)';
    // Unfinished actors through the projection (its partial index). SKIP LOCKED: a
    // row another worker is taking (or committing to) is left to it; this call
    // takes the rest and never waits.
    const pick =
      actorIds === undefined
        ? `${PG_DIRTY}, ${actorsByStatus("'active'", "''", '$4::bigint', free)},
           locked AS (SELECT a.id FROM actors a WHERE a.id IN (SELECT id FROM picked) AND ${free}
             ORDER BY a.id LIMIT $4 FOR UPDATE SKIP LOCKED)`
        : `locked AS (SELECT a.id FROM actors a
             WHERE a.id = ANY($5::text[]) AND (${free} OR a.owner = $1)
             ORDER BY a.id LIMIT $4 FOR UPDATE SKIP LOCKED)`;
    const values: unknown[] = [owner, leaseUntil, now, limit];
    if (actorIds !== undefined) values.push([...actorIds]);
    const rows = await this.conn.query<S.LeaseRow>(
      `WITH ${pick}
       UPDATE actors SET owner = $1, lease_until = $2 FROM locked WHERE actors.id = locked.id
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
}
