/** Opening a store from a URL: the one entry point the runtime, CLI and server share. */
import { StoreError } from '../core/errors.ts';
import { MemoryStore } from './memory.ts';
import type { PostgresStoreOptions } from './postgres/options.ts';
import { openPostgresStore } from './postgres/store.ts';
import { SCHEMA_NAME } from './postgres/schema.ts';
import { openSqliteStore, type SqliteStoreOptions } from './sqlite/store.ts';
import type { Store } from './types.ts';
import { requireArg } from '../core/options.ts';

/** The default store file, relative to the working directory. */
export const DEFAULT_SQLITE_FILE = './agentcharts.db';

/** A parsed store URL. */
export type StoreUrl =
  | { kind: 'sqlite'; file: string; options: SqliteStoreOptions }
  | { kind: 'memory' }
  | {
      kind: 'postgres';
      /** The URL handed to `pg`: agentcharts' own parameters removed. */
      connectionString: string;
      options: PostgresStoreOptions;
    };

const BOOLEANS: Readonly<Record<string, boolean>> = {
  '1': true,
  true: true,
  '0': false,
  false: false,
};
const SYNCHRONOUS = ['full', 'normal', 'extra'] as const;

function badUrl(detail: string): StoreError {
  return new StoreError({ operation: 'open', kind: 'bad_url', detail });
}

/**
 * Parses a store URL without opening anything. Messages never echo the URL
 * (a postgres URL may carry a password), only its scheme or parameter names.
 *
 * - `sqlite:<file>` or `sqlite::memory:`, with optional query parameters
 *   `synchronous=full|normal|extra`, `busy_timeout=<ms>`, `readonly=1|0`;
 * - `memory:`;
 * - `postgres://…` / `postgresql://…`, with optional query parameters
 *   `statement_timeout=<ms>`, `connect_timeout=<s>`, `pool_max=<n>`,
 *   `rollback_retries=<n>`, `schema=<name>` (lower-case identifier); any other parameter (`sslmode`,
 *   `application_name`, …) is passed to `pg` as is.
 *
 * @example
 * parseStoreUrl('sqlite:data/app.db?busy_timeout=200');
 * // { kind: 'sqlite', file: 'data/app.db', options: { busyTimeoutMs: 200 } }
 */
export function parseStoreUrl(url: string = `sqlite:${DEFAULT_SQLITE_FILE}`): StoreUrl {
  requireArg(
    'parseStoreUrl',
    'url',
    typeof url === 'string',
    'a store URL (sqlite:<file>, postgres://…, memory:)',
  );
  if (url === 'memory:') return { kind: 'memory' };
  if (/^postgres(ql)?:\/\//i.test(url)) return parsePostgresUrl(url);
  if (!url.startsWith('sqlite:')) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0];
    const found = scheme === undefined ? 'no scheme' : `unknown scheme "${scheme}"`;
    throw badUrl(`${found}; expected sqlite:<file>, memory: or postgres://…`);
  }
  const rest = url.slice('sqlite:'.length);
  const q = rest.indexOf('?');
  const file = q === -1 ? rest : rest.slice(0, q);
  if (file === '') throw badUrl('sqlite: needs a file name (or :memory:)');
  const options: SqliteStoreOptions = {};
  for (const [name, value] of new URLSearchParams(q === -1 ? '' : rest.slice(q + 1))) {
    if (name === 'synchronous') {
      const mode = SYNCHRONOUS.find((m) => m === value.toLowerCase());
      if (mode === undefined) throw badUrl('synchronous must be full, normal or extra');
      options.synchronous = mode;
    } else if (name === 'busy_timeout') {
      if (!/^\d{1,9}$/.test(value)) throw badUrl('busy_timeout must be milliseconds (an integer)');
      options.busyTimeoutMs = Number(value);
    } else if (name === 'readonly') {
      const flag = BOOLEANS[value.toLowerCase()];
      if (flag === undefined) throw badUrl('readonly must be 1, 0, true or false');
      options.readonly = flag;
    } else {
      throw badUrl(`unknown sqlite parameter "${name}"`);
    }
  }
  return { kind: 'sqlite', file, options };
}

const INTEGER = /^\d{1,9}$/;

function parsePostgresUrl(url: string): StoreUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badUrl('postgres URL is malformed; expected postgres://user:password@host:port/database');
  }
  const options: PostgresStoreOptions = {};
  const integer = (name: string, value: string, min: number) => {
    if (!INTEGER.test(value) || Number(value) < min) {
      throw badUrl(`${name} must be an integer ≥ ${min}`);
    }
    return Number(value);
  };
  for (const [name, value] of [...parsed.searchParams]) {
    if (name === 'statement_timeout') {
      options.statementTimeoutMs = integer(name, value, 0);
    } else if (name === 'connect_timeout') {
      options.connectTimeoutMs = integer(name, value, 1) * 1000;
    } else if (name === 'pool_max') {
      options.poolMax = integer(name, value, 1);
    } else if (name === 'rollback_retries') {
      options.rollbackRetries = integer(name, value, 0);
    } else if (name === 'schema') {
      if (!SCHEMA_NAME.test(value)) {
        throw badUrl('schema must be a lower-case identifier ([a-z_][a-z0-9_]*, ≤ 63 characters)');
      }
      options.schema = value;
    } else {
      continue;
    }
    parsed.searchParams.delete(name);
  }
  return { kind: 'postgres', connectionString: parsed.toString(), options };
}

/**
 * Opens the store a URL names: no argument → SQLite in `./agentcharts.db`;
 * `sqlite:<file>` (`sqlite::memory:` for a throwaway database); `postgres://…`
 * (a server shared by several workers); `memory:` (tests).
 * Synchronous, so `recover(openStore(), …)` reads naturally; PostgreSQL
 * connects (and migrates its schema) lazily on its first operation. Throws
 * StoreError (`open`): kind `bad_url` for anything else, or the SQLite failure
 * kind (`cantopen`, `corrupt`, `schema_too_new`, …).
 *
 * @example
 * const store = openStore('sqlite:./agentcharts.db');
 * const actors = await store.listActors({ status: 'active' });
 * await store.close();
 */
export function openStore(url?: string): Store {
  const parsed = parseStoreUrl(url);
  switch (parsed.kind) {
    case 'memory':
      return new MemoryStore();
    case 'sqlite':
      return openSqliteStore(parsed.file, parsed.options);
    case 'postgres':
      return openPostgresStore(parsed.connectionString, parsed.options);
  }
}
