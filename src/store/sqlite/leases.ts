/**
 * Leases on actors and claims on due timers in SQLite, each taken under the write
 * lock (BEGIN IMMEDIATE) so two workers never take the same one.
 */
import type Database from 'better-sqlite3';
import { byTimer, checkLeaseRequest, compareText } from '../rules.ts';
import type {
  LeaseRenewal,
  LeaseRequest,
  LeaseRow,
  TimerClaim,
  TimerClaimRequest,
} from '../types.ts';
import type { Statements } from './connection.ts';

const TIMER_COLUMNS = 'actor_id AS actorId, timer_id AS timerId, event, due_at AS dueAt';

export class SqliteLeases {
  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
  ) {}

  private immediate<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  acquire(request: LeaseRequest): LeaseRow[] {
    checkLeaseRequest('commit', request);
    const { owner, now, leaseUntil, limit, actorIds } = request;
    const free = '(owner IS NULL OR lease_until IS NULL OR lease_until < @now)';
    // `status = 'active'` as a literal: the partial index of unfinished actors serves it.
    const pick =
      actorIds === undefined
        ? `SELECT id FROM actors WHERE status = 'active' AND ${free} ORDER BY id LIMIT @limit`
        : `SELECT id FROM actors WHERE id IN (SELECT value FROM json_each(@ids))
             AND (${free} OR owner = @owner) ORDER BY id LIMIT @limit`;
    const rows = this.immediate(
      () =>
        this.sql
          .get(
            `UPDATE actors SET owner = @owner, lease_until = @leaseUntil WHERE id IN (${pick})
             RETURNING id AS actorId, owner, lease_until AS leaseUntil`,
          )
          .all({
            owner,
            now,
            leaseUntil,
            limit,
            ids: JSON.stringify(actorIds ?? []),
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

  claimDueTimers(request: TimerClaimRequest): TimerClaim[] {
    checkLeaseRequest('timer', request);
    const rows = this.immediate(
      () =>
        this.sql
          .get(
            `UPDATE timers SET claimed_by = @owner, claim_until = @claimUntil
             WHERE (actor_id, timer_id) IN (
               SELECT actor_id, timer_id FROM timers
               WHERE due_at <= @now
                 AND (claimed_by IS NULL OR claim_until IS NULL OR claim_until < @now)
               ORDER BY due_at, actor_id, timer_id LIMIT @limit)
             RETURNING ${TIMER_COLUMNS}, claimed_by AS claimedBy, claim_until AS claimUntil`,
          )
          .all(request) as TimerClaim[],
    );
    return rows.sort(byTimer);
  }
}
