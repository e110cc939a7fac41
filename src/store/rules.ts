/**
 * The write and query rules every store shares: what makes a write malformed, how
 * leases fence owner duties, the byte order of ids, the errors of step and lease
 * operations. The memory store is the reference semantics; SQLite and PostgreSQL
 * apply the same rules in SQL.
 */
import { LeaseLostError, StoreError, type StoreOperation } from '../core/errors.ts';
import type { ActorWrite, HistoryPage, StepRow, TimerRow } from './types.ts';

const STATUSES: ReadonlySet<string> = new Set(['active', 'done', 'error', 'stopped']);

/**
 * Why a write is malformed, or undefined. Rows are built by the runtime, so a
 * problem here is a bug; it rejects that write alone (kind `invalid_write`).
 */
export function invalidWrite(write: ActorWrite): StoreError | undefined {
  const problem = writeProblem(write);
  return problem === undefined
    ? undefined
    : new StoreError({
        operation: 'commit',
        kind: 'invalid_write',
        actorId: write.actorId,
        detail: problem,
      });
}

function writeProblem(write: ActorWrite): string | undefined {
  const { actorId, actor, transition } = write;
  if (actor.id !== actorId) return 'actor.id differs from actorId';
  if (transition.actorId !== actorId) return 'transition.actorId differs from actorId';
  const problem =
    notInteger('expectedVersion', write.expectedVersion) ??
    notInteger('actor.chartVersion', actor.chartVersion) ??
    notInteger('actor.createdAt', actor.createdAt) ??
    notInteger('actor.updatedAt', actor.updatedAt) ??
    notInteger('transition.at', transition.at);
  if (problem !== undefined) return problem;
  if (write.nextDueAt !== undefined) {
    const bad = notInteger('nextDueAt', write.nextDueAt);
    if (bad !== undefined) return bad;
  }
  if (write.expectedVersion < 0) return 'expectedVersion is negative';
  if (actor.version !== write.expectedVersion + 1)
    return 'actor.version is not expectedVersion + 1';
  if (transition.seq !== actor.version) return 'transition.seq differs from actor.version';
  if (!STATUSES.has(actor.status)) return 'actor.status is not a known status';
  if (write.userId !== undefined && (typeof write.userId !== 'string' || write.userId === '')) {
    return 'userId is not a non-empty string';
  }
  return undefined;
}

/** Checked on every commit: a plain comparison, nothing allocated (no closure either). */
function notInteger(name: string, n: number): string | undefined {
  return Number.isSafeInteger(n) ? undefined : `${name} is not an integer`;
}

/** Validates a query limit: a non-negative integer (SQL treats a negative LIMIT as none). */
export function checkLimit(limit: number, operation: StoreOperation): number {
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new StoreError({ operation, kind: 'bad_query', detail: 'limit must be an integer ≥ 0' });
  }
  return limit;
}

/** Orders text as SQLite's BINARY collation does (by UTF-8 bytes = by code point). */
export function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The error a step operation gets when the row is absent or not in the required status. */
export function stepMiss(key: string, row: StepRow | undefined, wanted: string): StoreError {
  return row === undefined
    ? new StoreError({ operation: 'step', kind: 'not_found', detail: 'no step with this key' })
    : new StoreError({
        operation: 'step',
        kind: 'conflict',
        actorId: row.actorId,
        detail: `step "${row.name}" is ${row.status}, expected ${wanted}`,
      });
}

/**
 * The LeaseLostError of a fenced write whose owner does not hold the actor's lease
 * at `now`, or undefined when it does. `current` is the actor's lease columns
 * (undefined when the actor does not exist: no lease can be held on it).
 */
export function leaseViolation(
  write: ActorWrite,
  current: { owner: string | null; leaseUntil: number | null } | undefined,
): LeaseLostError | undefined {
  const fence = write.lease;
  if (fence === undefined) return undefined;
  const live =
    current?.owner != null && current.leaseUntil != null && current.leaseUntil >= fence.now;
  if (live && current.owner === fence.owner) return undefined;
  return new LeaseLostError({
    actorId: write.actorId,
    owner: fence.owner,
    holder: live ? (current.owner ?? undefined) : undefined,
  });
}

/** Validates the arguments shared by the lease operations (integers, a non-empty owner). */
export function checkLeaseRequest(
  operation: StoreOperation,
  request: {
    owner: string;
    now?: number;
    leaseUntil?: number;
    claimUntil?: number;
    limit?: number;
  },
): void {
  const bad = (detail: string) => new StoreError({ operation, kind: 'bad_query', detail });
  if (typeof request.owner !== 'string' || request.owner === '') {
    throw bad('owner must be a non-empty string');
  }
  for (const name of ['now', 'leaseUntil', 'claimUntil'] as const) {
    const value = request[name];
    if (value !== undefined && !Number.isSafeInteger(value)) throw bad(`${name} is not an integer`);
  }
  if (request.limit !== undefined) checkLimit(request.limit, operation);
}

/**
 * Timer order of every store: due time, then actor id (byte order); an actor's
 * timers due at once keep the order it armed them in (sort stably).
 */
export function byTimer(a: TimerRow, b: TimerRow): number {
  return a.dueAt - b.dueAt || compareText(a.actorId, b.actorId);
}

/** Validates a history page: `afterSeq` and `limit` non-negative integers. */
export function checkHistoryPage(page: HistoryPage): { afterSeq: number; limit?: number } {
  const afterSeq = page.afterSeq ?? 0;
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw new StoreError({
      operation: 'query',
      kind: 'bad_query',
      detail: 'afterSeq must be an integer ≥ 0',
    });
  }
  return page.limit === undefined
    ? { afterSeq }
    : { afterSeq, limit: checkLimit(page.limit, 'query') };
}

/** A write that expects an existing actor found none (no store deletes actors). */
export function actorMissing(actorId: string): StoreError {
  return new StoreError({
    operation: 'commit',
    kind: 'not_found',
    actorId,
    detail: 'no actor to update; create it with expectedVersion 0',
  });
}
