/**
 * Before a command runs actors (recover, serve, mcp): no chart of the user's may
 * be older than what the store already holds. An actor stored by version 3 cannot
 * be loaded by version 2; finding that out actor by actor, halfway through a
 * recovery, would leave some actors handled and others not. One clear error
 * instead, naming the file and the chart, before anything is written.
 */
import type { ChartDefinition } from '../core/chart.ts';
import { AgentchartsError } from '../core/errors.ts';
import type { Store } from '../store/types.ts';
import { chartFile } from './chart-list.ts';

/** The store holds an actor of a chart at a version newer than the file's highest. */
export class ChartBehindStoreError extends AgentchartsError {
  override name = 'ChartBehindStoreError';
  constructor(
    readonly file: string,
    readonly machineId: string,
    readonly version: number,
    readonly storedVersion: number,
    readonly actorId: string,
  ) {
    super(
      'CHART_BEHIND_STORE',
      `${file}: chart "${machineId}" is at version ${version}, but the store holds actor "${actorId}" at version ${storedVersion}; deploy version ${storedVersion} or later (nothing was written)`,
    );
  }
}

/** Actors read per page. */
const PAGE = 1000;

/**
 * Throws {@link ChartBehindStoreError} when the store holds an actor of a user's
 * chart (one from a file) at a version above the highest of that chart given.
 * Pages through the actors of those machines only.
 */
export async function checkStoredVersions(
  store: Store,
  charts: readonly ChartDefinition[],
): Promise<void> {
  const highest = new Map<string, ChartDefinition>();
  for (const chart of charts) {
    if (chartFile(chart) === undefined) continue;
    const known = highest.get(chart.machine.id);
    if (!known || known.version < chart.version) highest.set(chart.machine.id, chart);
  }
  for (const [machineId, chart] of highest) {
    let afterId: string | undefined;
    for (;;) {
      const page = await store.listActors({ machineId, afterId, limit: PAGE });
      const ahead = page.find((row) => row.chartVersion > chart.version);
      if (ahead) {
        throw new ChartBehindStoreError(
          chartFile(chart) ?? '(unknown file)',
          machineId,
          chart.version,
          ahead.chartVersion,
          ahead.id,
        );
      }
      if (page.length < PAGE) break;
      afterId = page.at(-1)?.id;
    }
  }
}
