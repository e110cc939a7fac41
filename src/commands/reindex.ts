import type { Command } from 'commander';
import { DEFAULT_SQLITE_FILE } from '../store/open.ts';
import { openExistingStore, type StoreOptions } from './store-option.ts';

/**
 * `agentcharts reindex`: rebuilds the derived read models (state and user lookups,
 * statistics, state entries, the transition feed) from the authoritative tables.
 * Queries are exact without it; it repairs read models a tool wrote around.
 */
export function registerReindex(program: Command): void {
  program
    .command('reindex')
    .description(
      'Rebuild the read models (status, statistics, alert inputs, feed) from the actors and their transition log',
    )
    .option('--db <file>', `the SQLite file (default ${DEFAULT_SQLITE_FILE})`)
    .option('--store <url>', 'a store URL instead: sqlite:<file> or postgres://…')
    .option('--json', 'print the result as JSON')
    .action(async (opts: StoreOptions & { json?: boolean }): Promise<void> => {
      const { store, where } = openExistingStore(opts);
      try {
        const started = performance.now();
        const rebuilt = await store.rebuildReadModels();
        const ms = Math.round(performance.now() - started);
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ store: where, ...rebuilt, ms })}\n`
            : `reindex ${where}\n  actors   ${rebuilt.actors}\n  entries  ${rebuilt.entries}\nrebuilt in ${ms} ms\n`,
        );
      } finally {
        await store.close();
      }
    });
}
