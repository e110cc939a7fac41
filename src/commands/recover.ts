import type { Command } from 'commander';
import { checkStoredVersions } from './stored-versions.ts';
import { chartsFor, withChartsOption, type ChartsOption } from './charts-option.ts';
import { clockTime, eventLabel, table } from './format.ts';
import { recover } from '../durable/recover.ts';
import { getRuntime } from '../durable/open.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

/** `agentcharts recover`: what a restarted process does first, run once from the command line. */
export function registerRecover(program: Command): void {
  const command = storeCommand(program, 'recover')
    .description(
      "Recover every unfinished actor: fire overdue durable timers and apply each chart's recovery policy (interrupted steps are reported, not re-run)",
    )
    .option('--json', 'print the report as JSON');
  withChartsOption(command).action(
    async (opts: StoreOptions & ChartsOption & { json?: boolean }): Promise<void> => {
      const charts = await chartsFor(opts);
      const { store, where } = openExistingStore(opts);
      try {
        await checkStoredVersions(store, charts);
        const report = await recover(store, { charts });
        // Timers armed by recovery stay in the store; the next process that recovers fires them.
        await getRuntime(store).close();
        const pending = new Map<string, string>();
        for (const a of report.actors) {
          const next = (await store.timers(a.actorId)).sort((x, y) => x.dueAt - y.dueAt)[0];
          if (next)
            pending.set(a.actorId, `${eventLabel(next.timerId)} at ${clockTime(next.dueAt)}`);
        }
        if (opts.json) {
          process.stdout.write(
            `${JSON.stringify(
              {
                store: where,
                ...report,
                pendingTimers: Object.fromEntries(pending),
              },
              null,
              2,
            )}\n`,
          );
        } else {
          const lines = [`recover ${where}`];
          if (report.actors.length === 0 && report.steps.length === 0) {
            lines.push('nothing to recover: no unfinished actor, no interrupted step');
          }
          if (report.steps.length > 0) {
            lines.push('Interrupted steps:');
            lines.push(
              table(
                ['step', 'outcome', 'detail'],
                report.steps.map((s) => [s.key, s.outcome, s.detail]),
              ),
            );
          }
          if (report.actors.length > 0) {
            lines.push('Actors:');
            lines.push(
              table(
                ['actor', 'machine', 'before', 'after', 'action', 'next timer', 'reason'],
                report.actors.map((a) => [
                  a.actorId,
                  a.machineId,
                  a.stateBefore,
                  a.stateAfter,
                  a.action === 'sent' && a.event ? `sent ${a.event.type}` : a.action,
                  pending.get(a.actorId) ?? '-',
                  a.error ? `${a.error.name}: ${a.error.message}` : a.reason,
                ]),
              ),
            );
          }
          const c = report.counts;
          lines.push(
            `${c.actors} actor(s): ${c.sent} sent an event, ${c.resumed} resumed, ${c.failed} failed; ${c.timersFired} overdue timer(s) fired`,
          );
          const uncertain = report.steps.filter((s) => s.outcome === 'uncertain').length;
          if (uncertain > 0) {
            lines.push(
              `${uncertain} step(s) stay uncertain: settle them with recover(store, { reconcile }) in the application, which can ask the external system`,
            );
          }
          process.stdout.write(`${lines.join('\n')}\n`);
        }
        if (report.counts.failed > 0 || report.steps.some((s) => s.outcome === 'failed')) {
          process.exitCode = 1;
        }
      } finally {
        await store.close();
      }
    },
  );
}
