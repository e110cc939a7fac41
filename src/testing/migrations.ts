/**
 * Generated tests know chart versions: every state an earlier version reaches —
 * and the contexts its transitions produce — must migrate, through the current
 * chart's migrations, to a snapshot the current version restores and continues
 * from.
 */
import type { AnyMachineSnapshot } from 'xstate';
import type { ChartDefinition, EventCatalog, PersistedSnapshot } from '../core/chart.ts';
import { stateLabel } from '../core/state.ts';
import { stateValueExists } from '../durable/codec.ts';
import { pureRestore, pureTransition } from '../durable/pure.ts';
import { exploreMachine } from './explore.ts';

/** One stored snapshot of an earlier version to migrate. */
export interface MigrationCase {
  from: number;
  to: number;
  label: string;
  /** The persisted snapshot as the earlier version stored it. */
  persisted: PersistedSnapshot;
}

/** Cases per earlier version, at most. */
const MAX_CASES = 500;

const persist = (chart: ChartDefinition, snapshot: AnyMachineSnapshot): PersistedSnapshot =>
  JSON.parse(JSON.stringify(chart.machine.getPersistedSnapshot(snapshot))) as PersistedSnapshot;

/**
 * The snapshots each earlier version can store: every state it reaches with its
 * chart's sample events, and the snapshot after every legal transition (the
 * contexts its paths produce), distinct, at most 500 per version.
 */
export function planMigrationCases(
  chart: ChartDefinition,
  previous: readonly ChartDefinition[],
): MigrationCase[] {
  const cases: MigrationCase[] = [];
  for (const old of previous) {
    if (old.version >= chart.version) continue;
    const graph = exploreMachine(old.machine, {
      events: old.eventSamples,
      input: old.defaultInput,
      ...(old.serializeState ? { serializeState: old.serializeState } : {}),
    });
    const seen = new Set<string>();
    const add = (snapshot: AnyMachineSnapshot) => {
      const persisted = persist(old, snapshot);
      const key = JSON.stringify(persisted);
      if (seen.has(key) || seen.size >= MAX_CASES) return;
      seen.add(key);
      cases.push({
        from: old.version,
        to: chart.version,
        label: stateLabel(snapshot.value),
        persisted,
      });
    };
    for (const snapshot of graph.states.values()) add(snapshot as AnyMachineSnapshot);
    for (const edge of graph.edges) {
      const from = graph.states.get(edge.from);
      if (from) add(pureTransition(old.machine, from, edge.event)[0]);
    }
  }
  return cases;
}

/**
 * Migrates one case with `chart.migrations`, restores it under `chart` and sends
 * it every sample event its state accepts. Returns what went wrong, or undefined.
 */
export function checkMigrationCase(
  chart: ChartDefinition,
  migrationCase: MigrationCase,
  events: EventCatalog = chart.eventSamples,
): string | undefined {
  let persisted = migrationCase.persisted;
  for (let v = migrationCase.from; v < migrationCase.to; v++) {
    const migrate = chart.migrations[v];
    if (!migrate) return `no migration from version ${v} to ${v + 1}`;
    try {
      persisted = JSON.parse(
        JSON.stringify(migrate(structuredClone(persisted))),
      ) as PersistedSnapshot;
    } catch (error) {
      return `the migration from ${v} threw: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  if (!stateValueExists(chart.machine, persisted['value'])) {
    return `migrated to ${JSON.stringify(persisted['value'])}, a state version ${migrationCase.to} does not have`;
  }
  let restored: AnyMachineSnapshot;
  try {
    restored = pureRestore(chart.machine, persisted);
  } catch (error) {
    return `version ${migrationCase.to} cannot restore it: ${error instanceof Error ? error.message : String(error)}`;
  }
  for (const samples of Object.values(events)) {
    for (const event of samples ?? []) {
      if (!restored.can(event)) continue;
      try {
        pureTransition(chart.machine, restored, event);
      } catch (error) {
        return `it cannot continue on ${event.type}: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
  }
  return undefined;
}
