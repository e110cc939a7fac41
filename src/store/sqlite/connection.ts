/**
 * Opening a SQLite database for the store (WAL, synchronous, foreign keys, schema
 * migrations) and mapping better-sqlite3's errors to StoreError kinds.
 */
import Database from 'better-sqlite3';
import { StoreError, type StoreOperation } from '../../core/errors.ts';
import { wrapStoreError } from '../store-error.ts';
import { migrateSqlite } from './schema.ts';

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
  /**
   * How long after a commit the derived read models are refreshed from the log, in
   * ms (default 250; 0 turns the background refresh off — queries stay exact).
   */
  readModelRefreshMs?: number | undefined;
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
export function toStoreError(
  error: unknown,
  operation: StoreOperation,
  actorId?: string,
): StoreError {
  return wrapStoreError(error, operation, classifySqliteError, actorId);
}

/** Opens `file` with the store's pragmas and brings its schema up to date. */
export function openDatabase(file: string, options: SqliteStoreOptions): Database.Database {
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
  return db;
}

/** Prepared statements cached by their text. */
export class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(private readonly db: Database.Database) {}

  get(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }
}
