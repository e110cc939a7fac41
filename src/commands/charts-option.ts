/**
 * The user's own charts, for every command that loads actors (verify, recover,
 * serve, status, inspect, mcp): those of `agentcharts.config.ts`, then those
 * of each `--charts <module>`. A module may export charts
 * (`defineChart(…)`), a `charts` array, or bare machines (made charts with
 * `defineChart(machine)`); they join the six built-in charts, and a chart of the
 * same machine id replaces the built-in one.
 */
import type { Command } from 'commander';
import { charts as builtIn } from '../../machines/index.ts';
import type { ChartDefinition } from '../core/chart.ts';
import { chartMeta } from '../core/meta.ts';
import { chartList } from './chart-list.ts';
import { loadConfig } from './config-file.ts';
import { importModule } from './load-module.ts';
import { NoMachineError } from './resolve-chart.ts';

export interface ChartsOption {
  charts?: string[];
}

/**
 * One module per `--charts`, repeated for several: a variadic `<module...>`
 * would take the argument after it (`inspect --charts ./order.ts order`) as a
 * second module.
 */
export function collectModules(module: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), module];
}

/** The option's flags, help and parser, for `.option(...CHARTS_FLAGS)`. */
export const CHARTS_FLAGS = [
  '--charts <module>',
  'a module exporting your own charts (defineChart results, a `charts` array, or machines), added to the built-in ones; repeat for several',
  collectModules,
] as const;

/** Adds `--charts <module>` (repeatable) to a command. */
export function withChartsOption(command: Command): Command {
  return command.option(...CHARTS_FLAGS);
}

/**
 * Adds `--charts <module>` to a command that reads stored actors, and loads
 * the charts (the config's and `--charts`) before it runs, so that their
 * meanings (document names, state classes) are known.
 */
export function knowingCharts(command: Command): Command {
  return withChartsOption(command).hook('preAction', async (_hooked, action) => {
    await chartsFor(action.opts<ChartsOption>());
  });
}

/**
 * The charts a command works with: the built-in ones, the config's and those
 * `--charts` names. One per machine id — the highest version — unless
 * `allVersions` (verify replays each version's segment of a log with its chart).
 */
export async function chartsFor(
  opts: ChartsOption,
  cwd = process.cwd(),
  { allVersions = false }: { allVersions?: boolean } = {},
): Promise<ChartDefinition[]> {
  // machine id → version → chart; a later source replaces the same id and version.
  const byId = new Map<string, Map<number, ChartDefinition>>();
  const add = (chart: ChartDefinition) => {
    const versions = byId.get(chart.machine.id) ?? new Map<number, ChartDefinition>();
    versions.set(chart.version, chart);
    byId.set(chart.machine.id, versions);
  };
  for (const chart of builtIn) add(chart);
  const mine: ChartDefinition[] = [...((await loadConfig(cwd))?.charts ?? [])];
  for (const spec of opts.charts ?? []) mine.push(...(await moduleCharts(spec, cwd)));
  // Your chart of a built-in machine id replaces the built-in one, every version.
  for (const id of new Set(mine.map((c) => c.machine.id))) byId.delete(id);
  for (const chart of mine) add(chart);
  return [...byId.values()].flatMap((versions) => {
    const sorted = [...versions.values()].sort((x, y) => x.version - y.version);
    // What a machine id's states mean (status, tail, alerts, serve) is its highest version's.
    const highest = sorted.at(-1);
    if (highest) chartMeta(highest.machine);
    return allVersions ? sorted : sorted.slice(-1);
  });
}

/** The charts a `--charts` module exports (a chart and the machine it wraps: the chart). */
export async function moduleCharts(spec: string, cwd: string): Promise<ChartDefinition[]> {
  const mod = await importModule(spec, cwd);
  const values = Object.values(mod).flatMap((v) => (Array.isArray(v) ? v : [v]));
  const charts = chartList(spec, values);
  if (charts.length === 0) throw new NoMachineError(spec, 'exports no chart and no machine');
  return charts;
}
