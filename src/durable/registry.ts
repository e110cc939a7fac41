/** The charts a runtime can load actors of, by machine id. */
import type { ChartDefinition } from '../core/chart.ts';

/** What the runtime needs of a chart: its machine and versioning, the rest when known. */
export type ChartRegistration = Pick<ChartDefinition, 'machine' | 'version' | 'migrations'> &
  Partial<ChartDefinition>;

export class ChartRegistry {
  private readonly charts = new Map<string, ChartRegistration>();

  /**
   * Makes a chart loadable by machine id (recover, timers, verify). A partial
   * registration (createDurableActor's machine + versioning) is merged into what is
   * known, so it never drops a recovery policy or event schemas registered earlier.
   */
  register(chart: ChartRegistration): boolean {
    const existing = this.charts.get(chart.machine.id);
    if (existing && isPartOf(chart, existing)) return false; // nothing new (every creation)
    this.charts.set(chart.machine.id, existing ? { ...existing, ...chart } : chart);
    return true;
  }

  get(machineId: string): ChartRegistration | undefined {
    return this.charts.get(machineId);
  }
}

/** Whether every field of `chart` is already what `existing` holds. */
function isPartOf(chart: ChartRegistration, existing: ChartRegistration): boolean {
  for (const key of Object.keys(chart) as Array<keyof ChartRegistration>) {
    if (chart[key] !== existing[key]) return false;
  }
  return true;
}
