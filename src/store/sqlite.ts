/**
 * The embedded default store: one SQLite file through better-sqlite3, in WAL mode
 * with `synchronous=FULL` (a committed transition survives power loss). Every
 * operation is synchronous underneath; the async surface exists for the Store
 * contract shared with PostgreSQL.
 */
import Database from 'better-sqlite3';
import {
  ConcurrencyError,
  LeaseLostError,
  StoreError,
  type StoreOperation,
} from '../core/errors.ts';
import {
  actorMissing,
  byTimer,
  checkLeaseRequest,
  checkLimit,
  compareText,
  invalidWrite,
  leaseViolation,
  stepMiss,
} from './memory.ts';
import { migrateSqlite } from './sqlite-schema.ts';
import type {
  ActorCount,
  ActorCountQuery,
  ActorDwell,
  ActorQuery,
  ActorRow,
  ActorWrite,
  LeaseRow,
  RejectionRow,
  StateEntryCount,
  StateEntryQuery,
  StatesQuery,
  StepRow,
  StepStatus,
  Store,
  TimerClaim,
  TimerRow,
  TransitionFeedRow,
  TransitionRow,
} from './types.ts';

/** How the SQLite store opens its file. */
export interface SqliteStoreOptions {
  /** Milliseconds to wait for a lock held by another connection before failing `busy`. Default 5000. */
  busyTimeoutMs?: number | undefined;
  /**
   * `full` (default) syncs the WAL on every commit. `normal` may lose the last
   * commits on power loss (never corrupts); opt in for throughput only.
   */
  synchronous?: 'full' | 'normal' | 'extra' | undefined;
  /** Open without write access; every write fails with kind `readonly`. */
  readonly?: boolean | undefined;
}

const KINDS: Readonly<Record<string, string>> = {
  SQLITE_BUSY: 'busy',
  SQLITE_LOCKED: 'busy',
  SQLITE_PROTOCOL: 'busy',
  SQLITE_FULL: 'full',
  SQLITE_READONLY: 'readonly',
  SQLITE_IOERR: 'io',
  SQLITE_CORRUPT: 'corrupt',
  SQLITE_NOTADB: 'corrupt',
  SQLITE_CANTOPEN: 'cantopen',
  SQLITE_PERM: 'permission',
  SQLITE_AUTH: 'permission',
  SQLITE_CONSTRAINT: 'constraint',
  SQLITE_MISMATCH: 'constraint',
  SQLITE_TOOBIG: 'too_big',
  SQLITE_NOMEM: 'nomem',
  SQLITE_INTERRUPT: 'interrupted',
  SQLITE_SCHEMA: 'schema',
};

/**
 * Maps a better-sqlite3 error to a StoreError kind by its primary result code
 * (`SQLITE_IOERR_WRITE` → `io`, `SQLITE_BUSY_SNAPSHOT` → `busy`); `internal` when
 * the error carries no SQLite code.
 *
 * @example
 * classifySqliteError({ code: 'SQLITE_FULL' }); // 'full'
 */
export function classifySqliteError(error: unknown): string {
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  if (typeof code !== 'string') return 'internal';
  const primary = /^SQLITE_[A-Z]+/.exec(code)?.[0];
  return (primary !== undefined ? KINDS[primary] : undefined) ?? 'internal';
}

/** Wraps any failure as a StoreError of `operation`, keeping StoreErrors as they are. */
function toStoreError(error: unknown, operation: StoreOperation, actorId?: string): StoreError {
  if (error instanceof StoreError) return error;
  const code =
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
      ? `${error.code}: `
      : '';
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(
    { operation, kind: classifySqliteError(error), actorId, detail: `${code}${message}` },
    { cause: error },
  );
}

const ACTOR_COLUMNS = `id, machine_id AS machineId, chart_version AS chartVersion, version, state,
  status, snapshot, created_at AS createdAt, updated_at AS updatedAt, head_hash AS headHash`;
const TRANSITION_COLUMNS = `actor_id AS actorId, seq, from_state AS fromState, to_state AS toState,
  event_type AS eventType, event, at, metadata, prev_hash AS prevHash, hash`;
const TIMER_COLUMNS = 'actor_id AS actorId, timer_id AS timerId, event, due_at AS dueAt';
const STEP_COLUMNS = `key, actor_id AS actorId, name, status, result, started_at AS startedAt,
  finished_at AS finishedAt, attempts`;
const REJECTION_COLUMNS = `actor_id AS actorId, machine_id AS machineId, state,
  event_type AS eventType, reason, at`;

type Params = Record<string, unknown>;

/**
 * Opens (creating if needed) the SQLite store in `file` (`:memory:` for a private
 * in-memory database) and migrates its schema.
 *
 * @example
 * const store = openSqliteStore('./agentcharts.db', { busyTimeoutMs: 2000 });
 */
export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStore(file, options);
}

/** The SQLite implementation of Store. See {@link openSqliteStore}. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly location: string;
  /**
   * The underlying connection, for diagnostics and fault-injection tests. Writing
   * through it bypasses every check of the store.
   */
  readonly db: Database.Database;
  // TypeScript `private`, not `#`: wrappers built with Object.create or Proxy
  // (instrumentation, fault injection) must still reach these members.
  private closed = false;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly commitBatch: Database.Transaction<
    (writes: readonly ActorWrite[]) => Array<Error | null>
  >;
  private readonly commitOne: Database.Transaction<(write: ActorWrite) => void>;
  private readonly commitFast: Database.Transaction<(writes: readonly ActorWrite[]) => void>;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    this.location = `sqlite:${file}`;
    const readonly = options.readonly ?? false;
    let db: Database.Database;
    try {
      db = new Database(file, {
        readonly,
        fileMustExist: readonly,
        timeout: options.busyTimeoutMs ?? 5000,
      });
    } catch (error) {
      // A missing directory surfaces as a TypeError without a SQLite code.
      const store = toStoreError(error, 'open');
      throw store.kind === 'internal'
        ? new StoreError(
            {
              operation: 'open',
              kind: 'cantopen',
              detail: error instanceof Error ? error.message : String(error),
            },
            { cause: error },
          )
        : store;
    }
    try {
      // Set explicitly: the bundled build's defaults are not what durability needs.
      if (!readonly && file !== ':memory:') {
        const mode = db.pragma('journal_mode = WAL', { simple: true }) as string;
        if (mode !== 'wal') {
          throw new StoreError({
            operation: 'open',
            kind: 'unsupported',
            detail: `journal_mode is ${mode}, WAL is required`,
          });
        }
      }
      db.pragma(`synchronous = ${(options.synchronous ?? 'full').toUpperCase()}`);
      db.pragma('foreign_keys = ON');
    } catch (error) {
      db.close();
      throw toStoreError(error, 'open');
    }
    try {
      migrateSqlite(db);
    } catch (error) {
      db.close();
      throw toStoreError(error, 'migrate');
    }
    this.db = db;
    // Called inside commitBatch, better-sqlite3 runs commitOne as a SAVEPOINT:
    // a failed write rolls back alone and the batch goes on.
    this.commitOne = db.transaction((write: ActorWrite) => this.applyWrite(write));
    this.commitBatch = db.transaction((writes: readonly ActorWrite[]) =>
      writes.map((write) => this.applyInSavepoint(write)),
    );
    // The common case, every write succeeding, needs no savepoints: a SAVEPOINT per
    // write doubled the cost of a batch (measured: 63-90 us vs 28-41 us per write).
    // When one write fails, the whole transaction rolls back and the batch is
    // applied again, each write in its own savepoint.
    this.commitFast = db.transaction((writes: readonly ActorWrite[]) => {
      for (const write of writes) {
        const invalid = invalidWrite(write);
        if (invalid) throw invalid;
        this.applyWrite(write);
      }
    });
  }

  /** A cached prepared statement. */
  private sql(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs one operation: refused once closed, any failure classified as a StoreError. */
  private run<T>(
    operation: StoreOperation,
    actorId: string | undefined,
    work: () => T,
  ): Promise<T> {
    try {
      if (this.closed) {
        throw new StoreError({ operation, kind: 'closed', actorId, detail: 'the store is closed' });
      }
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(toStoreError(error, operation, actorId));
    }
  }

  private actorVersion(actorId: string): number | undefined {
    const row = this.sql('SELECT version FROM actors WHERE id = ?').get(actorId) as
      { version: number } | undefined;
    return row?.version;
  }

  /** One write inside its savepoint; a per-write failure comes back as the value. */
  private applyInSavepoint(write: ActorWrite): Error | null {
    const invalid = invalidWrite(write);
    if (invalid) return invalid;
    try {
      this.commitOne(write);
      return null;
    } catch (error) {
      if (
        error instanceof ConcurrencyError ||
        error instanceof LeaseLostError ||
        error instanceof StoreError
      ) {
        return error;
      }
      // A constraint failure is this write's own; anything else (busy, full, io)
      // fails the whole batch, and SQLite may already have rolled it back.
      if (classifySqliteError(error) === 'constraint' && this.db.inTransaction) {
        return toStoreError(error, 'commit', write.actorId);
      }
      throw error;
    }
  }

  private applyWrite(write: ActorWrite): void {
    const { actorId, expectedVersion } = write;
    if (write.lease !== undefined) {
      // Checked under the write lock IMMEDIATE took: no other worker can take the
      // lease between this check and the commit.
      const current = this.sql(
        'SELECT owner, lease_until AS leaseUntil FROM actors WHERE id = ?',
      ).get(actorId) as { owner: string | null; leaseUntil: number | null } | undefined;
      const lost = leaseViolation(write, current);
      if (lost) throw lost;
    }
    if (expectedVersion === 0) {
      const inserted = this.sql(
        `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
           created_at, updated_at, head_hash, user_id, state_since)
         VALUES (@id, @machineId, @chartVersion, @version, @state, @status, @snapshot,
           @createdAt, @updatedAt, @headHash, @userId, @enteredAt)
         ON CONFLICT (id) DO NOTHING`,
      ).run({ ...write.actor, userId: write.userId ?? null, enteredAt: write.transition.at });
      if (inserted.changes === 0) {
        throw new ConcurrencyError({
          actorId,
          expectedVersion,
          actualVersion: this.actorVersion(actorId),
        });
      }
    } else {
      const updated = this.sql(
        `UPDATE actors SET machine_id = @machineId, chart_version = @chartVersion,
           version = @version, state = @state, status = @status, snapshot = @snapshot,
           updated_at = @updatedAt, head_hash = @headHash,
           state_since = CASE WHEN state = @state THEN state_since ELSE @enteredAt END
         WHERE id = @id AND version = @expectedVersion`,
      ).run({ ...write.actor, expectedVersion, enteredAt: write.transition.at });
      if (updated.changes === 0) {
        const actualVersion = this.actorVersion(actorId);
        if (actualVersion === undefined) throw actorMissing(actorId);
        throw new ConcurrencyError({ actorId, expectedVersion, actualVersion });
      }
    }
    const deleteTimer = this.sql('DELETE FROM timers WHERE actor_id = ? AND timer_id = ?');
    if (
      write.consumeTimer !== undefined &&
      deleteTimer.run(actorId, write.consumeTimer).changes !== 1
    ) {
      // The CAS matched, so the actor stood at expectedVersion: the timer was
      // consumed by another writer at that version.
      throw new ConcurrencyError({ actorId, expectedVersion, actualVersion: expectedVersion });
    }
    for (const timerId of write.timersCancel) deleteTimer.run(actorId, timerId);
    const upsertTimer = this.sql(
      `INSERT INTO timers (actor_id, timer_id, event, due_at)
       VALUES (@actorId, @timerId, @event, @dueAt)
       ON CONFLICT (actor_id, timer_id) DO UPDATE SET event = excluded.event,
         due_at = excluded.due_at, claimed_by = NULL, claim_until = NULL`,
    );
    for (const timer of write.timersSet) upsertTimer.run(timer);
    this.sql(
      `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
         metadata, prev_hash, hash)
       VALUES (@actorId, @seq, @fromState, @toState, @eventType, @event, @at,
         @metadata, @prevHash, @hash)`,
    ).run(write.transition);
  }

  commit(writes: readonly ActorWrite[]): Promise<Array<Error | null>> {
    const actorId = writes.length === 1 ? writes[0]?.actorId : undefined;
    // IMMEDIATE takes the write lock up front, so busy_timeout applies; a deferred
    // upgrade could fail with SQLITE_BUSY without waiting.
    return this.run('commit', actorId, () => {
      if (writes.length === 0) return [];
      try {
        this.commitFast.immediate(writes);
        return writes.map(() => null);
      } catch (error) {
        const own =
          error instanceof ConcurrencyError ||
          error instanceof LeaseLostError ||
          error instanceof StoreError ||
          classifySqliteError(error) === 'constraint';
        if (!own) throw error;
        // Rolled back whole: apply again with a savepoint per write, so only the
        // failing write is refused.
        return this.commitBatch.immediate(writes);
      }
    });
  }

  loadActor(actorId: string): Promise<ActorRow | undefined> {
    return this.run(
      'load',
      actorId,
      () =>
        this.sql(`SELECT ${ACTOR_COLUMNS} FROM actors WHERE id = ?`).get(actorId) as
          ActorRow | undefined,
    );
  }

  listActors(query: ActorQuery = {}): Promise<ActorRow[]> {
    return this.run('query', undefined, () => {
      const filters: string[] = [];
      const params: Params = { limit: checkLimit(query.limit ?? 100, 'query') };
      const filter = (column: string, name: string, value: string | undefined, op = '=') => {
        if (value === undefined) return;
        filters.push(`${column} ${op} @${name}`);
        params[name] = value;
      };
      filter('machine_id', 'machineId', query.machineId);
      filter('state', 'state', query.state);
      filter('status', 'status', query.status);
      filter('id', 'afterId', query.afterId, '>');
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.sql(`SELECT ${ACTOR_COLUMNS} FROM actors ${where} ORDER BY id LIMIT @limit`).all(
        params,
      ) as ActorRow[];
    });
  }

  history(actorId: string): Promise<TransitionRow[]> {
    return this.run(
      'query',
      actorId,
      () =>
        this.sql(
          `SELECT ${TRANSITION_COLUMNS} FROM transitions WHERE actor_id = ? ORDER BY seq`,
        ).all(actorId) as TransitionRow[],
    );
  }

  actorIdsWithHistory(): Promise<string[]> {
    return this.run('query', undefined, () =>
      this.sql('SELECT DISTINCT actor_id FROM transitions ORDER BY actor_id')
        .pluck()
        .all()
        .map(String),
    );
  }

  timers(actorId: string): Promise<TimerRow[]> {
    return this.run(
      'timer',
      actorId,
      () =>
        this.sql(
          `SELECT ${TIMER_COLUMNS} FROM timers WHERE actor_id = ? ORDER BY due_at, timer_id`,
        ).all(actorId) as TimerRow[],
    );
  }

  dueTimers(now: number, limit: number): Promise<TimerRow[]> {
    return this.run(
      'timer',
      undefined,
      () =>
        this.sql(
          `SELECT ${TIMER_COLUMNS} FROM timers WHERE due_at <= ?
           ORDER BY due_at, actor_id, timer_id LIMIT ?`,
        ).all(now, checkLimit(limit, 'timer')) as TimerRow[],
    );
  }

  nextTimerDue(): Promise<number | undefined> {
    return this.run('timer', undefined, () => {
      const due = this.sql('SELECT MIN(due_at) FROM timers').pluck().get() as number | null;
      return due ?? undefined;
    });
  }

  private stepRow(key: string): StepRow | undefined {
    return this.sql(`SELECT ${STEP_COLUMNS} FROM steps WHERE key = ?`).get(key) as
      StepRow | undefined;
  }

  getStep(key: string): Promise<StepRow | undefined> {
    return this.run('step', undefined, () => this.stepRow(key));
  }

  beginStep(step: {
    key: string;
    actorId: string;
    name: string;
    startedAt: number;
  }): Promise<{ row: StepRow; created: boolean }> {
    return this.run('step', step.actorId, () => {
      const { changes } = this.sql(
        `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at, attempts)
         VALUES (@key, @actorId, @name, 'executing', NULL, @startedAt, NULL, 1)
         ON CONFLICT (key) DO NOTHING`,
      ).run(step);
      const row = this.stepRow(step.key);
      if (row === undefined) throw stepMiss(step.key, row, 'present');
      return { row, created: changes === 1 };
    });
  }

  finishStep(
    key: string,
    status: 'done' | 'failed',
    result: string,
    finishedAt: number,
  ): Promise<void> {
    return this.run('step', undefined, () => {
      const { changes } = this.sql(
        `UPDATE steps SET status = ?, result = ?, finished_at = ?
         WHERE key = ? AND status = 'executing'`,
      ).run(status, result, finishedAt, key);
      if (changes === 0) throw stepMiss(key, this.stepRow(key), 'executing');
    });
  }

  restartStep(key: string, startedAt: number): Promise<void> {
    return this.run('step', undefined, () => {
      const { changes } = this.sql(
        `UPDATE steps SET status = 'executing', result = NULL, started_at = ?, finished_at = NULL,
           attempts = attempts + 1
         WHERE key = ? AND status <> 'done'`,
      ).run(startedAt, key);
      if (changes === 0) throw stepMiss(key, this.stepRow(key), 'executing or failed');
    });
  }

  listSteps(query: { actorId?: string; status?: StepStatus } = {}): Promise<StepRow[]> {
    return this.run('step', query.actorId, () => {
      const filters: string[] = [];
      if (query.actorId !== undefined) filters.push('actor_id = @actorId');
      if (query.status !== undefined) filters.push('status = @status');
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.sql(`SELECT ${STEP_COLUMNS} FROM steps ${where} ORDER BY started_at, key`).all(
        query,
      ) as StepRow[];
    });
  }

  /** Runs `work` in a BEGIN IMMEDIATE transaction (the write lock taken up front). */
  private immediate<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  acquireLeases(request: {
    owner: string;
    now: number;
    leaseUntil: number;
    limit: number;
    actorIds?: readonly string[] | undefined;
  }): Promise<LeaseRow[]> {
    return this.run('commit', undefined, () => {
      checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil, limit, actorIds } = request;
      const free = '(owner IS NULL OR lease_until IS NULL OR lease_until < @now)';
      const pick =
        actorIds === undefined
          ? `SELECT id FROM actors WHERE status = 'active' AND ${free} ORDER BY id LIMIT @limit`
          : `SELECT id FROM actors WHERE id IN (SELECT value FROM json_each(@ids))
               AND (${free} OR owner = @owner) ORDER BY id LIMIT @limit`;
      const rows = this.immediate(
        () =>
          this.sql(
            `UPDATE actors SET owner = @owner, lease_until = @leaseUntil WHERE id IN (${pick})
             RETURNING id AS actorId, owner, lease_until AS leaseUntil`,
          ).all({
            owner,
            now,
            leaseUntil,
            limit,
            ids: JSON.stringify(actorIds ?? []),
          }) as LeaseRow[],
      );
      return rows.sort((a, b) => compareText(a.actorId, b.actorId));
    });
  }

  renewLeases(request: {
    owner: string;
    now: number;
    leaseUntil: number;
    actorIds: readonly string[];
  }): Promise<string[]> {
    return this.run('commit', undefined, () => {
      checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil, actorIds } = request;
      const ids = this.immediate(() =>
        this.sql(
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
    });
  }

  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void> {
    return this.run('commit', undefined, () => {
      checkLeaseRequest('commit', { owner });
      this.sql(
        `UPDATE actors SET owner = NULL, lease_until = NULL
         WHERE owner = @owner AND id IN (SELECT value FROM json_each(@ids))`,
      ).run({ owner, ids: JSON.stringify(actorIds) });
    });
  }

  lease(actorId: string): Promise<LeaseRow | undefined> {
    return this.run(
      'load',
      actorId,
      () =>
        this.sql(
          `SELECT id AS actorId, owner, lease_until AS leaseUntil FROM actors
           WHERE id = ? AND owner IS NOT NULL AND lease_until IS NOT NULL`,
        ).get(actorId) as LeaseRow | undefined,
    );
  }

  claimDueTimers(request: {
    owner: string;
    now: number;
    claimUntil: number;
    limit: number;
  }): Promise<TimerClaim[]> {
    return this.run('timer', undefined, () => {
      checkLeaseRequest('timer', request);
      const rows = this.immediate(
        () =>
          this.sql(
            `UPDATE timers SET claimed_by = @owner, claim_until = @claimUntil
             WHERE (actor_id, timer_id) IN (
               SELECT actor_id, timer_id FROM timers
               WHERE due_at <= @now
                 AND (claimed_by IS NULL OR claim_until IS NULL OR claim_until < @now)
               ORDER BY due_at, actor_id, timer_id LIMIT @limit)
             RETURNING ${TIMER_COLUMNS}, claimed_by AS claimedBy, claim_until AS claimUntil`,
          ).all(request) as TimerClaim[],
      );
      return rows.sort(byTimer);
    });
  }

  recordRejection(row: RejectionRow): Promise<void> {
    return this.run('commit', row.actorId, () => {
      this.sql(
        `INSERT INTO rejections (actor_id, machine_id, state, event_type, reason, at)
         VALUES (@actorId, @machineId, @state, @eventType, @reason, @at)`,
      ).run(row);
    });
  }

  listRejections(query: { since?: number; actorId?: string } = {}): Promise<RejectionRow[]> {
    return this.run('query', query.actorId, () => {
      const filters: string[] = [];
      if (query.since !== undefined) filters.push('at >= @since');
      if (query.actorId !== undefined) filters.push('actor_id = @actorId');
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.sql(`SELECT ${REJECTION_COLUMNS} FROM rejections ${where} ORDER BY at, id`).all(
        query,
      ) as RejectionRow[];
    });
  }

  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number> {
    return this.run('query', undefined, () => {
      const filters = ['at >= @since'];
      if (query.until !== undefined) filters.push('at < @until');
      if (query.reason !== undefined) filters.push('reason = @reason');
      return this.sql(`SELECT COUNT(*) FROM rejections WHERE ${filters.join(' AND ')}`)
        .pluck()
        .get(query) as number;
    });
  }

  countActors(query: ActorCountQuery = {}): Promise<ActorCount[]> {
    return this.run('query', undefined, () => {
      const filters: string[] = [];
      if (query.machineId !== undefined) filters.push('machine_id = @machineId');
      if (query.userId !== undefined) filters.push('user_id = @userId');
      if (query.updatedSince !== undefined) filters.push('updated_at >= @updatedSince');
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.sql(
        `SELECT machine_id AS machineId, state, status, COUNT(*) AS count,
           TOTAL(updated_at - created_at) AS totalAgeMs
         FROM actors ${where}
         GROUP BY machine_id, state, status ORDER BY machine_id, state, status`,
      ).all(query) as ActorCount[];
    });
  }

  actorsInStates(query: StatesQuery): Promise<ActorDwell[]> {
    return this.run('query', undefined, () => {
      const filters = ['state IN (SELECT value FROM json_each(@states))'];
      if (query.machineId !== undefined) filters.push('machine_id = @machineId');
      if (query.userId !== undefined) filters.push('user_id = @userId');
      if (query.enteredBefore !== undefined) filters.push('state_since <= @enteredBefore');
      return this.sql(
        `SELECT id AS actorId, machine_id AS machineId, state, status, state_since AS stateSince,
           updated_at AS updatedAt, user_id AS userId
         FROM actors WHERE ${filters.join(' AND ')}
         ORDER BY state_since, id LIMIT @limit`,
      ).all({
        ...query,
        states: JSON.stringify(query.states),
        limit: checkLimit(query.limit ?? 100, 'query'),
      }) as ActorDwell[];
    });
  }

  countStateEntries(query: StateEntryQuery): Promise<StateEntryCount[]> {
    return this.run('query', undefined, () => {
      return this.sql(
        `SELECT e.actor_id AS actorId, a.machine_id AS machineId, a.state, a.status, e.count
         FROM (SELECT actor_id, COUNT(*) AS count FROM transitions
               WHERE to_state IN (SELECT value FROM json_each(@states)) AND at >= @since
                 AND from_state IS NOT to_state
               GROUP BY actor_id HAVING COUNT(*) >= @minCount) e
         JOIN actors a ON a.id = e.actor_id
         ORDER BY e.count DESC, e.actor_id LIMIT @limit`,
      ).all({
        states: JSON.stringify(query.toStates),
        since: query.since,
        minCount: Math.max(1, query.minCount ?? 1),
        limit: checkLimit(query.limit ?? 100, 'query'),
      }) as StateEntryCount[];
    });
  }

  transitionsSince(query: {
    since: number;
    machineId?: string | undefined;
    limit?: number | undefined;
  }): Promise<TransitionFeedRow[]> {
    return this.run('query', undefined, () => {
      const machine = query.machineId !== undefined ? 'AND a.machine_id = @machineId' : '';
      return this.sql(
        `SELECT t.actor_id AS actorId, t.seq, t.from_state AS fromState, t.to_state AS toState,
           t.event_type AS eventType, t.event, t.at, t.metadata, t.prev_hash AS prevHash,
           t.hash, a.machine_id AS machineId
         FROM transitions t JOIN actors a ON a.id = t.actor_id
         WHERE t.at >= @since ${machine}
         ORDER BY t.at, t.actor_id, t.seq LIMIT @limit`,
      ).all({
        since: query.since,
        machineId: query.machineId,
        limit: checkLimit(query.limit ?? 1000, 'query'),
      }) as TransitionFeedRow[];
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    try {
      this.db.close();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(toStoreError(error, 'close'));
    }
  }
}
