import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { table } from './format.ts';
import { verify } from '../durable/verify.ts';
import { DEFAULT_SQLITE_FILE, openStore, parseStoreUrl } from '../store/open.ts';
import type { Store } from '../store/types.ts';
import { loadedConfig } from './config-file.ts';
import { chartsFor, withChartsOption, type ChartsOption } from './charts-option.ts';
import { CliOptionError } from './paths.ts';

/** The store options shared by `verify` and `recover`. */
export interface StoreOptions {
  db?: string;
  store?: string;
}

/**
 * The store URL a command opens: `--store`, else `--db`, else the config file's
 * `store`, else `sqlite:./agentcharts.db`.
 */
export function storeUrlFor(opts: StoreOptions): string {
  if (opts.store !== undefined) return opts.store;
  if (opts.db !== undefined) return `sqlite:${opts.db}`;
  return loadedConfig()?.store ?? `sqlite:${DEFAULT_SQLITE_FILE}`;
}

/**
 * Opens the store `--db <file>` or `--store <url>` names (default
 * `./agentcharts.db`) for a command that works on existing data: a missing
 * SQLite file is an error, never silently created, and a private in-memory
 * store is refused because it holds nothing another process wrote.
 */
export function openExistingStore(opts: StoreOptions): { store: Store; where: string } {
  if (opts.db !== undefined && opts.store !== undefined) {
    throw new CliOptionError('--db', 'give --db <file> or --store <url>, not both');
  }
  const option = opts.store !== undefined ? '--store' : '--db';
  const url = storeUrlFor(opts);
  const parsed = parseStoreUrl(url);
  if (parsed.kind === 'memory' || (parsed.kind === 'sqlite' && parsed.file === ':memory:')) {
    throw new CliOptionError(
      option,
      'an in-memory store lives inside one process and holds nothing to work on; name a SQLite file',
    );
  }
  if (parsed.kind === 'sqlite' && !existsSync(parsed.file)) {
    throw new CliOptionError(
      option,
      `no database at ${resolve(parsed.file)} (run \`npm start\` to create one, or name another file)`,
    );
  }
  const store = openStore(url);
  return {
    store,
    where: parsed.kind === 'sqlite' ? `sqlite:${resolve(parsed.file)}` : store.location,
  };
}

/** `agentcharts verify`: replays every actor's audit trail and checks hash chains and snapshots. */
export function registerVerify(program: Command): void {
  const command = program
    .command('verify')
    .description(
      "Check every actor's audit trail: hash chain, sequence, and a replay of its events that must land on the stored snapshot",
    )
    .option('--db <file>', `the SQLite file (default ${DEFAULT_SQLITE_FILE})`)
    .option('--store <url>', 'a store URL instead: sqlite:<file>')
    .option('--json', 'print the report as JSON');
  withChartsOption(command).action(
    async (opts: StoreOptions & ChartsOption & { json?: boolean }): Promise<void> => {
      const charts = await chartsFor(opts, process.cwd(), { allVersions: true });
      const { store, where } = openExistingStore(opts);
      try {
        const report = await verify(store, { charts });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ store: where, ...report }, null, 2)}\n`);
        } else {
          const lines = [
            `verify ${where}`,
            `  actors  ${report.actorsChecked}`,
            `  rows    ${report.rowsChecked}`,
          ];
          for (const c of report.checkpoints) {
            lines.push(
              `  checkpoint: ${c.actorId} seq ${c.seq}, migrated ${c.from} → ${c.to}: ${c.reason}`,
            );
          }
          if (report.ok) {
            lines.push(
              'ok: every hash chain is intact and every stored snapshot equals the replay of its events',
            );
          } else {
            lines.push(`${report.problems.length} problem(s):`);
            lines.push(
              table(
                ['actor', 'first bad row', 'kind', 'detail'],
                report.problems.map((p) => [
                  p.actorId,
                  p.seq !== undefined ? String(p.seq) : '-',
                  p.kind,
                  p.detail,
                ]),
              ),
            );
          }
          process.stdout.write(`${lines.join('\n')}\n`);
        }
        if (!report.ok) process.exitCode = 1;
      } finally {
        await store.close();
      }
    },
  );
}
