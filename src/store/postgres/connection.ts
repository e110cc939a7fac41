/**
 * The PostgreSQL store's connection: a `pg` pool (opened lazily, schema migrated
 * once before the first operation), one-statement queries and transactions on one
 * pooled connection, and the mapping of `pg`'s and the socket's errors to
 * StoreError kinds.
 */
import type pg from 'pg';
import type { PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import {
  ConcurrencyError,
  LeaseLostError,
  StoreError,
  type StoreOperation,
} from '../../core/errors.ts';
import { requireOptional } from '../../core/optional.ts';
import { wrapStoreError } from '../store-error.ts';
import type { StoreRetry } from '../types.ts';
import type { PostgresStoreOptions } from './options.ts';
import { migratePostgres } from './schema.ts';

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
export function toStoreError(
  error: unknown,
  operation: StoreOperation,
  actorId?: string,
): StoreError {
  return wrapStoreError(error, operation, classifyPostgresError, actorId);
}

/** A pool (one statement, autocommit) or a checked-out client (inside a transaction). */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<PoolClient, 'query'>;

/** Runs one statement and returns its rows. */
export type Query = <R>(text: string, values?: unknown[]) => Promise<R[]>;

/** Errors after which a pooled connection must be discarded, not reused. */
export function breaksConnection(error: unknown): boolean {
  return !(error instanceof StoreError) && classifyPostgresError(error) === 'connection';
}

/** A failure that belongs to one write of a batch (rolled back alone), or undefined. */
export function ownFailure(error: unknown, actorId: string): Error | undefined {
  if (error instanceof ConcurrencyError || error instanceof LeaseLostError) return error;
  if (error instanceof StoreError) return error;
  return failedOnData(error) ? toStoreError(error, 'commit', actorId) : undefined;
}

/** A statement that failed for the data it wrote: SQLSTATE class 22, 23 or 54. */
export function failedOnData(error: unknown): boolean {
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}

/**
 * A failure after which PostgreSQL rolled back the whole transaction (or lone
 * statement) and the same work may succeed if run again: a deadlock (`40P01`) or a
 * serialization failure (`40001`).
 */
export function transientConflict(error: unknown): boolean {
  const code =
    typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return code === '40P01' || code === '40001';
}

/**
 * Runs `attempt`, and again up to `retries` times while it fails with a
 * {@link transientConflict}, each time after a random wait that doubles (up to
 * 2, 4, 8… ms), so that the transactions that collided do not meet again in
 * step. Any other failure, or the last one, is thrown as it is.
 */
export async function retryingConflicts<T>(
  retries: number,
  attempt: () => Promise<T>,
  /** Told before each run again. */
  retrying?: (retry: StoreRetry) => void,
): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= retries || !transientConflict(error)) throw error;
      retrying?.({
        code: (error as { code: string }).code,
        attempt: tries + 1,
        detail: error instanceof Error ? error.message : String(error),
      });
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 ** (tries + 1)));
    }
  }
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Absorbs a connection's 'error' event where the failing query reports it. */
export function ignore(): void {
  // Deliberately empty: see the call sites.
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

/** The URL with its password removed (and the schema named), for `location` and logs. */
export function redact(url: string, schema: string | undefined): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '';
    if (schema !== undefined) parsed.searchParams.set('schema', schema);
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** The pool, its readiness (connected, schema migrated) and how operations run on it. */
export class PostgresConnection {
  readonly pool: pg.Pool;
  /**
   * How often a statement or transaction that PostgreSQL rolled back for a
   * deadlock or a serialization failure runs again (PostgresStoreOptions.rollbackRetries).
   */
  readonly rollbackRetries: number;
  /** Told of every run again (Store.onRetry). */
  readonly retryListeners = new Set<(retry: StoreRetry) => void>();
  private ready: Promise<void> | undefined;
  closed = false;

  constructor(
    url: string,
    private readonly options: PostgresStoreOptions,
  ) {
    const driver = loadDriver();
    this.rollbackRetries = options.rollbackRetries ?? 3;
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
  }

  /**
   * Runs `work` in a transaction on one pooled connection; again, from BEGIN,
   * when PostgreSQL rolled it back for a deadlock or a serialization failure
   * (`work` only queries through the function it is given).
   */
  inTransaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    return this.retrying(() => this.transactionOnce(work));
  }

  private async transactionOnce<T>(work: (query: Query) => Promise<T>): Promise<T> {
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
   * Runs `attempt`, and again after a deadlock or serialization failure, up to
   * {@link rollbackRetries} times ({@link retryingConflicts}), telling the
   * {@link retryListeners}.
   */
  retrying<T>(attempt: () => Promise<T>): Promise<T> {
    return retryingConflicts(this.rollbackRetries, attempt, this.told);
  }

  private readonly told = (retry: StoreRetry): void => {
    for (const listener of this.retryListeners) listener(retry);
  };

  /** Connects and migrates once; rejects with the raw connection error (see `run`). */
  ensureReady(): Promise<void> {
    if (this.ready === undefined) {
      const ready = (async () => {
        const client = await this.pool.connect();
        client.on('error', ignore);
        let failure: unknown;
        try {
          await migratePostgres(client, { schema: this.options.schema });
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
  async run<T>(
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

  /**
   * One statement on the pool (autocommit), run again when PostgreSQL rolled it
   * back for a deadlock or a serialization failure; its rows.
   */
  query<R extends QueryResultRow>(text: string | QueryConfig, values?: unknown[]): Promise<R[]> {
    return this.retrying(async () => {
      const result: QueryResult<R> =
        typeof text === 'string'
          ? await this.pool.query<R>(text, values)
          : await this.pool.query<R>(text);
      return result.rows;
    });
  }

  /** One statement on the pool, as {@link query}; how many rows it changed. */
  change(text: string, values: unknown[]): Promise<number> {
    return this.retrying(async () => (await this.pool.query(text, values)).rowCount ?? 0);
  }
}
