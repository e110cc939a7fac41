/**
 * The user's own charts, for every command that loads actors (verify, recover,
 * serve, status, inspect, mcp): those of `agentcharts.config.ts`, then those
 * of `--charts <module...>`. A module may export charts
 * (`defineChart(…)`), a `charts` array, or bare machines (made charts with
 * `defineChart(machine)`); they join the six built-in charts, and a chart of the
 * same machine id replaces the built-in one.
 */
import type { Command } from 'commander';
import { charts as builtIn } from '../../machines/index.ts';
import { defineChart, type ChartDefinition } from '../core/chart.ts';
import { loadConfig } from './config-file.ts';
import { NoMachineError, importModule, isChartLike, isStateMachine } from './resolve-chart.ts';

export interface ChartsOption {
  charts?: string[];
}

/** The option's flags and help, for `.option(...CHARTS_FLAGS)`. */
export const CHARTS_FLAGS = [
  '--charts <module...>',
  'modules exporting your own charts (defineChart results, a `charts` array, or machines), added to the built-in ones',
] as const;

/** Adds `--charts <module...>` to a command. */
export function withChartsOption(command: Command): Command {
  return command.option(...CHARTS_FLAGS);
}

/** The charts a command works with: the built-in ones and those `--charts` names. */
export async function chartsFor(
  opts: ChartsOption,
  cwd = process.cwd(),
): Promise<ChartDefinition[]> {
  const byId = new Map<string, ChartDefinition>(builtIn.map((c) => [c.machine.id, c]));
  for (const chart of (await loadConfig(cwd))?.charts ?? []) byId.set(chart.machine.id, chart);
  for (const spec of opts.charts ?? []) {
    const mod = await importModule(spec, cwd);
    const values = Object.values(mod).flatMap((v) => (Array.isArray(v) ? v : [v]));
    // A chart and the machine it wraps may both be exported: the chart wins.
    const mine = new Map<string, ChartDefinition>();
    for (const value of values) {
      if (isChartLike(value) && !isStateMachine(value)) {
        const chart = value as ChartDefinition;
        mine.set(chart.machine.id, chart);
      }
    }
    for (const value of values) {
      if (isStateMachine(value) && !mine.has(value.id)) mine.set(value.id, defineChart(value));
    }
    if (mine.size === 0) throw new NoMachineError(spec, 'exports no chart and no machine');
    for (const [id, chart] of mine) byId.set(id, chart);
  }
  return [...byId.values()];
}
