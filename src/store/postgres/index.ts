/**
 * `agentcharts/store/postgres`: the PostgreSQL store. Needs the optional
 * package `pg` (and `@types/pg` for TypeScript).
 *
 * @module agentcharts/store/postgres
 */
export { PostgresStore, classifyPostgresError, openPostgresStore } from './store.ts';
export type { PostgresStoreOptions } from './options.ts';
export {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  migratePostgres,
  postgresSchemaVersion,
  type PostgresMigration,
} from './schema.ts';
