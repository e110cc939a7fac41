/** The storage layer of the durable runtime: the Store contract and its implementations. */
export type * from './types.ts';
export { MemoryStore } from './memory.ts';
export {
  SqliteStore,
  openSqliteStore,
  classifySqliteError,
  type SqliteStoreOptions,
} from './sqlite/store.ts';
export {
  SQLITE_MIGRATIONS,
  SQLITE_SCHEMA_VERSION,
  migrateSqlite,
  sqliteSchemaVersion,
  type SqliteMigration,
} from './sqlite/schema.ts';
export {
  PostgresStore,
  openPostgresStore,
  classifyPostgresError,
  type PostgresStoreOptions,
} from './postgres/store.ts';
export {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  migratePostgres,
  postgresSchemaVersion,
  type PostgresMigration,
} from './postgres/schema.ts';
export { openStore, parseStoreUrl, DEFAULT_SQLITE_FILE, type StoreUrl } from './open.ts';
