/**
 * What both stores' migration runners check before touching a database: the list
 * is numbered without gaps, and a database newer than its last version is refused.
 */
import { StoreError } from '../core/errors.ts';

/**
 * Checks that `migrations` are numbered 1, 2, 3, … (StoreError `migrate`, kind
 * `bad_migration`, otherwise) and returns the newest version with the error for a
 * database found at a version above it (kind `schema_too_new`).
 */
export function checkMigrations(migrations: ReadonlyArray<{ version: number }>): {
  latest: number;
  tooNew: (found: number) => StoreError;
} {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new StoreError({
        operation: 'migrate',
        kind: 'bad_migration',
        detail: `migration #${i + 1} is numbered ${m.version}`,
      });
    }
  });
  const latest = migrations.length;
  const tooNew = (found: number) =>
    new StoreError({
      operation: 'migrate',
      kind: 'schema_too_new',
      detail: `database schema version ${found} is newer than version ${latest} supported by this agentcharts; upgrade agentcharts`,
    });
  return { latest, tooNew };
}
