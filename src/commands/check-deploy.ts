import type { Command } from 'commander';
import { checkDeploy, type StrandedActor } from '../durable/check-deploy.ts';
import { progressLine } from '../observe/progress.ts';
import { chartsFor, collectModules, moduleCharts } from './charts-option.ts';
import { table } from './format.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

/** Actors named in a line, at most. */
const NAMED = 10;

/**
 * One line per state the new version lacks, with the actors it strands:
 * `state "review" is not in expense v2: 2 actor(s) stranded (exp-1, exp-2)`.
 */
export function missingStates(stranded: readonly StrandedActor[]): string[] {
  const byState = new Map<string, string[]>();
  for (const s of stranded) {
    if (s.missingState === undefined) continue;
    const key = `state "${s.missingState}" is not in ${s.machineId} v${s.version}`;
    byState.set(key, [...(byState.get(key) ?? []), s.actorId]);
  }
  return [...byState].map(([what, ids]) => {
    const named = ids.slice(0, NAMED).join(', ');
    const more = ids.length > NAMED ? ` and ${ids.length - NAMED} more` : '';
    return `${what}: ${ids.length} actor(s) stranded (${named}${more})`;
  });
}

/**
 * `agentcharts check-deploy --charts <new module>`: which stored actors the new
 * chart versions would strand, found by a dry run that writes nothing.
 */
export function registerCheckDeploy(program: Command): void {
  storeCommand(program, 'check-deploy')
    .description(
      'Dry-run new chart versions (--charts <module>) against every stored actor, writing nothing: states with no migration, migrations that throw or do not restore, lost timers and events; exit 1 when any actor would be stranded',
    )
    .requiredOption(
      '--charts <module>',
      'a module exporting the chart versions to deploy; repeat for several',
      collectModules,
    )
    .option('--json', 'print the report as JSON')
    .action(async (opts: StoreOptions & { charts: string[]; json?: boolean }): Promise<void> => {
      const next = (
        await Promise.all(opts.charts.map((spec) => moduleCharts(spec, process.cwd())))
      ).flat();
      if (next.length === 0) throw new CliOptionError('--charts', 'names no chart');
      // What runs now: the built-in and configured charts, every version.
      const current = await chartsFor({}, process.cwd(), { allVersions: true });
      const { store, where } = openExistingStore(opts);
      const progress = progressLine();
      try {
        const report = await checkDeploy(store, {
          charts: next,
          current,
          onProgress: (checked) => progress.update(`checked ${checked} actors…`),
        });
        progress.done();
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ store: where, ...report }, null, 2)}\n`);
        } else {
          const versions = next.map((c) => `${c.machine.id}@${c.version}`).join(', ');
          const lines = [
            `check-deploy ${versions} against ${where}`,
            `  actors     ${report.checked}`,
            `  migrating  ${report.migrating}`,
          ];
          if (report.ok) {
            lines.push('ok: no stored actor would be stranded');
          } else {
            const actors = new Set(report.stranded.map((s) => s.actorId)).size;
            lines.push(...missingStates(report.stranded));
            lines.push(`${actors} actor(s) would be stranded:`);
            lines.push(
              table(
                ['actor', 'machine', 'state', 'version', 'kind', 'detail'],
                report.stranded.map((s) => [
                  s.actorId,
                  s.machineId,
                  s.state,
                  `${s.storedVersion} → ${s.version}`,
                  s.kind,
                  s.detail,
                ]),
              ),
            );
          }
          process.stdout.write(`${lines.join('\n')}\n`);
        }
        if (!report.ok) process.exitCode = 1;
      } finally {
        progress.done();
        await store.close();
      }
    });
}
