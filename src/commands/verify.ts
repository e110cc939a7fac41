import type { Command } from 'commander';
import { table } from './format.ts';
import { verify } from '../durable/verify.ts';
import { DEFAULT_SQLITE_FILE } from '../store/open.ts';
import { chartsFor, withChartsOption, type ChartsOption } from './charts-option.ts';
import { openExistingStore, type StoreOptions } from './store-option.ts';

/** `agentcharts verify`: replays every actor's audit trail and checks hash chains and snapshots. */
export function registerVerify(program: Command): void {
  const command = program
    .command('verify')
    .description(
      "Check every actor's audit trail: hash chain, sequence, and a replay of its events that must land on the stored snapshot",
    )
    .option('--db <file>', `the SQLite file (default ${DEFAULT_SQLITE_FILE})`)
    .option('--store <url>', 'a store URL instead: sqlite:<file>')
    .option('--json', 'print the report as JSON')
    .option(
      '--strict',
      'exit 1 when an actor is not verifiable (stored at a chart version not registered)',
    );
  withChartsOption(command).action(
    async (
      opts: StoreOptions & ChartsOption & { json?: boolean; strict?: boolean },
    ): Promise<void> => {
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
          for (const u of report.notVerifiable) {
            lines.push(
              `  not verifiable: ${u.actorId} (${u.machineId}): chart version ${u.chartVersion} not registered`,
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
        // An actor at a version not given is not a problem of the log; --strict makes it one.
        if (!report.ok || (opts.strict === true && report.notVerifiable.length > 0)) {
          process.exitCode = 1;
        }
      } finally {
        await store.close();
      }
    },
  );
}
