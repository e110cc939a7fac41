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
import type { PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import {
  ConcurrencyError,
  LeaseLostError,
  StoreError,
  type StoreOperation,
} from '../../core/errors.ts';
import * as rules from '../rules.ts';
import { CommitNotifications } from './notifications.ts';
import { boundConditions, whereClause, type Filter } from './filters.ts';
import { PostgresReadModels } from './read-models.ts';
import { RefreshSchedule } from '../refresh-schedule.ts';
import { migratePostgres } from './schema.ts';
import type { PostgresStoreOptions } from './options.ts';
export type { PostgresStoreOptions } from './options.ts';
import { requireOptional } from '../../core/optional.ts';
import type * as S from '../types.ts';
import { requireArg, requireOptions } from '../../core/options.ts';

/** SQLSTATE classes and codes → StoreError kinds. Exact codes win over classes. */
const SQLSTATE_KINDS: Readonly<Record<string, string>> = {
  '57014': 'timeout', // query_canceled: statement_timeout (or a cancel request)
  '55P03': 'busy', // lock_not_available: lock_timeout
  '40001': 'conflict', // serialization_failure
  '40P01': 'conflict', // deadlock_detected
  '53100': 'full', // disk_full
  '53200': 'nomem', // out_of_memory
  '53300': 'busy', // too_many_connections
  '25006': 'readonly', // read_only_sql_transaction (a standby, default_transaction_read_only)
  '57P01': 'connection', // admin_shutdown (pg_terminate_backend, server stopping)
  '57P02': 'connection', // crash_shutdown
  '57P03': 'connection', // cannot_connect_now (starting up, shutting down)
  '3D000': 'cantopen', // invalid_catalog_name: the database does not exist
  '3F000': 'cantopen', // invalid_schema_name
  '42501': 'permission', // insufficient_privilege
  '42P01': 'schema', // undefined_table
  '42703': 'schema', // undefined_column
  '0A000': 'unsupported', // feature_not_supported
  XX001: 'corrupt', // data_corrupted
  XX002: 'corrupt', // index_corrupted
};
const SQLSTATE_CLASS_KINDS: Readonly<Record<string, string>> = {
  '08': 'connection', // connection_exception
  '22': 'invalid_data', // data_exception (out of range, a NUL byte in text, …)
  '23': 'constraint', // integrity_constraint_violation
  '28': 'permission', // invalid_authorization_specification (bad password)
  '53': 'busy', // insufficient_resources
  '54': 'too_big', // program_limit_exceeded
  '58': 'io', // system_error
};
/** Node socket errors and pg's own messages for a connection that failed or died. */
const NODE_CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'ENOENT', // a unix socket path that does not exist
]);
const CONNECTION_MESSAGES =
  /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Client was closed|Query read timeout/i;

/**
 * Maps a `pg` or socket error to a StoreError kind: by SQLSTATE (`57014` →
 * `timeout`, `40P01` → `conflict`, `53100` → `full`, `25006` → `readonly`, class
 * `08` → `connection`, `23` → `constraint`, …), by Node error code (`ECONNREFUSED`,
 * `ENOTFOUND` → `connection`) or by pg's messages for a dropped connection;
 * `internal` otherwise.
 *
 * @example
 * classifyPostgresError({ code: '57014' }); // 'timeout'
 * classifyPostgresError({ code: 'ECONNREFUSED' }); // 'connection'
 */
export function classifyPostgresError(error: unknown): string {
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  if (typeof code === 'string') {
    if (NODE_CONNECTION_CODES.has(code)) return 'connection';
    if (/^[0-9A-Z]{5}$/.test(code)) {
      return SQLSTATE_KINDS[code] ?? SQLSTATE_CLASS_KINDS[code.slice(0, 2)] ?? 'internal';
    }
  }
  if (error instanceof Error && CONNECTION_MESSAGES.test(error.message)) return 'connection';
  // AggregateError (several addresses refused) carries the code on its parts.
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const kind = classifyPostgresError(inner);
      if (kind !== 'internal') return kind;
    }
  }
  return 'internal';
}

/** Wraps any failure as a StoreError of `operation`, keeping StoreErrors as they are. */
function toStoreError(error: unknown, operation: StoreOperation, actorId?: string): StoreError {
  if (error instanceof StoreError) return error;
  const code =
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
      ? `${error.code}: `
      : '';
  const message =
    error instanceof AggregateError && error.message === ''
      ? error.errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')
      : error instanceof Error
        ? error.message
        : String(error);
  return new StoreError(
    { operation, kind: classifyPostgresError(error), actorId, detail: `${code}${message}` },
    { cause: error },
  );
}

/** A pool (one statement, autocommit) or a checked-out client (inside a transaction). */
type Queryable = Pick<pg.Pool, 'query'> | Pick<PoolClient, 'query'>;

/** Errors after which a pooled connection must be discarded, not reused. */
function breaksConnection(error: unknown): boolean {
  return !(error instanceof StoreError) && classifyPostgresError(error) === 'connection';
}

/** A failure that belongs to one write of a batch (rolled back alone), or undefined. */
function ownFailure(error: unknown, actorId: string): Error | undefined {
  if (error instanceof ConcurrencyError || error instanceof LeaseLostError) return error;
  if (error instanceof StoreError) return error;
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  if (typeof code === 'string' && /^(22|23|54)/.test(code)) {
    return toStoreError(error, 'commit', actorId);
  }
  return undefined;
}

// BIGINT columns hold ms timestamps (safe integers): read them as numbers, on
// this pool only, leaving pg's global parsers alone for the host application.
const INT8_OID = 20;
function parsersOf(driver: typeof pg): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID && format !== 'binary'
        ? (value: string) => Number(value)
        : driver.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
}

/** `pg` is an optional peer dependency: loaded when the first PostgreSQL store opens. */
function loadDriver(): typeof pg {
  return requireOptional<typeof pg>('pg', 'a postgres:// store');
}

const ACTOR_COLUMNS = `id, machine_id AS "machineId", chart_version AS "chartVersion", version,
  state, status, snapshot, created_at AS "createdAt", updated_at AS "updatedAt",
  head_hash AS "headHash"`;
const TRANSITION_COLUMNS = `actor_id AS "actorId", seq, from_state AS "fromState",
  to_state AS "toState", event_type AS "eventType", event, at, metadata,
  prev_hash AS "prevHash", hash, chart_version AS "chartVersion",
  snapshot_hash AS "snapshotHash"`;
const TIMER_COLUMNS = `actor_id AS "actorId", timer_id AS "timerId", event, due_at AS "dueAt"`;
const STEP_COLUMNS = `key, actor_id AS "actorId", name, status, result, started_at AS "startedAt",
  finished_at AS "finishedAt", attempts`;
const REJECTION_COLUMNS = `actor_id AS "actorId", machine_id AS "machineId", state,
  event_type AS "eventType", reason, at`;

/**
 * One write is one statement: the actor row (insert, or compare-and-set update),
 * its audit row and its timer changes, all in data-modifying CTEs that act only
 * when the actor statement matched. A write that loses its race therefore writes
 * nothing and needs no savepoint, and a lone write needs no BEGIN/COMMIT.
 *
 * Parameters shared by both statements: $1 id, $2 machine, $3 chart version,
 * $4 version, $5 state, $6 status, $7 snapshot, $8 updated_at, $9 head hash,
 * $10-$18 the transition row, $19-$21 timers to set (ids, events, due times),
 * $22 the snapshot hash of the transition row, $23 whether every timer goes,
 * $24 the chart version of the transition row.
 */
const TRANSITION_AND_TIMERS = `
  t AS (
    INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
      metadata, prev_hash, hash, chart_version, snapshot_hash)
    SELECT id, $10::integer, $11::text, $12::text, $13::text, $14::text, $15::bigint,
      $16::text, $17::text, $18::text, $24::integer, $22::text FROM a
    RETURNING 1),
  s AS (
    INSERT INTO timers (actor_id, timer_id, event, due_at)
    SELECT a.id, x.timer_id, x.event, x.due_at
    FROM a, unnest($19::text[], $20::text[], $21::bigint[]) AS x (timer_id, event, due_at)
    ON CONFLICT (actor_id, timer_id) DO UPDATE SET event = excluded.event,
      due_at = excluded.due_at, claimed_by = NULL, claim_until = NULL
    RETURNING 1)`;
/** Creation: $25 created_at, $26 user id. Nothing happens when the id exists. */
const CREATE_ACTOR = `WITH a AS (
    INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
      created_at, updated_at, head_hash, user_id, state_since)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $25, $8, $9, $26, $15)
    ON CONFLICT (id) DO NOTHING RETURNING id),
  ${TRANSITION_AND_TIMERS}
  SELECT (SELECT count(*) FROM a)::int AS written, $23::boolean AS cancel_all,
    pg_notify('agentcharts_commits', '') AS notified`;
/**
 * Update: compare-and-set on version $25; the timer it consumes ($26) must exist;
 * $27 timers to delete (cancelled and consumed, minus those set again), or every
 * timer of the actor when $23 is true; a fenced write also needs owner $28's
 * unexpired lease at $29.
 */
const UPDATE_ACTOR = (fenced: boolean) => `WITH a AS (
    UPDATE actors SET machine_id = $2, chart_version = $3, version = $4, state = $5,
      status = $6, snapshot = $7, updated_at = $8, head_hash = $9,
      state_since = CASE WHEN state = $5 THEN state_since ELSE $15::bigint END
    WHERE id = $1 AND version = $25
      AND ($26::text IS NULL
        OR EXISTS (SELECT 1 FROM timers WHERE actor_id = $1 AND timer_id = $26::text))
      ${fenced ? 'AND owner = $28 AND lease_until >= $29' : ''}
    RETURNING id),
  d AS (
    DELETE FROM timers WHERE actor_id = $1
      AND ($23::boolean OR timer_id = ANY($27::text[]))
      AND EXISTS (SELECT 1 FROM a)
    RETURNING 1),
  ${TRANSITION_AND_TIMERS}
  SELECT (SELECT count(*) FROM a)::int AS written, pg_notify('agentcharts_commits', '') AS notified`;

/**
 * The one statement that applies `write` (a prepared statement: `name`, `text`,
 * `values`); its single row's `written` is 1 when it matched, 0 when it wrote
 * nothing. Undefined for a write that cannot match: a fenced create (no lease
 * can be held on a row that does not exist yet) or a create consuming a timer.
 * Exported for the benchmark's raw baseline, which runs the very same SQL.
 *
 * @internal
 */
export function writeStatement(
  write: S.ActorWrite,
): { name: string; text: string; values: unknown[] } | undefined {
  const { expectedVersion, actor, transition: t, lease } = write;
  // One row per timer id, the last one winning, as repeated upserts would.
  const timers = [...new Map(write.timersSet.map((x) => [x.timerId, x])).values()];
  const values: unknown[] = [
    actor.id,
    actor.machineId,
    actor.chartVersion,
    actor.version,
    actor.state,
    actor.status,
    actor.snapshot,
    actor.updatedAt,
    actor.headHash,
    t.seq,
    t.fromState,
    t.toState,
    t.eventType,
    t.event,
    t.at,
    t.metadata,
    t.prevHash,
    t.hash,
    timers.map((x) => x.timerId),
    timers.map((x) => x.event),
    timers.map((x) => x.dueAt),
    t.snapshotHash,
    write.cancelAllTimers === true,
    t.chartVersion,
  ];
  if (expectedVersion === 0) {
    if (lease !== undefined || write.consumeTimer !== undefined) return undefined;
    values.push(actor.createdAt, write.userId ?? null);
    return { name: 'ac_create', text: CREATE_ACTOR, values };
  }
  // Re-armed timers are upserted, not deleted: the upsert replaces them.
  const again = new Set(timers.map((x) => x.timerId));
  const deleted = [
    ...new Set([
      ...(write.consumeTimer !== undefined ? [write.consumeTimer] : []),
      ...write.timersCancel,
    ]),
  ].filter((id) => !again.has(id));
  values.push(expectedVersion, write.consumeTimer ?? null, deleted);
  if (lease !== undefined) values.push(lease.owner, lease.now);
  return lease !== undefined
    ? { name: 'ac_update_fenced', text: UPDATE_ACTOR(true), values }
    : { name: 'ac_update', text: UPDATE_ACTOR(false), values };
}

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
  private readonly notifications: CommitNotifications;
  readonly schema: string | undefined;
  // TypeScript `private`, not `#`: wrappers built with Object.create or Proxy
  // (instrumentation, fault injection) must still reach these members.
  private closed = false;
  private ready: Promise<void> | undefined;
  private readonly readModels: PostgresReadModels;
  private readonly refreshes: RefreshSchedule;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    requireArg('PostgresStore', 'url', typeof url === 'string', 'a postgres:// URL');
    requireOptions('PostgresStore', options);
    this.location = redact(url, options.schema);
    this.schema = options.schema;
    const driver = loadDriver();
    this.pool = new driver.Pool({
      connectionString: url,
      max: options.poolMax ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      keepAlive: true,
      types: parsersOf(driver),
      ...(options.statementTimeoutMs !== undefined && options.statementTimeoutMs > 0
        ? { statement_timeout: options.statementTimeoutMs }
        : {}),
      // Set at connection start-up, so every pooled connection resolves the
      // store's tables in its schema, with nothing to forget per query.
      ...(options.schema !== undefined ? { options: `-c search_path=${options.schema}` } : {}),
      application_name: 'agentcharts',
    });
    // An idle pooled connection that dies (server restart, pg_terminate_backend)
    // is dropped by the pool; without a listener its error would crash the process.
    this.pool.on('error', ignore);
    this.notifications = new CommitNotifications(this.pool);
    this.readModels = new PostgresReadModels(
      async <R>(text: string, values?: unknown[]) =>
        (await this.pool.query(text, values)).rows as R[],
      (work) => this.inTransaction(work),
    );
    this.refreshes = new RefreshSchedule(options.readModelRefreshMs ?? 250, () =>
      this.readModels.refresh(),
    );
  }

  /** Runs `work` in a transaction on one pooled connection. */
  private async inTransaction<T>(
    work: (query: <R>(text: string, values?: unknown[]) => Promise<R[]>) => Promise<T>,
  ): Promise<T> {
    const client = await this.pool.connect();
    client.on('error', ignore);
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(
        async <R>(text: string, values?: unknown[]) =>
          (await client.query(text, values)).rows as R[],
      );
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = breaksConnection(error);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      client.removeListener('error', ignore);
      client.release(broken ? new Error('connection broken') : undefined);
    }
  }

  /**
   * Connects and brings the schema up to date (once; again after a failure).
   * Every operation does this first; call it to fail fast at start-up.
   */
  async connect(): Promise<void> {
    try {
      if (this.closed) {
        throw new StoreError({ operation: 'open', kind: 'closed', detail: 'the store is closed' });
      }
      await this.ensureReady();
    } catch (error) {
      throw toStoreError(error, 'open');
    }
  }

  /** Connects and migrates once; rejects with the raw connection error (see `run`). */
  private ensureReady(): Promise<void> {
    if (this.ready === undefined) {
      const ready = (async () => {
        const client = await this.pool.connect();
        client.on('error', ignore);
        let failure: unknown;
        try {
          await migratePostgres(client, { schema: this.schema });
        } catch (error) {
          failure = error;
          // The connection failing is reported as the caller's operation; the
          // schema work failing (privileges, a newer schema) as `migrate`.
          throw breaksConnection(error) ? error : toStoreError(error, 'migrate');
        } finally {
          client.removeListener('error', ignore);
          client.release(breaksConnection(failure) ? asError(failure) : undefined);
        }
      })();
      this.ready = ready;
      // A server that was down may be back for the next operation: try again then.
      ready.catch(() => {
        if (this.ready === ready) this.ready = undefined;
      });
    }
    return this.ready;
  }

  /** Runs one operation: refused once closed, connected first, failures classified. */
  private async run<T>(
    operation: StoreOperation,
    actorId: string | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      if (this.closed) {
        throw new StoreError({ operation, kind: 'closed', actorId, detail: 'the store is closed' });
      }
      await this.ensureReady();
      return await work();
    } catch (error) {
      throw toStoreError(error, operation, actorId);
    }
  }

  private async query<R extends QueryResultRow>(
    text: string | QueryConfig,
    values?: unknown[],
  ): Promise<R[]> {
    const result: QueryResult<R> =
      typeof text === 'string'
        ? await this.pool.query<R>(text, values)
        : await this.pool.query<R>(text);
    return result.rows;
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
    const single = writes.length === 1 ? writes[0]?.actorId : undefined;
    const results: Array<Error | null> = writes.map((w) => rules.invalidWrite(w) ?? null);
    // Lock rows in one global order (actor id, bytes) so batches of different
    // workers never deadlock; writes to one actor keep their batch order (stable sort).
    const order = writes
      .map((write, index) => ({ write, index }))
      .filter(({ index }) => results[index] === null)
      .sort((a, b) => rules.compareText(a.write.actorId, b.write.actorId));
    const state = { inFlight: single };
    return this.run('commit', single, async () => {
      // Writes that deliver or send messages, begin steps or link a parent go alone,
      // each in its own transaction with its extra statements.
      const plain = order.filter(({ write }) => !hasExtras(write));
      for (const { write, index } of order) {
        if (hasExtras(write)) results[index] = await this.commitWithExtras(write);
      }
      const outcome = await this.commitPlain(plain, results, state);
      this.refreshes.soon();
      return outcome;
    });
  }

  private async commitPlain(
    order: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
    state: { inFlight: string | undefined },
  ): Promise<Array<Error | null>> {
    {
      const [only] = order;
      if (only === undefined) return results;
      if (order.length === 1) {
        // One statement is atomic on its own: no BEGIN/COMMIT round trips.
        try {
          if (!(await this.applyWrite(this.pool, only.write))) {
            await this.explainMisses(this.pool, [only], results);
          }
        } catch (error) {
          const own = ownFailure(error, only.write.actorId);
          if (own === undefined) throw toStoreError(error, 'commit', only.write.actorId);
          results[only.index] = own;
        }
        return results;
      }
      const client = await this.pool.connect();
      // A connection that dies mid-batch also emits 'error' on the client; the
      // failing query reports it, so the event itself is only absorbed here.
      client.on('error', ignore);
      try {
        // A write that loses its race writes nothing, so no savepoints are needed
        // unless a statement fails (a constraint, bad data): then the batch runs
        // again with a savepoint per write, and that write alone is rolled back.
        const misses =
          (await this.applyBatch(client, order, results, state, false)) ??
          (await this.applyBatch(client, order, results, state, true)) ??
          [];
        // Explained after COMMIT: the batch's row locks are not held for it.
        await this.explainMisses(client, misses, results);
        client.removeListener('error', ignore);
        client.release();
        return results;
      } catch (error) {
        let broken = breaksConnection(error);
        if (!broken) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
        }
        client.removeListener('error', ignore);
        // A broken connection is destroyed, never handed out again.
        client.release(broken ? asError(error) : undefined);
        throw toStoreError(error, 'commit', state.inFlight);
      }
    }
  }

  /**
   * A write with extra statements (messages, steps, parent) in a transaction of its
   * own: the write's statement, then the message it consumes (gone → the whole
   * write rolls back with ConcurrencyError), the messages it sends, the steps it
   * begins.
   */
  private async commitWithExtras(write: S.ActorWrite): Promise<Error | null> {
    const client = await this.pool.connect();
    client.on('error', ignore);
    let broken = false;
    try {
      await client.query('BEGIN');
      const outcome = await this.applyExtras(client, write);
      await client.query(outcome === null ? 'COMMIT' : 'ROLLBACK');
      if (outcome === 'miss') {
        const results: Array<Error | null> = [null];
        await this.explainMisses(client, [{ write, index: 0 }], results);
        return results[0] ?? null;
      }
      return outcome;
    } catch (error) {
      broken = breaksConnection(error);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      const own = ownFailure(error, write.actorId);
      if (own === undefined) throw toStoreError(error, 'commit', write.actorId);
      return own;
    } finally {
      client.removeListener('error', ignore);
      client.release(broken ? new Error('connection broken') : undefined);
    }
  }

  private async applyExtras(
    client: PoolClient,
    write: S.ActorWrite,
  ): Promise<Error | null | 'miss'> {
    if (!(await this.applyWrite(client, write))) return 'miss';
    const { actorId } = write;
    if (write.consumeMessage !== undefined) {
      const deleted = await client.query('DELETE FROM messages WHERE id = $1 AND to_actor = $2', [
        write.consumeMessage,
        actorId,
      ]);
      if (deleted.rowCount !== 1) {
        return new ConcurrencyError({
          actorId,
          expectedVersion: write.expectedVersion,
          actualVersion: write.expectedVersion,
        });
      }
    }
    const out = write.messagesOut ?? [];
    if (out.length > 0) {
      await client.query(
        `INSERT INTO messages (to_actor, from_actor, from_seq, idx, kind, body, at)
         SELECT x.to_actor, $1, $2, x.idx, x.kind, x.body, $3
         FROM unnest($4::text[], $5::int[], $6::text[], $7::text[])
           AS x (to_actor, idx, kind, body)
         ORDER BY x.idx`,
        [
          actorId,
          write.transition.seq,
          write.transition.at,
          out.map((m) => m.to),
          out.map((m) => m.idx),
          out.map((m) => m.kind),
          out.map((m) => m.body),
        ],
      );
    }
    if (write.parentId !== undefined && write.expectedVersion === 0) {
      await client.query('UPDATE actors SET parent_id = $1 WHERE id = $2', [
        write.parentId,
        actorId,
      ]);
    }
    return null;
  }

  /**
   * One transaction over the batch; returns the writes that matched nothing
   * (they wrote nothing). Without savepoints it gives up (rolls back, returns
   * undefined) at the first statement that fails; with them it rolls back that
   * write alone.
   */
  private async applyBatch(
    client: PoolClient,
    order: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
    state: { inFlight: string | undefined },
    savepoints: boolean,
  ): Promise<Array<{ write: S.ActorWrite; index: number }> | undefined> {
    const misses: Array<{ write: S.ActorWrite; index: number }> = [];
    await client.query('BEGIN');
    for (const entry of order) {
      const { write, index } = entry;
      state.inFlight = write.actorId;
      if (savepoints) await client.query('SAVEPOINT w');
      try {
        results[index] = null;
        if (!(await this.applyWrite(client, write))) misses.push(entry);
        if (savepoints) await client.query('RELEASE SAVEPOINT w');
      } catch (error) {
        const own = ownFailure(error, write.actorId);
        if (own === undefined) throw error;
        // A failed statement aborted the transaction (or the savepoint).
        if (!savepoints) {
          await client.query('ROLLBACK');
          return undefined;
        }
        results[index] = own;
        await client.query('ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w');
      }
    }
    state.inFlight = undefined;
    await client.query('COMMIT');
    return misses;
  }

  /**
   * Applies one write as one statement (see {@link writeStatement}). Returns
   * false when it matched nothing, in which case it wrote nothing.
   */
  private async applyWrite(client: Queryable, write: S.ActorWrite): Promise<boolean> {
    const statement = writeStatement(write);
    if (statement === undefined) return false;
    const result = await client.query<{ written: number }>(statement);
    const written = result.rows[0]?.written === 1;
    const steps = write.stepsBegin ?? [];
    if (written && steps.length > 0) {
      // In the batch's transaction (a write that begins steps never goes alone).
      await client.query({
        name: 'ac_begin_steps',
        text: `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at,
            attempts)
          SELECT x.key, $1, x.name, 'executing', NULL, x.started_at, NULL, 0
          FROM unnest($2::text[], $3::text[], $4::bigint[]) AS x (key, name, started_at)
          ON CONFLICT (key) DO NOTHING`,
        values: [
          write.actorId,
          steps.map((st) => st.key),
          steps.map((st) => st.name),
          steps.map((st) => st.startedAt),
        ],
      });
    }
    return written;
  }

  /**
   * Why writes matched nothing, from their rows as they stand now (one read, on
   * this slow path only): a lease not held, a missing actor, or a version that
   * moved (or, version unchanged, a timer to consume that another writer fired).
   */
  private async explainMisses(
    client: Queryable,
    misses: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
  ): Promise<void> {
    if (misses.length === 0) return;
    const rows = await client.query<{
      id: string;
      version: number;
      owner: string | null;
      leaseUntil: number | null;
    }>({
      name: 'ac_explain',
      text: 'SELECT id, version, owner, lease_until AS "leaseUntil" FROM actors WHERE id = ANY($1::text[])',
      values: [[...new Set(misses.map((m) => m.write.actorId))]],
    });
    const current = new Map(rows.rows.map((r) => [r.id, r]));
    for (const { write, index } of misses) {
      const { actorId, expectedVersion } = write;
      const row = current.get(actorId);
      results[index] =
        rules.leaseViolation(write, row) ??
        (row === undefined && expectedVersion > 0
          ? rules.actorMissing(actorId)
          : new ConcurrencyError({ actorId, expectedVersion, actualVersion: row?.version }));
    }
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
      const values: unknown[] = [];
      const filters: string[] = [];
      const filter = (column: string, value: string | undefined, op = '=') => {
        if (value === undefined) return;
        values.push(value);
        filters.push(`${column} ${op} $${values.length}`);
      };
      filter('machine_id', query.machineId);
      filter('state', query.state);
      filter('user_id', query.userId);
      if (query.states !== undefined) {
        if (query.states.length === 0) return [];
        values.push([...query.states]);
        filters.push(`state = ANY($${values.length}::text[])`);
      }
      filter('status', query.status);
      filter('id', query.afterId, '>');
      values.push(rules.checkLimit(query.limit ?? 100, 'query'));
      const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
      return this.query<S.ActorRow>(
        `SELECT ${ACTOR_COLUMNS} FROM actors ${where} ORDER BY id LIMIT $${values.length}`,
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
      this.inTransaction(async (query) => {
        await query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const found = await query<S.ActorRow & { parentId: string | null }>(
          `SELECT ${ACTOR_COLUMNS}, parent_id AS "parentId" FROM actors WHERE id = $1`,
          [actorId],
        );
        const row = found[0];
        if (row === undefined) return undefined;
        const { parentId, ...actor } = row;
        const rows = await query<S.TransitionRow>(
          `SELECT ${TRANSITION_COLUMNS} FROM transitions WHERE actor_id = $1 ORDER BY seq`,
          [actorId],
        );
        const timers = await query<S.TimerRow>(
          `SELECT ${TIMER_COLUMNS} FROM timers WHERE actor_id = $1 ORDER BY due_at, timer_id`,
          [actorId],
        );
        return { actor, parentId: parentId ?? undefined, rows, timers };
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
    return this.run('timer', actorId, () =>
      this.query<S.TimerRow>({
        name: 'ac_timers',
        text: `SELECT ${TIMER_COLUMNS} FROM timers WHERE actor_id = $1 ORDER BY due_at, timer_id`,
        values: [actorId],
      }),
    );
  }

  dueTimers(now: number, limit: number): Promise<S.TimerRow[]> {
    return this.run('timer', undefined, () =>
      this.query<S.TimerRow>({
        name: 'ac_due_timers',
        text: `SELECT ${TIMER_COLUMNS} FROM timers WHERE due_at <= $1
          ORDER BY due_at, actor_id, timer_id LIMIT $2`,
        values: [now, rules.checkLimit(limit, 'timer')],
      }),
    );
  }

  nextTimerDue(): Promise<number | undefined> {
    return this.run('timer', undefined, async () => {
      const rows = await this.query<{ due: number | null }>(
        'SELECT MIN(due_at) AS due FROM timers',
      );
      return rows[0]?.due ?? undefined;
    });
  }

  private async stepRow(key: string): Promise<S.StepRow | undefined> {
    const rows = await this.query<S.StepRow>({
      name: 'ac_step',
      text: `SELECT ${STEP_COLUMNS} FROM steps WHERE key = $1`,
      values: [key],
    });
    return rows[0];
  }

  getStep(key: string): Promise<S.StepRow | undefined> {
    return this.run('step', undefined, () => this.stepRow(key));
  }

  beginStep(step: S.NewStep): Promise<{ row: S.StepRow; created: boolean }> {
    return this.run('step', step.actorId, async () => {
      const inserted = await this.query<S.StepRow>(
        `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at, attempts)
         VALUES ($1, $2, $3, 'executing', NULL, $4, NULL, 1)
         ON CONFLICT (key) DO NOTHING RETURNING ${STEP_COLUMNS}`,
        [step.key, step.actorId, step.name, step.startedAt],
      );
      if (inserted[0] !== undefined) return { row: inserted[0], created: true };
      const row = await this.stepRow(step.key);
      if (row === undefined) throw rules.stepMiss(step.key, row, 'present');
      return { row, created: false };
    });
  }

  finishStep(key: string, status: S.StepEnd, result: string, at: number): Promise<void> {
    return this.run('step', undefined, async () => {
      const updated = await this.pool.query(
        `UPDATE steps SET status = $1, result = $2, finished_at = $3
         WHERE key = $4 AND status = 'executing'`,
        [status, result, at, key],
      );
      if (updated.rowCount === 0) throw rules.stepMiss(key, await this.stepRow(key), 'executing');
    });
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

  dropTimer(actorId: string, timerId: string): Promise<boolean> {
    return this.run('timer', actorId, async () => {
      const deleted = await this.pool.query(
        'DELETE FROM timers WHERE actor_id = $1 AND timer_id = $2',
        [actorId, timerId],
      );
      return deleted.rowCount === 1;
    });
  }

  dropMessage(id: number): Promise<boolean> {
    return this.run('commit', undefined, async () => {
      const deleted = await this.pool.query('DELETE FROM messages WHERE id = $1', [id]);
      return deleted.rowCount === 1;
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
    return this.run('step', undefined, async () => {
      const updated = await this.pool.query(
        `UPDATE steps SET attempts = 1, started_at = $1
         WHERE key = $2 AND status = 'executing' AND attempts = 0`,
        [startedAt, key],
      );
      return updated.rowCount === 1;
    });
  }

  restartStep(key: string, startedAt: number): Promise<void> {
    return this.run('step', undefined, async () => {
      const updated = await this.pool.query(
        `UPDATE steps SET status = 'executing', result = NULL, started_at = $1, finished_at = NULL,
           attempts = attempts + 1
         WHERE key = $2 AND status <> 'done'`,
        [startedAt, key],
      );
      if (updated.rowCount === 0) {
        throw rules.stepMiss(key, await this.stepRow(key), 'executing or failed');
      }
    });
  }

  listSteps(query: { actorId?: string; status?: S.StepStatus } = {}): Promise<S.StepRow[]> {
    return this.run('step', query.actorId, () =>
      this.selectWhere<S.StepRow>(`SELECT ${STEP_COLUMNS} FROM steps`, 'started_at, key', [
        ['actor_id =', query.actorId],
        ['status =', query.status],
      ]),
    );
  }

  acquireLeases(request: S.LeaseRequest): Promise<S.LeaseRow[]> {
    return this.run('commit', undefined, async () => {
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
      const rows = await this.query<S.LeaseRow>(
        `WITH picked AS (${pick})
         UPDATE actors SET owner = $1, lease_until = $2 FROM picked WHERE actors.id = picked.id
         RETURNING actors.id AS "actorId", owner, lease_until AS "leaseUntil"`,
        values,
      );
      return rows.sort((a, b) => rules.compareText(a.actorId, b.actorId));
    });
  }

  renewLeases(request: S.LeaseRenewal): Promise<string[]> {
    return this.run('commit', undefined, async () => {
      rules.checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil, actorIds } = request;
      // Locks in id order, as commits do, so a renewal cannot deadlock with a batch.
      const rows = await this.query<{ id: string }>(
        `WITH mine AS (
           SELECT id FROM actors WHERE id = ANY($4::text[]) AND owner = $1 AND lease_until >= $3
           ORDER BY id FOR UPDATE)
         UPDATE actors SET lease_until = $2 FROM mine
         WHERE actors.id = mine.id AND owner = $1 AND lease_until >= $3
         RETURNING actors.id`,
        [owner, leaseUntil, now, [...actorIds]],
      );
      return rows.map((r) => r.id).sort(rules.compareText);
    });
  }

  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void> {
    return this.run('commit', undefined, async () => {
      rules.checkLeaseRequest('commit', { owner });
      await this.pool.query(
        `WITH mine AS (
           SELECT id FROM actors WHERE id = ANY($2::text[]) AND owner = $1 ORDER BY id FOR UPDATE)
         UPDATE actors SET owner = NULL, lease_until = NULL FROM mine
         WHERE actors.id = mine.id AND owner = $1`,
        [owner, [...actorIds]],
      );
    });
  }

  lease(actorId: string): Promise<S.LeaseRow | undefined> {
    return this.run('load', actorId, async () => {
      const rows = await this.query<S.LeaseRow>(
        `SELECT id AS "actorId", owner, lease_until AS "leaseUntil" FROM actors
         WHERE id = $1 AND owner IS NOT NULL AND lease_until IS NOT NULL`,
        [actorId],
      );
      return rows[0];
    });
  }

  claimDueTimers(request: S.TimerClaimRequest): Promise<S.TimerClaim[]> {
    return this.run('timer', undefined, async () => {
      rules.checkLeaseRequest('timer', request);
      const { owner, now, claimUntil, limit } = request;
      const rows = await this.query<S.TimerClaim>(
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
    });
  }

  recordRejection(row: S.RejectionRow): Promise<void> {
    return this.run('commit', row.actorId, async () => {
      await this.pool.query(
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

  /** Commits by any process sharing the database (LISTEN/NOTIFY). */
  onCommits(listener: () => void): () => void {
    return this.notifications.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.notifications.close();
    this.refreshes.stop();
    try {
      await this.pool.end();
    } catch (error) {
      throw toStoreError(error, 'close');
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function ignore(): void {
  // Deliberately empty: see the call sites.
}

/** The URL with its password removed (and the schema named), for `location` and logs. */
function redact(url: string, schema: string | undefined): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '';
    if (schema !== undefined) parsed.searchParams.set('schema', schema);
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** Whether a write needs statements beyond its one write statement. */
function hasExtras(write: S.ActorWrite): boolean {
  return (
    write.consumeMessage !== undefined ||
    (write.messagesOut?.length ?? 0) > 0 ||
    (write.stepsBegin?.length ?? 0) > 0 ||
    write.parentId !== undefined
  );
}
