/**
 * The embedded default store: one SQLite file through better-sqlite3, in WAL mode
 * with `synchronous=FULL` (a committed transition survives power loss). Every
 * operation is synchronous underneath; the async surface exists for the Store
 * contract shared with PostgreSQL.
 */
import type Database from 'better-sqlite3';
import { StoreError, type StoreOperation } from '../../core/errors.ts';
import { checkHistoryPage, checkLimit } from '../rules.ts';
import type * as S from '../types.ts';
import { RefreshSchedule } from '../refresh-schedule.ts';
import { SqliteCommitter } from './commit.ts';
import { openDatabase, Statements, toStoreError, type SqliteStoreOptions } from './connection.ts';
import { SqliteLeases } from './leases.ts';
import { ACTOR_LOG, LOG_ROW_COLUMNS } from './log.ts';
import { SqliteReadModels } from './read-models.ts';
import { SqliteSteps } from './steps.ts';
import { SqliteTimers } from './timers.ts';
import { actorsByStatus, dirtyActors, SQLITE_LOG } from '../sql-common.ts';
import { requireOptions, requireText } from '../../core/options.ts';

export { classifySqliteError, type SqliteStoreOptions } from './connection.ts';

const ACTOR_COLUMNS = `id, machine_id AS machineId, chart_version AS chartVersion, version, state,
  status, snapshot, created_at AS createdAt, updated_at AS updatedAt, head_hash AS headHash`;
/** {@link ACTOR_COLUMNS} of the actor row `a` in a join. */
const ACTOR_COLUMNS_OF_A = `a.id, a.machine_id AS machineId, a.chart_version AS chartVersion,
  a.version, a.state, a.status, a.snapshot, a.created_at AS createdAt, a.updated_at AS updatedAt,
  a.head_hash AS headHash`;
const TRANSITION_COLUMNS = `actor_id AS actorId, seq, from_state AS fromState, to_state AS toState,
  event_type AS eventType, event, at, metadata, prev_hash AS prevHash, hash,
  chart_version AS chartVersion, snapshot_hash AS snapshotHash`;
const REJECTION_COLUMNS = `actor_id AS actorId, machine_id AS machineId, state,
  event_type AS eventType, reason, at`;

type Params = Record<string, unknown>;

/** The SQLite implementation of Store. See {@link openSqliteStore}. */
export class SqliteStore implements S.Store {
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
  private readonly statements: Statements;
  private readonly committer: SqliteCommitter;
  private readonly readModels: SqliteReadModels;
  private readonly steps: SqliteSteps;
  private readonly leases: SqliteLeases;
  private readonly timerRows: SqliteTimers;
  private readonly refreshes: RefreshSchedule;
  /** The connection's `synchronous` level (1 NORMAL, 2 FULL, 3 EXTRA). */
  private readonly syncLevel: number;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    requireText('SqliteStore', 'file', file, 'a file name (or :memory:)');
    requireOptions('SqliteStore', options);
    this.location = `sqlite:${file}`;
    this.db = openDatabase(file, options);
    this.syncLevel = this.db.pragma('synchronous', { simple: true }) as number;
    this.statements = new Statements(this.db);
    this.committer = new SqliteCommitter(this.db, this.statements);
    const writable = !(options.readonly ?? false);
    this.readModels = new SqliteReadModels(this.db, this.statements, writable);
    this.steps = new SqliteSteps(this.statements);
    const applied = () => this.readModels.mark();
    this.leases = new SqliteLeases(this.db, this.statements, applied);
    this.timerRows = new SqliteTimers(this.db, this.statements, applied);
    this.refreshes = new RefreshSchedule(writable ? (options.readModelRefreshMs ?? 250) : 0, () =>
      this.readModels.refresh(),
    );
  }

  /** A cached prepared statement. */
  private sql(sql: string): Database.Statement {
    return this.statements.get(sql);
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

  /** Runs one read (an operation of kind `query`, about no one actor). */
  private query<T>(work: () => T): Promise<T> {
    return this.run('query', undefined, work);
  }

  /** Runs one operation that returns every row of a cached statement, bound to `params`. */
  private allRows<R>(
    operation: StoreOperation,
    actorId: string | undefined,
    sql: string,
    ...params: unknown[]
  ): Promise<R[]> {
    return this.run(operation, actorId, () => this.sql(sql).all(...params) as R[]);
  }

  commit(writes: readonly S.ActorWrite[]): Promise<Array<Error | null>> {
    const actorId = writes.length === 1 ? writes[0]?.actorId : undefined;
    return this.run('commit', actorId, () => {
      const results = this.committer.commit(writes);
      if (writes.length > 0) this.refreshes.soon();
      return results;
    });
  }

  refreshReadModels(): Promise<void> {
    return this.query(() => {
      this.readModels.refresh();
    });
  }

  rebuildReadModels(): Promise<{ actors: number; entries: number }> {
    return this.query(() => this.readModels.rebuild());
  }

  private noncesSweptAt = 0;

  rememberRequest(request: S.RememberedRequest): Promise<'new' | 'replayed'> {
    return this.run('commit', undefined, () => {
      if (request.now - this.noncesSweptAt > 60_000) {
        this.noncesSweptAt = request.now;
        this.sql('DELETE FROM request_nonces WHERE expires_at < ?').run(request.now);
      }
      // An expired entry under the same nonce is replaced; a live one is a replay.
      const inserted = this.sql(
        `INSERT INTO request_nonces (key_id, nonce, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
         WHERE request_nonces.expires_at < ?`,
      ).run(request.key, request.nonce, request.expiresAt, request.now);
      return inserted.changes === 1 ? 'new' : 'replayed';
    });
  }

  loadActor(actorId: string): Promise<S.ActorRow | undefined> {
    return this.run(
      'load',
      actorId,
      () =>
        this.sql(`SELECT ${ACTOR_COLUMNS} FROM actors WHERE id = ?`).get(actorId) as
          S.ActorRow | undefined,
    );
  }

  loadActorHead(actorId: string): Promise<S.ActorHead | undefined> {
    return this.run('load', actorId, () => {
      const found = this.sql(
        `SELECT ${ACTOR_COLUMNS}, parent_id AS parentId, head_tx AS headTx
         FROM actors WHERE id = ?`,
      ).get(actorId) as
        (S.ActorRow & { parentId: string | null; headTx: number | null }) | undefined;
      if (found === undefined) return undefined;
      const { parentId, headTx, ...actor } = found;
      // The row the actor names as its head, if it is the actor's row at its version.
      const head = this.sql(
        `SELECT ${TRANSITION_COLUMNS} FROM transitions WHERE tx = ? AND actor_id = ? AND seq = ?`,
      ).get(headTx, actorId, actor.version) as S.TransitionRow | undefined;
      return parentId === null ? { actor, head } : { actor, head, parentId };
    });
  }

  listActors(query: S.ActorQuery = {}): Promise<S.ActorRow[]> {
    return this.query(() => {
      const filters: string[] = [];
      const params: Params = { limit: checkLimit(query.limit ?? 100, 'query') };
      const filter = (column: string, name: string, value: string | undefined) => {
        if (value === undefined) return;
        filters.push(`a.${column} = @${name}`);
        params[name] = value;
      };
      filter('machine_id', 'machineId', query.machineId);
      filter('state', 'state', query.state);
      filter('user_id', 'userId', query.userId);
      if (query.states !== undefined) {
        if (query.states.length === 0) return [];
        const names = query.states.map((s, i) => {
          params[`s${i}`] = s;
          return `@s${i}`;
        });
        filters.push(`a.state IN (${names.join(', ')})`);
      }
      const also = filters.length > 0 ? filters.join(' AND ') : 'TRUE';
      if (query.status === undefined) {
        if (query.afterId !== undefined) filters.push('a.id > @afterId');
        params['afterId'] = query.afterId;
        const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
        return this.sql(
          `SELECT ${ACTOR_COLUMNS} FROM actors a ${where} ORDER BY a.id LIMIT @limit`,
        ).all(params) as S.ActorRow[];
      }
      // Ids are never empty: '' precedes them all.
      params['afterId'] = query.afterId ?? '';
      // By status through the projection (a literal: only then does SQLite use the
      // partial index of unfinished actors, which recovery pages through).
      params['applied'] = this.readModels.mark();
      const status = `'${checkStatus(query.status)}'`;
      if (this.readModels.foldedUpTo(params['applied'] as number)) {
        // Nothing to overlay: the projection's index joined to the rows, as a raw scan
        // would (recovery's pages of 100k unfinished actors: ~20% less time).
        return this.sql(
          `SELECT ${ACTOR_COLUMNS_OF_A} FROM actor_index i JOIN actors a ON a.id = i.actor_id
           WHERE i.status = ${status} AND a.status = ${status} AND i.actor_id > @afterId
             AND ${also}
           ORDER BY i.actor_id LIMIT @limit`,
        ).all(params) as S.ActorRow[];
      }
      return this.sql(
        `WITH ${dirtyActors('rowid > @applied', SQLITE_LOG)},
           ${actorsByStatus(status, '@afterId', '@limit', also)}
         SELECT ${ACTOR_COLUMNS} FROM actors WHERE id IN (SELECT id FROM picked)
         ORDER BY id LIMIT @limit`,
      ).all(params) as S.ActorRow[];
    });
  }

  history(actorId: string, page: S.HistoryPage = {}): Promise<S.TransitionRow[]> {
    return this.run('query', actorId, () => {
      const { afterSeq, limit } = checkHistoryPage(page);
      return this.sql(
        `SELECT ${LOG_ROW_COLUMNS} FROM ${ACTOR_LOG}
         WHERE l.actor_id = ? AND l.seq > ? ORDER BY l.seq, l.tx LIMIT ?`,
      ).all(actorId, afterSeq, limit ?? -1) as S.TransitionRow[];
    });
  }

  readActorLog(actorId: string): Promise<S.ActorLog | undefined> {
    // One read transaction: another process committing between the statements is
    // seen by all of them or none (WAL readers keep their snapshot).
    const read = this.db.transaction(() => {
      const found = this.sql(
        `SELECT ${ACTOR_COLUMNS}, parent_id AS parentId, next_due_at AS nextDueAt
         FROM actors WHERE id = ?`,
      ).get(actorId) as
        (S.ActorRow & { parentId: string | null; nextDueAt: number | null }) | undefined;
      if (found === undefined) return undefined;
      const { parentId, nextDueAt, ...actor } = found;
      let rows = this.sql(
        `SELECT ${LOG_ROW_COLUMNS} FROM ${ACTOR_LOG}
         WHERE l.actor_id = ? ORDER BY l.seq, l.tx`,
      ).all(actorId) as S.TransitionRow[];
      if (!wholeChain(actor, rows)) {
        // Not the log its actor row describes: the log or the projection of its keys
        // was damaged (or edited). What verify must judge is the log itself, read
        // whole, so a damaged read model never makes an honest log look broken.
        rows = this.sql(
          `SELECT ${LOG_ROW_COLUMNS} FROM transitions t WHERE t.actor_id = ? ORDER BY t.seq, t.tx`,
        ).all(actorId) as S.TransitionRow[];
      }
      return { actor, parentId: parentId ?? undefined, rows, nextDueAt: nextDueAt ?? undefined };
    });
    return this.run('query', actorId, () => read());
  }

  actorIdsWithHistory(): Promise<string[]> {
    return this.query(() =>
      this.sql('SELECT DISTINCT actor_id FROM transitions ORDER BY actor_id')
        .pluck()
        .all()
        .map(String),
    );
  }

  timers(actorId: string): Promise<S.TimerRow[]> {
    return this.run('timer', actorId, () => this.timerRows.timers(actorId));
  }

  dueTimers(now: number, limit: number): Promise<S.TimerRow[]> {
    return this.run('timer', undefined, () => this.timerRows.dueTimers(now, limit));
  }

  nextTimerDue(): Promise<number | undefined> {
    return this.run('timer', undefined, () => this.timerRows.nextTimerDue());
  }

  claimDueTimers(request: S.TimerClaimRequest): Promise<S.TimerClaim[]> {
    return this.run('timer', undefined, () => this.timerRows.claimDueTimers(request));
  }

  getStep(key: string): Promise<S.StepRow | undefined> {
    return this.run('step', undefined, () => this.steps.get(key));
  }

  beginStep(step: S.NewStep): Promise<{ row: S.StepRow; created: boolean }> {
    return this.run('step', step.actorId, () => this.steps.begin(step));
  }

  finishStep(key: string, status: S.StepEnd, result: string | null, at: number): Promise<void> {
    return this.run('step', undefined, () => this.steps.finish(key, status, result, at));
  }

  pendingMessages(query: S.MessageQuery): Promise<S.MessageRow[]> {
    return this.run('query', query.to, () => {
      const filters = ['id > @afterId'];
      if (query.to !== undefined) filters.push('to_actor = @to');
      return this.sql(
        `SELECT id, to_actor AS "to", from_actor AS "from", from_seq AS fromSeq, idx, kind, body, at
         FROM messages WHERE ${filters.join(' AND ')} ORDER BY id LIMIT @limit`,
      ).all({
        to: query.to,
        afterId: query.afterId ?? 0,
        limit: checkLimit(query.limit, 'query'),
      }) as S.MessageRow[];
    });
  }

  dropMessage(id: number): Promise<boolean> {
    // Idempotent (see the contract): no fsync of its own; the next commit that syncs
    // the log makes the deletion durable.
    return this.run('commit', undefined, () => {
      const relax = this.syncLevel > 1;
      if (relax) this.sql('PRAGMA synchronous = NORMAL').run();
      try {
        return this.sql('DELETE FROM messages WHERE id = ?').run(id).changes === 1;
      } finally {
        if (relax) this.sql(`PRAGMA synchronous = ${this.syncLevel}`).run();
      }
    });
  }

  childrenOf(parentId: string): Promise<S.ActorRow[]> {
    const sql = `SELECT ${ACTOR_COLUMNS} FROM actors WHERE parent_id = ? AND parent_id IS NOT NULL
      ORDER BY id`;
    return this.allRows<S.ActorRow>('query', parentId, sql, parentId);
  }

  startStep(key: string, startedAt: number): Promise<boolean> {
    return this.run('step', undefined, () => this.steps.start(key, startedAt));
  }

  restartStep(key: string, startedAt: number): Promise<void> {
    return this.run('step', undefined, () => this.steps.restart(key, startedAt));
  }

  listSteps(query: { actorId?: string; status?: S.StepStatus } = {}): Promise<S.StepRow[]> {
    return this.run('step', query.actorId, () => this.steps.list(query));
  }

  acquireLeases(request: S.LeaseRequest): Promise<S.LeaseRow[]> {
    return this.run('commit', undefined, () => this.leases.acquire(request));
  }

  renewLeases(request: S.LeaseRenewal): Promise<string[]> {
    return this.run('commit', undefined, () => this.leases.renew(request));
  }

  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void> {
    return this.run('commit', undefined, () => this.leases.release(owner, actorIds));
  }

  lease(actorId: string): Promise<S.LeaseRow | undefined> {
    return this.run('load', actorId, () => this.leases.lease(actorId));
  }

  recordRejection(row: S.RejectionRow): Promise<void> {
    return this.run('commit', row.actorId, () => {
      this.sql(
        `INSERT INTO rejections (actor_id, machine_id, state, event_type, reason, at)
         VALUES (@actorId, @machineId, @state, @eventType, @reason, @at)`,
      ).run(row);
    });
  }

  listRejections(query: { since?: number; actorId?: string } = {}): Promise<S.RejectionRow[]> {
    return this.run('query', query.actorId, () => {
      const filters: string[] = [];
      if (query.since !== undefined) filters.push('at >= @since');
      if (query.actorId !== undefined) filters.push('actor_id = @actorId');
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.sql(`SELECT ${REJECTION_COLUMNS} FROM rejections ${where} ORDER BY at, id`).all(
        query,
      ) as S.RejectionRow[];
    });
  }

  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number> {
    return this.query(() => {
      const filters = ['at >= @since'];
      if (query.until !== undefined) filters.push('at < @until');
      if (query.reason !== undefined) filters.push('reason = @reason');
      return this.sql(`SELECT COUNT(*) FROM rejections WHERE ${filters.join(' AND ')}`)
        .pluck()
        .get(query) as number;
    });
  }

  pruneRejections(query: { before?: number; keep?: number }): Promise<number> {
    return this.run('commit', undefined, () => {
      let deleted = 0;
      if (query.before !== undefined) {
        deleted += this.sql('DELETE FROM rejections WHERE at < ?').run(query.before).changes;
      }
      if (query.keep !== undefined) {
        // The newest row past `keep`: it and everything older go (one indexed range).
        const edge = this.sql(
          'SELECT at, id FROM rejections ORDER BY at DESC, id DESC LIMIT 1 OFFSET ?',
        ).get(query.keep) as { at: number; id: number } | undefined;
        if (edge) {
          deleted += this.sql('DELETE FROM rejections WHERE at < ? OR (at = ? AND id <= ?)').run(
            edge.at,
            edge.at,
            edge.id,
          ).changes;
        }
      }
      return deleted;
    });
  }

  countActors(query: S.ActorCountQuery = {}): Promise<S.ActorCount[]> {
    return this.query(() => this.readModels.countActors(query));
  }

  actorsInStates(query: S.StatesQuery): Promise<S.ActorDwell[]> {
    return this.query(() => this.readModels.actorsInStates(query));
  }

  countStateEntries(query: S.StateEntryQuery): Promise<S.StateEntryCount[]> {
    return this.query(() => this.readModels.countStateEntries(query));
  }

  transitionsSince(query: S.TransitionFeedQuery): Promise<S.TransitionFeedRow[]> {
    return this.query(() => this.readModels.transitionsSince(query));
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.refreshes.stop();
    try {
      this.db.close();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(toStoreError(error, 'close'));
    }
  }
}

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

const STATUSES: readonly S.ActorStatus[] = ['active', 'done', 'error', 'stopped'];

function checkStatus(status: string): S.ActorStatus {
  const known = STATUSES.find((s) => s === status);
  if (known === undefined) {
    throw new StoreError({ operation: 'query', kind: 'bad_query', detail: 'unknown status' });
  }
  return known;
}

/** Whether `rows` are seqs 1…version of `actor`, ending at its head. */
function wholeChain(actor: S.ActorRow, rows: readonly S.TransitionRow[]): boolean {
  if (rows.length !== actor.version || rows.at(-1)?.hash !== actor.headHash) return false;
  return rows.every((row, i) => row.seq === i + 1);
}
