import type { Command } from 'commander';
import type { ChartDefinition } from '../core/chart.ts';
import { checkChart, type ChartCheck } from '../check/check-chart.ts';
import { checkToJson, checkTotals, formatCheck, formatTotals } from '../check/format.ts';
import { chartsFor, moduleCharts, withChartsOption, type ChartsOption } from './charts-option.ts';
import { parseLimitOption } from './paths.ts';
import { ChartNotFoundError, looksLikePath } from './resolve-chart.ts';

/** Exit code of a check that refuted a property. */
export const EXIT_REFUTED = 1;
/** Exit code of a check that refuted nothing but left a property unproven (over the bound). */
export const EXIT_UNPROVEN = 2;

/** The charts named on the command line (all known charts when none is). */
async function chartsNamed(
  specs: readonly string[],
  opts: ChartsOption,
): Promise<ChartDefinition[]> {
  const known = await chartsFor(opts);
  if (specs.length === 0) return known;
  const out: ChartDefinition[] = [];
  for (const spec of specs) {
    if (looksLikePath(spec)) {
      out.push(...(await moduleCharts(spec, process.cwd())));
      continue;
    }
    const chart = known.find((c) => c.name === spec || c.machine.id === spec);
    if (!chart) {
      throw new ChartNotFoundError(spec, [...new Set(known.map((c) => c.name))].sort());
    }
    out.push(chart);
  }
  return out;
}

/**
 * `agentcharts check [chart…]`: proves or refutes every property the charts
 * declare over their whole state space; prints the shortest counterexample of a
 * refuted one. Exit 1 when one is refuted, 2 when one is unproven (the state space
 * is over the bound), 0 when all are proven.
 */
export function registerCheck(program: Command): void {
  withChartsOption(
    program
      .command('check')
      .description(
        "Prove or refute each chart's properties over its whole state space, with the shortest counterexample",
      )
      .argument(
        '[chart...]',
        'catalog names (task-lifecycle), machine ids of agentcharts.config.ts, or modules exporting charts; default: every chart',
      )
      .option('--limit <states>', 'largest number of states to explore per chart (default 50000)')
      .option('--json', 'print the checks as JSON (counterexamples with event payloads)'),
  ).action(
    async (
      specs: string[],
      opts: ChartsOption & { limit?: string; json?: boolean },
    ): Promise<void> => {
      const limit = parseLimitOption(opts.limit);
      const charts = await chartsNamed(specs, opts);
      const started = performance.now();
      const checks: ChartCheck[] = charts.map((chart) =>
        checkChart(chart, limit === undefined ? {} : { limit }),
      );
      const wallMs = Math.round(performance.now() - started);
      const totals = checkTotals(checks);
      if (opts.json) {
        process.stdout.write(
          `${JSON.stringify({ charts: checks.map(checkToJson), totals: { ...totals, wallMs } }, null, 2)}\n`,
        );
      } else {
        process.stdout.write(
          `${checks.map((c) => formatCheck(c)).join('\n\n')}\n\n${formatTotals(totals, wallMs)}\n`,
        );
      }
      if (totals.refuted > 0) process.exitCode = EXIT_REFUTED;
      else if (totals.unproven > 0) process.exitCode = EXIT_UNPROVEN;
    },
  );
}
