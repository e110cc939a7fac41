/**
 * Before deploying a new chart version: which stored actors would it strand?
 * A dry run over every stored actor of the charts given, writing nothing.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { ChartDefinition } from '../core/chart.ts';
import { AgentchartsError, SnapshotVersionError } from '../core/errors.ts';
import { EXPECTED, isStore, requireArg, requireObject } from '../core/options.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorRow, Store } from '../store/types.ts';
import { decodeActor, decodeActorRow } from './codec.ts';
import type { Ledger } from './ledger.ts';

/** Why an actor would be stranded by the new version. */
export type StrandKind =
  /** Stored by a version newer than the one checked. */
  | 'newer_version'
  /** No migration from the stored version (and the snapshot does not fit as is). */
  | 'no_migration'
  /** A migration threw on this actor's snapshot. */
  | 'migration_threw'
  /** The migrated snapshot names a state the new chart does not have, or does not restore. */
  | 'unrestorable'
  /** A pending timer whose delayed transition the new state no longer has. */
  | 'timer_lost'
  /** Events the actor's state accepted that the new state does not. */
  | 'events_lost';

export interface StrandedActor {
  actorId: string;
  machineId: string;
  state: string;
  storedVersion: number;
  version: number;
  kind: StrandKind;
  detail: string;
  /** For `unrestorable`: the state of the migrated snapshot the new chart lacks. */
  missingState?: string | undefined;
}

export interface CheckDeployOptions {
  /** The chart versions to deploy. */
  charts: Iterable<ChartDefinition>;
  /**
   * The versions running now (each actor's stored version): with them, events an
   * actor was waiting for and loses are found. Without, that check is skipped.
   */
  current?: Iterable<ChartDefinition> | undefined;
  /** Called after each page of actors (for a progress line). */
  onProgress?: ((checked: number) => void) | undefined;
  /** Actors read per page (default 500). */
  pageSize?: number | undefined;
}

export interface CheckDeployReport {
  ok: boolean;
  /** Actors of the charts given. */
  checked: number;
  /** Of those, stored at an older version (they would migrate on load). */
  migrating: number;
  stranded: StrandedActor[];
}

/**
 * Dry-runs new chart versions against every stored actor of their machines:
 * decodes and migrates each snapshot in memory, checks it restores, that its
 * pending timers still have their delayed transitions, and (given the current
 * versions) that its state still accepts the events it accepted. Writes nothing.
 *
 * @example
 * const report = await checkDeploy(store, { charts: [expenseV2], current: [expenseV1] });
 * if (!report.ok) console.table(report.stranded);
 */
export async function checkDeploy(
  store: Store,
  options: CheckDeployOptions,
): Promise<CheckDeployReport> {
  requireArg('checkDeploy', 'store', isStore(store), EXPECTED.store);
  requireObject('checkDeploy', 'options', options);
  const next = new Map<string, ChartDefinition>();
  for (const chart of options.charts) next.set(chart.machine.id, chart);
  const current = new Map<string, ChartDefinition>();
  for (const chart of options.current ?? [])
    current.set(`${chart.machine.id}@${chart.version}`, chart);
  const report: CheckDeployReport = { ok: true, checked: 0, migrating: 0, stranded: [] };
  const limit = options.pageSize ?? 500;
  for (const [machineId, chart] of next) {
    let afterId: string | undefined;
    for (;;) {
      const page = await store.listActors({ machineId, afterId, limit });
      for (const row of page) {
        report.checked++;
        if (row.chartVersion < chart.version) report.migrating++;
        const old = current.get(`${machineId}@${row.chartVersion}`);
        report.stranded.push(...(await checkActor(store, chart, old, row)));
      }
      if (page.length > 0) options.onProgress?.(report.checked);
      if (page.length < limit) break;
      afterId = page.at(-1)?.id;
    }
  }
  report.ok = report.stranded.length === 0;
  return report;
}

async function checkActor(
  store: Store,
  chart: ChartDefinition,
  old: ChartDefinition | undefined,
  row: ActorRow,
): Promise<StrandedActor[]> {
  const strand = (kind: StrandKind, detail: string, missingState?: string): StrandedActor => ({
    actorId: row.id,
    machineId: row.machineId,
    state: row.state,
    storedVersion: row.chartVersion,
    version: chart.version,
    kind,
    detail,
    ...(missingState !== undefined ? { missingState } : {}),
  });
  if (row.chartVersion > chart.version) {
    return [strand('newer_version', `stored by version ${row.chartVersion}`)];
  }
  let snapshot: AnyMachineSnapshot;
  let ledger: Ledger | undefined;
  try {
    ({ snapshot, ledger } = decodeActor(chart.machine, chart, row));
  } catch (error) {
    return [strand(...decodeFailure(error, row.chartVersion, chart))];
  }
  if (row.status !== 'active') return [];
  const found: StrandedActor[] = [];
  const delayed = new Set(acceptedEvents(snapshot, true));
  // Its pending timers are in its row; an actor written before they were has rows of them.
  const timers = ledger?.timers.map((t) => ({ timerId: t.key })) ?? (await store.timers(row.id));
  for (const timer of timers) {
    if (timer.timerId.startsWith('xstate.after.') && !delayed.has(timer.timerId)) {
      found.push(
        strand(
          'timer_lost',
          `pending timer ${timer.timerId} has no delayed transition in "${stateLabel(snapshot.value)}"`,
        ),
      );
    }
  }
  if (old) {
    try {
      const before = decodeActorRow(old.machine, old, row);
      const now = new Set(acceptedEvents(snapshot, false));
      const lost = acceptedEvents(before, false).filter((type) => !now.has(type));
      if (lost.length > 0) {
        found.push(
          strand(
            'events_lost',
            `"${stateLabel(snapshot.value)}" no longer accepts ${lost.join(', ')}`,
          ),
        );
      }
    } catch {
      // The current version cannot read its own row: `verify` reports that.
    }
  }
  return found;
}

/** Event types some active state node has a transition for (`after` ones only, or none of them). */
function acceptedEvents(snapshot: AnyMachineSnapshot, delayedOnly: boolean): string[] {
  const types = new Set<string>();
  const nodes = (snapshot as unknown as { _nodes: Array<{ ownEvents: string[] }> })._nodes;
  for (const node of nodes) {
    for (const type of node.ownEvents) {
      const delayed = type.startsWith('xstate.after.');
      if (delayed === delayedOnly && (delayed || !type.startsWith('xstate.'))) types.add(type);
    }
  }
  return [...types].sort();
}

function decodeFailure(
  error: unknown,
  from: number,
  chart: ChartDefinition<AnyStateMachine>,
): [StrandKind, string, (string | undefined)?] {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof AgentchartsError)) return ['migration_threw', message];
  if (/no migration from version/.test(message)) {
    return ['no_migration', `no migration from version ${from} to ${chart.version}`];
  }
  const missing = error instanceof SnapshotVersionError ? error.missingState : undefined;
  return ['unrestorable', message, missing];
}
