/** The charts a runtime can load actors of, by machine id. */
import type { AnyStateMachine } from 'xstate';
import type { ChartDefinition, PersistedSnapshot, SnapshotMigration } from '../core/chart.ts';

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

const same: SnapshotMigration = (snapshot: PersistedSnapshot) => snapshot;

/**
 * A child machine a chart invokes or spawns, registered at its parent's chart
 * version: children are created at that version, so `verify` and loading tell a
 * child of version 2 from one its version-1 parent made. Children stored at an
 * earlier version load unchanged (a chart that changes a child machine's states
 * declares its migrations by making the child a chart of its own).
 */
export function childRegistration(machine: AnyStateMachine, version: number): ChartRegistration {
  const migrations: Record<number, SnapshotMigration> = {};
  for (let v = 1; v < version; v++) migrations[v] = same;
  return { machine, version, migrations };
}
