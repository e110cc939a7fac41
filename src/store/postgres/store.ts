/**
 * The PostgreSQL store: several worker processes, on one machine or many, share
 * one database through a `pg` connection pool.
 *
 * - Compare-and-set on `actors.version` orders writers: a worker that loses a race
 *   gets ConcurrencyError for that write and reloads; no update is ever lost.
 * - `commit` is one transaction per batch with a savepoint per write, so one
 *   write's conflict rejects it alone, exactly as in SQLite.
 * - Leases (`owner`, `lease_until`) say which worker fires an actor's timers and
 *   runs its recovery; fenced writes check them under the row lock. Lease takeover
 *   and timer claims use `FOR UPDATE SKIP LOCKED`, so concurrent workers never
 *   take the same row and never wait on each other.
 * - Rows locked by a batch are always taken in actor-id order (the same byte order
 *   everywhere), so two workers' batches cannot deadlock.
 */
import type pg from 'pg';
import type { QueryConfig, QueryResultRow } from 'pg';
import { StoreError, type StoreOperation } from '../../core/errors.ts';
import { requireArg, requireOptions } from '../../core/options.ts';
import { RefreshSchedule } from '../refresh-schedule.ts';
import * as rules from '../rules.ts';
import type * as S from '../types.ts';
import { PostgresCommitter } from './commit.ts';
import { PostgresConnection, redact, toStoreError } from './connection.ts';
import { boundConditions, whereClause, type Filter } from './filters.ts';
import { PostgresLeases } from './leases.ts';
import { CommitAnnouncer, CommitNotifications } from './notifications.ts';
import type { PostgresStoreOptions } from './options.ts';
import { PostgresReadModels } from './read-models.ts';
import { PostgresSteps } from './steps.ts';
import { PostgresTimers } from './timers.ts';
import { PG_DIRTY } from './read-models.ts';
import { actorsByStatus } from '../sql-common.ts';

export { classifyPostgresError } from './connection.ts';
export type { PostgresStoreOptions } from './options.ts';

const ACTOR_COLUMNS = `id, machine_id AS "machineId", chart_version AS "chartVersion", version,
  state, status, snapshot, created_at AS "createdAt", updated_at AS "updatedAt",
  head_hash AS "headHash"`;
const TRANSITION_COLUMNS = `actor_id AS "actorId", seq, from_state AS "fromState",
  to_state AS "toState", event_type AS "eventType", event, at, metadata,
  prev_hash AS "prevHash", hash, chart_version AS "chartVersion",
  snapshot_hash AS "snapshotHash"`;
const REJECTION_COLUMNS = `actor_id AS "actorId", machine_id AS "machineId", state,
  event_type AS "eventType", reason, at`;

/**
 * Opens the PostgreSQL store at `url` (`postgres://user:password@host:port/db`).
 * Nothing connects until the first operation (or {@link PostgresStore.connect}),
 * which also applies pending schema migrations.
 *
 * @example
 * const store = openPostgresStore('postgres://app@db.internal/agentcharts', {
 *   statementTimeoutMs: 5000,
 * });
 * await store.connect(); // optional: fail fast on a wrong URL or a newer schema
 */
export function openPostgresStore(url: string, options: PostgresStoreOptions = {}): PostgresStore {
  return new PostgresStore(url, options);
}

/** The PostgreSQL implementation of Store. See {@link openPostgresStore}. */
export class PostgresStore implements S.Store {
  readonly kind = 'postgres';
  /** The URL without its password. */
  readonly location: string;
  /**
   * The connection pool, for diagnostics and fault-injection tests. Writing
   * through it bypasses every check of the store.
   */
  readonly pool: pg.Pool;
  readonly schema: string | undefined;
  // TypeScript `private`, not `#`: wrappers built with Object.create or Proxy
  // (instrumentation, fault injection) must still reach these members.
  private readonly conn: PostgresConnection;
  private readonly notifications: CommitNotifications;
  private readonly announcer: CommitAnnouncer;
  private readonly committer: PostgresCommitter;
  private readonly readModels: PostgresReadModels;
  private readonly steps: PostgresSteps;
  private readonly leases: PostgresLeases;
  private readonly timerRows: PostgresTimers;
  private readonly refreshes: RefreshSchedule;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    requireArg('PostgresStore', 'url', typeof url === 'string', 'a postgres:// URL');
    requireOptions('PostgresStore', options);
    const retries = options.rollbackRetries;
    requireArg(
      'PostgresStore',
      'options.rollbackRetries',
      retries === undefined || (Number.isSafeInteger(retries) && retries >= 0),
      'a whole number ≥ 0',
    );
    this.location = redact(url, options.schema);
    this.schema = options.schema;
    this.conn = new PostgresConnection(url, options);
    this.pool = this.conn.pool;
    this.notifications = new CommitNotifications(this.pool);
    this.readModels = new PostgresReadModels(
      <R>(text: string, values?: unknown[]) => this.conn.query(text, values) as Promise<R[]>,
      (work) => this.conn.inTransaction(work),
    );
    this.refreshes = new RefreshSchedule(options.readModelRefreshMs ?? 250, () =>
      this.readModels.refresh(),
    );
    this.announcer = new CommitAnnouncer(this.pool);
    this.committer = new PostgresCommitter(this.conn, () => {
      this.refreshes.soon();
      this.announcer.committed();
    });
    this.steps = new PostgresSteps(this.conn);
    this.leases = new PostgresLeases(this.conn);
    this.timerRows = new PostgresTimers(this.conn);
  }

  /**
   * Connects and brings the schema up to date (once; again after a failure).
   * Every operation does this first; call it to fail fast at start-up.
   */
  async connect(): Promise<void> {
    try {
      if (this.conn.closed) {
        throw new StoreError({ operation: 'open', kind: 'closed', detail: 'the store is closed' });
      }
      await this.conn.ensureReady();
    } catch (error) {
      throw toStoreError(error, 'open');
    }
  }

  /** Runs one operation: refused once closed, connected first, failures classified. */
  private run<T>(
    operation: StoreOperation,
    actorId: string | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    return this.conn.run(operation, actorId, work);
  }

  private query<R extends QueryResultRow>(
    text: string | QueryConfig,
    values?: unknown[],
  ): Promise<R[]> {
    return this.conn.query<R>(text, values);
  }

  /** `<select> WHERE …` over the filters whose value is defined, ordered by `orderBy`. */
  private selectWhere<R extends QueryResultRow>(
    select: string,
    orderBy: string,
    filters: readonly Filter[],
  ): Promise<R[]> {
    const values: unknown[] = [];
    const where = whereClause(values, filters);
    return this.query<R>(`${select} ${where} ORDER BY ${orderBy}`, values);
  }

  commit(writes: readonly S.ActorWrite[]): Promise<Array<Error | null>> {
    return this.committer.commit(writes);
  }

  loadActor(actorId: string): Promise<S.ActorRow | undefined> {
    return this.run('load', actorId, async () => {
      const rows = await this.query<S.ActorRow>({
        name: 'ac_load',
        text: `SELECT ${ACTOR_COLUMNS} FROM actors WHERE id = $1`,
        values: [actorId],
      });
      return rows[0];
    });
  }

  listActors(query: S.ActorQuery = {}): Promise<S.ActorRow[]> {
    return this.run('query', undefined, async () => {
      const values: unknown[] = [rules.checkLimit(query.limit ?? 100, 'query')];
      const filters: string[] = [];
      const filter = (column: string, value: string | undefined) => {
        if (value === undefined) return;
        values.push(value);
        filters.push(`a.${column} = $${values.length}`);
      };
      filter('machine_id', query.machineId);
      filter('state', query.state);
      filter('user_id', query.userId);
      if (query.states !== undefined) {
        if (query.states.length === 0) return [];
        values.push([...query.states]);
        filters.push(`a.state = ANY($${values.length}::text[])`);
      }
      if (query.status === undefined) {
        if (query.afterId !== undefined) {
          values.push(query.afterId);
          filters.push(`a.id > $${values.length}`);
        }
        const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
        return this.query<S.ActorRow>(
          `SELECT ${ACTOR_COLUMNS} FROM actors a ${where} ORDER BY id LIMIT $1`,
          values,
        );
      }
      // By status through the projection (its partial index of unfinished actors).
      const also = filters.length > 0 ? filters.join(' AND ') : 'TRUE';
      values.push(query.status, query.afterId ?? '');
      const [status, afterId] = [`$${values.length - 1}::text`, `$${values.length}::text`];
      return this.query<S.ActorRow>(
        `WITH ${PG_DIRTY}, ${actorsByStatus(status, afterId, '$1::bigint', also)}
         SELECT ${ACTOR_COLUMNS} FROM actors WHERE id IN (SELECT id FROM picked)
         ORDER BY id LIMIT $1`,
        values,
      );
    });
  }

  history(actorId: string, page: S.HistoryPage = {}): Promise<S.TransitionRow[]> {
    return this.run('query', actorId, () => {
      const { afterSeq, limit } = rules.checkHistoryPage(page);
      return this.query<S.TransitionRow>({
        name: 'ac_history',
        text: `SELECT ${TRANSITION_COLUMNS} FROM transitions WHERE actor_id = $1 AND seq > $2
          ORDER BY seq LIMIT $3`,
        values: [actorId, afterSeq, limit ?? null],
      });
    });
  }

  readActorLog(actorId: string): Promise<S.ActorLog | undefined> {
    // REPEATABLE READ: every statement sees the snapshot the first one took, so a
    // commit in between is seen entirely or not at all.
    return this.run('query', actorId, () =>
      this.conn.inTransaction(async (query) => {
        await query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const found = await query<
          S.ActorRow & { parentId: string | null; nextDueAt: number | null }
        >(
          `SELECT ${ACTOR_COLUMNS}, parent_id AS "parentId", next_due_at AS "nextDueAt"
           FROM actors WHERE id = $1`,
          [actorId],
        );
        const row = found[0];
        if (row === undefined) return undefined;
        const { parentId, nextDueAt, ...actor } = row;
        const rows = await query<S.TransitionRow>(
          `SELECT ${TRANSITION_COLUMNS} FROM transitions WHERE actor_id = $1 ORDER BY seq`,
          [actorId],
        );
        return { actor, parentId: parentId ?? undefined, rows, nextDueAt: nextDueAt ?? undefined };
      }),
    );
  }

  loadActorHead(actorId: string): Promise<S.ActorHead | undefined> {
    return this.run('load', actorId, async () => {
      const rows = await this.query<{
        actor: S.ActorRow;
        head: S.TransitionRow | null;
        parent: string | null;
      }>({
        name: 'ac_load_head',
        text: `SELECT row_to_json(a) AS actor, row_to_json(t) AS head,
            (SELECT parent_id FROM actors WHERE id = $1) AS parent
          FROM (SELECT ${ACTOR_COLUMNS} FROM actors WHERE id = $1) a
          LEFT JOIN LATERAL (SELECT ${TRANSITION_COLUMNS} FROM transitions
            WHERE actor_id = $1 AND seq = a.version) t ON true`,
        values: [actorId],
      });
      const row = rows[0];
      if (row === undefined) return undefined;
      const found = { actor: row.actor, head: row.head ?? undefined };
      return row.parent === null ? found : { ...found, parentId: row.parent };
    });
  }

  refreshReadModels(): Promise<void> {
    return this.run('query', undefined, () => this.readModels.refresh());
  }

  rebuildReadModels(): Promise<{ actors: number; entries: number }> {
    return this.run('query', undefined, () => this.readModels.rebuild());
  }

  private noncesSweptAt = 0;

  rememberRequest(request: S.RememberedRequest): Promise<'new' | 'replayed'> {
    return this.run('commit', undefined, async () => {
      if (request.now - this.noncesSweptAt > 60_000) {
        this.noncesSweptAt = request.now;
        await this.query('DELETE FROM request_nonces WHERE expires_at < $1', [request.now]);
      }
      // An expired entry under the same nonce is replaced; a live one is a replay.
      const rows = await this.query<{ key_id: string }>(
        `INSERT INTO request_nonces (key_id, nonce, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
         WHERE request_nonces.expires_at < $4
         RETURNING key_id`,
        [request.key, request.nonce, request.expiresAt, request.now],
      );
      return rows.length === 1 ? 'new' : 'replayed';
    });
  }

  actorIdsWithHistory(): Promise<string[]> {
    return this.run('query', undefined, async () => {
      const rows = await this.query<{ id: string }>(
        'SELECT DISTINCT actor_id AS id FROM transitions ORDER BY actor_id',
      );
      return rows.map((r) => r.id);
    });
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
    return this.run('query', query.to, async () => {
      const rows = await this.query<S.MessageRow>(
        `SELECT id::int AS id, to_actor AS "to", from_actor AS "from", from_seq AS "fromSeq", idx,
           kind, body, at
         FROM messages WHERE id > $1 AND ($2::text IS NULL OR to_actor = $2)
         ORDER BY id LIMIT $3`,
        [query.afterId ?? 0, query.to ?? null, rules.checkLimit(query.limit, 'query')],
      );
      return rows;
    });
  }

  dropMessage(id: number): Promise<boolean> {
    return this.run('commit', undefined, async () => {
      return (await this.conn.change('DELETE FROM messages WHERE id = $1', [id])) === 1;
    });
  }

  childrenOf(parentId: string): Promise<S.ActorRow[]> {
    return this.run('query', parentId, () =>
      this.query<S.ActorRow>(
        `SELECT ${ACTOR_COLUMNS} FROM actors WHERE parent_id = $1 ORDER BY id`,
        [parentId],
      ),
    );
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
    return this.run('commit', row.actorId, async () => {
      await this.conn.change(
        `INSERT INTO rejections (actor_id, machine_id, state, event_type, reason, at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [row.actorId, row.machineId, row.state, row.eventType, row.reason, row.at],
      );
    });
  }

  listRejections(query: { since?: number; actorId?: string } = {}): Promise<S.RejectionRow[]> {
    return this.run('query', query.actorId, () =>
      this.selectWhere<S.RejectionRow>(`SELECT ${REJECTION_COLUMNS} FROM rejections`, 'at, id', [
        ['at >=', query.since],
        ['actor_id =', query.actorId],
      ]),
    );
  }

  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number> {
    return this.run('query', undefined, async () => {
      const values: unknown[] = [query.since];
      const filters = [
        'at >= $1',
        ...boundConditions(values, [
          ['at <', query.until],
          ['reason =', query.reason],
        ]),
      ];
      const rows = await this.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM rejections WHERE ${filters.join(' AND ')}`,
        values,
      );
      return rows[0]?.n ?? 0;
    });
  }

  pruneRejections(query: { before?: number; keep?: number }): Promise<number> {
    return this.run('commit', undefined, async () => {
      let deleted = 0;
      if (query.before !== undefined) {
        deleted += await this.conn.change('DELETE FROM rejections WHERE at < $1', [query.before]);
      }
      if (query.keep !== undefined) {
        // The newest row past `keep`: it and everything older go (one indexed range).
        const edge = await this.query<{ at: string; id: string }>(
          'SELECT at, id FROM rejections ORDER BY at DESC, id DESC LIMIT 1 OFFSET $1',
          [query.keep],
        );
        const row = edge[0];
        if (row) {
          deleted += await this.conn.change(
            'DELETE FROM rejections WHERE at < $1 OR (at = $1 AND id <= $2)',
            [row.at, row.id],
          );
        }
      }
      return deleted;
    });
  }

  countActors(query: S.ActorCountQuery = {}): Promise<S.ActorCount[]> {
    return this.run('query', undefined, () => this.readModels.countActors(query));
  }

  actorsInStates(query: S.StatesQuery): Promise<S.ActorDwell[]> {
    return this.run('query', undefined, () => this.readModels.actorsInStates(query));
  }

  countStateEntries(query: S.StateEntryQuery): Promise<S.StateEntryCount[]> {
    return this.run('query', undefined, () => this.readModels.countStateEntries(query));
  }

  transitionsSince(query: S.TransitionFeedQuery): Promise<S.TransitionFeedRow[]> {
    return this.run('query', undefined, () => {
      const values: unknown[] = [query.since, rules.checkLimit(query.limit ?? 1000, 'query')];
      let machine = '';
      if (query.machineId !== undefined) {
        values.push(query.machineId);
        machine = 'AND a.machine_id = $3';
      }
      return this.query<S.TransitionFeedRow>(
        `SELECT t.actor_id AS "actorId", t.seq, t.from_state AS "fromState",
           t.to_state AS "toState", t.event_type AS "eventType", t.event, t.at, t.metadata,
           t.prev_hash AS "prevHash", t.hash, t.chart_version AS "chartVersion",
           t.snapshot_hash AS "snapshotHash", a.machine_id AS "machineId"
         FROM transitions t JOIN actors a ON a.id = t.actor_id
         WHERE t.at >= $1 ${machine}
         ORDER BY t.at, t.actor_id, t.seq LIMIT $2`,
        values,
      );
    });
  }

  /** Each statement or transaction run again after a deadlock or serialization failure. */
  onRetry(listener: (retry: S.StoreRetry) => void): () => void {
    this.conn.retryListeners.add(listener);
    return () => void this.conn.retryListeners.delete(listener);
  }

  /** Commits by any process sharing the database (LISTEN/NOTIFY). */
  onCommits(listener: () => void): () => void {
    return this.notifications.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.conn.closed = true;
    this.notifications.close();
    this.announcer.close();
    this.refreshes.stop();
    try {
      await this.pool.end();
    } catch (error) {
      throw toStoreError(error, 'close');
    }
  }
}
