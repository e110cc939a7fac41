/**
 * Leases on actors in SQLite, each taken under the write lock (BEGIN IMMEDIATE) so
 * two workers never take the same one. Unfinished actors are found through the
 * projection (its partial index), with the actors written since its last refresh
 * read from their rows.
 */
import type Database from 'better-sqlite3';
import { checkLeaseRequest, compareText } from '../rules.ts';
import { actorsByStatus, dirtyActors } from '../sql-common.ts';
import type { LeaseRenewal, LeaseRequest, LeaseRow } from '../types.ts';
import type { Statements } from './connection.ts';

export class SqliteLeases {
  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
    /** The read models' watermark (see SqliteReadModels.mark). */
    private readonly applied: () => number,
  ) {}

  private immediate<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  acquire(request: LeaseRequest): LeaseRow[] {
    checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, limit, actorIds } = request;
    const free = '(a.owner IS NULL OR a.lease_until IS NULL OR a.lease_until < @now)';
    // `'active'` as a literal: the partial index of unfinished actors serves it.
    const sql =
      actorIds === undefined
        ? `WITH ${dirtyActors('rowid > @applied')}, ${actorsByStatus("'active'", "''", '@limit', free)}
           UPDATE actors SET owner = @owner, lease_until = @leaseUntil
           WHERE id IN (SELECT id FROM picked ORDER BY id LIMIT @limit)
           RETURNING id AS actorId, owner, lease_until AS leaseUntil`
        : `UPDATE actors SET owner = @owner, lease_until = @leaseUntil WHERE id IN (
             SELECT id FROM actors a WHERE id IN (SELECT value FROM json_each(@ids))
               AND (${free} OR owner = @owner) ORDER BY id LIMIT @limit)
           RETURNING id AS actorId, owner, lease_until AS leaseUntil`;
    const rows = this.immediate(
      () =>
        this.sql.get(sql).all({
          owner,
          now,
          leaseUntil,
          limit,
          ids: JSON.stringify(actorIds ?? []),
          applied: actorIds === undefined ? this.applied() : 0,
        }) as LeaseRow[],
    );
    return rows.sort((a, b) => compareText(a.actorId, b.actorId));
  }

  renew(request: LeaseRenewal): string[] {
    checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, actorIds } = request;
    const ids = this.immediate(() =>
      this.sql
        .get(
          `UPDATE actors SET lease_until = @leaseUntil
           WHERE owner = @owner AND lease_until >= @now
             AND id IN (SELECT value FROM json_each(@ids))
           RETURNING id`,
        )
        .pluck()
        .all({ owner, now, leaseUntil, ids: JSON.stringify(actorIds) })
        .map(String),
    );
    return ids.sort(compareText);
  }

  release(owner: string, actorIds: readonly string[]): void {
    checkLeaseRequest('commit', { owner });
    this.sql
      .get(
        `UPDATE actors SET owner = NULL, lease_until = NULL
         WHERE owner = @owner AND id IN (SELECT value FROM json_each(@ids))`,
      )
      .run({ owner, ids: JSON.stringify(actorIds) });
  }

  lease(actorId: string): LeaseRow | undefined {
    return this.sql
      .get(
        `SELECT id AS actorId, owner, lease_until AS leaseUntil FROM actors
         WHERE id = ? AND owner IS NOT NULL AND lease_until IS NOT NULL`,
      )
      .get(actorId) as LeaseRow | undefined;
  }
}
