/**
 * The charts a user's file declares (a `--charts` module's exports, a config's
 * `charts`), as one list: a machine becomes a chart with defaults, a chart and
 * the machine it wraps count once, the same chart exported twice counts once, and
 * two different charts of one machine id at one version are an error naming the
 * file and the chart (which of the two would run is anyone's guess).
 */
import { chartMeta } from '../core/meta.ts';
import { defineChart, type ChartDefinition } from '../core/chart.ts';
import { AgentchartsError } from '../core/errors.ts';
import { isChartLike, isStateMachine } from './resolve-chart.ts';

/** A file declares two different charts for one machine id and version. */
export class ChartConflictError extends AgentchartsError {
  override name = 'ChartConflictError';
  constructor(
    readonly file: string,
    readonly machineId: string,
    readonly version: number,
  ) {
    super(
      'CHART_CONFLICT',
      `${file}: two different charts of machine "${machineId}" at version ${version}; export one, or give each version its own number (defineChart(machine, { version }))`,
    );
  }
}

/** The file each chart of a user's file was first listed from. */
const files = new WeakMap<ChartDefinition, string>();

/** The file (config or `--charts` module) a chart came from, if it came from one. */
export function chartFile(chart: ChartDefinition): string | undefined {
  return files.get(chart);
}

/** Whether a value is a chart (a `defineChart` result) rather than a machine. */
export function isChart(value: unknown): value is ChartDefinition {
  return isChartLike(value) && !isStateMachine(value);
}

/**
 * The charts among `values` (charts first, then machines no chart wraps, made
 * charts with defaults), each registered with this process's chart metadata.
 */
export function chartList(file: string, values: readonly unknown[]): ChartDefinition[] {
  const charts: ChartDefinition[] = [];
  const byKey = new Map<string, ChartDefinition>();
  const add = (chart: ChartDefinition): void => {
    const key = `${chart.machine.id}@${chart.version}`;
    const known = byKey.get(key);
    if (known === chart) return;
    if (known) throw new ChartConflictError(file, chart.machine.id, chart.version);
    byKey.set(key, chart);
    if (!files.has(chart)) files.set(chart, file);
    // A chart defined against another copy of agentcharts still means the same here.
    chartMeta(chart.machine);
    charts.push(chart);
  };
  for (const value of values) if (isChart(value)) add(value);
  const wrapped = new Set(charts.map((c) => c.machine));
  const wrappedIds = new Set(charts.map((c) => c.machine.id));
  for (const value of values) {
    if (!isStateMachine(value) || wrapped.has(value)) continue;
    // A bare machine beside a chart of its id is that chart's machine, or an older copy of it.
    if (wrappedIds.has(value.id)) continue;
    wrapped.add(value);
    wrappedIds.add(value.id);
    add(defineChart(value));
  }
  return charts;
}
