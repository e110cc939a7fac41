import * as z from 'zod';
import { chartsOption, checkOptions, storeOption } from '../core/options.ts';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { childMachines } from './actor-kinds.ts';
import { pureInitial, pureRestore, pureTransition, transitionOrFail } from './pure.ts';
import { MIGRATION_EVENT, type MigrationEvent } from './migrate.ts';
import { MessageLedger } from './verify-messages.ts';
import { isDeepStrictEqual } from 'node:util';
import type { ChartDefinition, PersistedSnapshot } from '../core/chart.ts';
import { stateLabel } from '../core/state.ts';
import type { Store, TransitionRow } from '../store/types.ts';
import { GENESIS_HASH, hashTransition, sha256 } from './row.ts';

export type { VerifyCheckpoint, VerifyProblem, VerifyReport } from './verify-report.ts';
import type { VerifyCheckpoint, VerifyProblem, VerifyReport } from './verify-report.ts';

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The persisted form of a snapshot, normalised through JSON. */
function persisted(chart: ChartDefinition, snapshot: AnyMachineSnapshot): unknown {
  return JSON.parse(JSON.stringify(chart.machine.getPersistedSnapshot(snapshot))) as unknown;
}

/** A problem of `actorId`, at row `seq` when it is in a row. */
function problem(
  actorId: string,
  kind: VerifyProblem['kind'],
  seq: number | undefined,
  detail: string,
): VerifyProblem {
  return seq === undefined ? { actorId, kind, detail } : { actorId, kind, seq, detail };
}

/**
 * Checks every actor's audit trail: the hash chain (an edited, inserted or
 * deleted row breaks it), gapless sequence and from/to continuity, and a replay
 * of the logged events through the chart's pure `transition()` that must land on
 * the stored snapshot. Names every actor that differs and its first bad row.
 *
 * @example
 * const report = await verify(store, { charts: Object.values(catalog) });
 * if (!report.ok) console.error(report.problems);
 */
export async function verify(
  store: Store,
  options: { charts: Iterable<ChartDefinition> },
): Promise<VerifyReport> {
  checkOptions(
    'verify',
    { store, options },
    z.object({ store: storeOption, options: z.object({ charts: chartsOption }) }),
  );
  const charts = new Map<string, Map<number, ChartDefinition>>();
  const register = (chart: ChartDefinition) => {
    const versions = charts.get(chart.machine.id) ?? new Map<number, ChartDefinition>();
    charts.set(chart.machine.id, versions);
    if (!versions.has(chart.version)) versions.set(chart.version, chart);
  };
  for (const c of options.charts) {
    register(c);
    // Child machines a chart spawns are verified with it.
    for (const child of childMachines(c.machine)) {
      register({ ...c, machine: child, version: 1, migrations: {} });
    }
  }
  const report: VerifyReport = {
    ok: true,
    actorsChecked: 0,
    rowsChecked: 0,
    problems: [],
    checkpoints: [],
  };
  const ledger = new MessageLedger();
  const ids = await store.actorIdsWithHistory();
  for (const actorId of ids) {
    report.actorsChecked++;
    const rows = await store.history(actorId);
    report.rowsChecked += rows.length;
    const problem = await verifyActor(store, charts, actorId, rows, ledger, report.checkpoints);
    if (problem) report.problems.push(problem);
  }
  report.problems.push(...ledger.problems());
  report.ok = report.problems.length === 0;
  return report;
}

async function verifyActor(
  store: Store,
  charts: Map<string, Map<number, ChartDefinition>>,
  actorId: string,
  rows: TransitionRow[],
  ledger: MessageLedger,
  checkpoints: VerifyCheckpoint[],
): Promise<VerifyProblem | undefined> {
  // Chain and sequence first: they do not need the chart.
  let prevHash = GENESIS_HASH;
  let prevTo: string | null = null;
  for (const [i, row] of rows.entries()) {
    const { hash, ...rest } = row;
    if (row.seq !== i + 1) return problem(actorId, 'sequence', row.seq, `expected seq ${i + 1}`);
    if (row.prevHash !== prevHash)
      return problem(actorId, 'chain', row.seq, 'prev_hash does not match the previous row');
    if (hashTransition(rest) !== hash)
      return problem(actorId, 'chain', row.seq, 'row content does not match its hash');
    if (i > 0 && row.fromState !== prevTo)
      return problem(actorId, 'sequence', row.seq, 'from_state differs from the previous to_state');
    prevHash = hash;
    prevTo = row.toState;
  }

  const actor = await store.loadActor(actorId);
  if (!actor)
    return problem(actorId, 'missing_actor', undefined, 'transition rows without an actor row');
  if (actor.version !== rows.length) {
    return problem(
      actorId,
      'version',
      undefined,
      `actor version ${actor.version} but ${rows.length} rows`,
    );
  }
  if (actor.headHash !== prevHash)
    return problem(actorId, 'chain', rows.length, 'actor head hash differs from the last row');
  const head = rows.at(-1);
  if (head?.snapshotHash != null && sha256(actor.snapshot) !== head.snapshotHash) {
    return problem(
      actorId,
      'snapshot',
      rows.length,
      'stored snapshot differs from the one the last row recorded',
    );
  }
  const versions = charts.get(actor.machineId);
  if (!versions)
    return problem(
      actorId,
      'unknown_machine',
      undefined,
      `machine "${actor.machineId}" is not registered`,
    );
  const last = versions.get(actor.chartVersion);
  if (!last) {
    return problem(
      actorId,
      'version',
      undefined,
      `stored at chart version ${actor.chartVersion}; registered: ${[...versions.keys()].join(', ')}`,
    );
  }

  // Segments: the rows between migrations, each replayed with the chart version
  // that wrote it when that version is registered; otherwise replay restarts
  // from the next migration row's recorded snapshot (a checkpoint).
  const firstMigration = rows.find((r) => r.eventType === MIGRATION_EVENT);
  const firstVersion =
    rows[0]?.chartVersion ??
    (parseJson(firstMigration?.event ?? '') as { from?: number } | undefined)?.from ??
    actor.chartVersion;
  let segment = firstVersion;
  let chart = versions.get(segment);
  let snapshot: AnyMachineSnapshot | undefined;
  const parentId = MessageLedger.parentOf(rows);
  for (const row of rows) {
    ledger.row(actorId, row);
    const previous = snapshot;
    const event = parseJson(row.event) as (EventObject & { input?: unknown }) | undefined;
    if (!event || typeof event.type !== 'string')
      return problem(actorId, 'replay', row.seq, 'event is not valid JSON');
    if (event.type === MIGRATION_EVENT) {
      const migrated = checkMigration(actorId, row, event, segment, versions, chart, snapshot);
      if ('problem' in migrated) return migrated.problem;
      if (migrated.checkpoint) checkpoints.push(migrated.checkpoint);
      segment = migrated.to;
      chart = migrated.chart;
      snapshot = migrated.snapshot;
    } else if (row.chartVersion !== null && row.chartVersion !== segment) {
      return problem(
        actorId,
        'version',
        row.seq,
        `row written at chart version ${row.chartVersion} in a segment of version ${segment}, with no migration between`,
      );
    } else if (!chart) {
      // A version not registered here: only its chain was checked, and what it sent
      // cannot be replayed.
      ledger.unreplayed(actorId, row.seq);
      continue;
    } else {
      const machine = chart.machine;
      try {
        if (!snapshot || (event.type === 'xstate.init' && snapshot.status !== 'active')) {
          if (event.type !== 'xstate.init')
            return problem(actorId, 'replay', row.seq, 'first row is not the creation');
          const [initial, actions] = pureInitial(machine, event.input);
          snapshot = initial;
          ledger.replayed(actorId, parentId, machine.id, row, undefined, initial, actions);
        } else {
          // A message or timer whose transition threw failed the actor when it ran.
          const current = snapshot;
          const { next, actions } = transitionOrFail(
            current,
            () => (parseJson(row.metadata ?? '{}') as { source?: unknown } | undefined)?.source,
            () => pureTransition(machine, current, event),
          );
          snapshot = next;
          ledger.replayed(actorId, parentId, machine.id, row, previous, next, actions);
        }
      } catch (error) {
        return problem(
          actorId,
          'replay',
          row.seq,
          `replay threw: ${error instanceof Error ? error.name : 'error'}`,
        );
      }
    }
    if (!snapshot) continue;
    const label = stateLabel(snapshot.value);
    if (label !== row.toState) {
      return problem(
        actorId,
        'replay',
        row.seq,
        `replay reached "${label}", row says "${row.toState}"`,
      );
    }
  }
  if (segment !== actor.chartVersion) {
    return problem(
      actorId,
      'version',
      undefined,
      `the log ends at chart version ${segment}, the actor row says ${actor.chartVersion}`,
    );
  }
  const stored = parseJson(actor.snapshot);
  if (stored === undefined)
    return problem(actorId, 'snapshot', undefined, 'stored snapshot is not valid JSON');
  if (!snapshot || !isDeepStrictEqual(persisted(last, snapshot), stored)) {
    return problem(
      actorId,
      'snapshot',
      rows.length,
      'replayed snapshot differs from the stored snapshot',
    );
  }
  return undefined;
}

/**
 * A migration row: its recorded snapshot must match its hash and restore under
 * the target version; when the segment before it was replayed, running the
 * chart's migrations on the replayed snapshot must give the recorded one.
 * Otherwise replay restarts from the recorded snapshot, reported as a checkpoint.
 */
function checkMigration(
  actorId: string,
  row: TransitionRow,
  event: EventObject,
  segment: number,
  versions: Map<number, ChartDefinition>,
  chart: ChartDefinition | undefined,
  replayed: AnyMachineSnapshot | undefined,
):
  | { problem: VerifyProblem }
  | {
      to: number;
      chart: ChartDefinition | undefined;
      snapshot: AnyMachineSnapshot | undefined;
      checkpoint: VerifyCheckpoint | undefined;
    } {
  const fail = (kind: VerifyProblem['kind'], detail: string) => ({
    problem: { actorId, kind, seq: row.seq, detail },
  });
  const m = event as Partial<MigrationEvent>;
  if (typeof m.from !== 'number' || typeof m.to !== 'number' || m.to <= m.from) {
    return fail('replay', 'migration row without its versions');
  }
  if (m.from !== segment) {
    return fail('version', `migration from version ${m.from} in a segment of version ${segment}`);
  }
  if (row.chartVersion !== m.to) {
    return fail(
      'version',
      `migration to version ${m.to} recorded at chart version ${row.chartVersion}`,
    );
  }
  if (sha256(JSON.stringify(m.snapshot)) !== row.snapshotHash) {
    return fail('snapshot', 'the migrated snapshot differs from the hash its row recorded');
  }
  const target = versions.get(m.to);
  let checkpoint: VerifyCheckpoint | undefined;
  if (target && chart && replayed) {
    let state: unknown = persisted(chart, replayed);
    try {
      for (let v = m.from; v < m.to; v++) {
        const migrate = target.migrations[v];
        if (!migrate) return fail('version', `chart version ${m.to} has no migration from ${v}`);
        state = JSON.parse(JSON.stringify(migrate(state as PersistedSnapshot))) as unknown;
      }
    } catch (error) {
      return fail('replay', `migration threw: ${error instanceof Error ? error.name : 'error'}`);
    }
    if (!isDeepStrictEqual(state, m.snapshot)) {
      return fail(
        'replay',
        `migrating the replayed snapshot from ${m.from} to ${m.to} does not give the recorded one`,
      );
    }
  } else {
    checkpoint = {
      actorId,
      seq: row.seq,
      from: m.from,
      to: m.to,
      reason: !target
        ? `chart version ${m.to} is not registered`
        : `chart version ${m.from} is not registered: replay restarts from the migrated snapshot`,
    };
  }
  if (!target) return { to: m.to, chart: undefined, snapshot: undefined, checkpoint };
  try {
    const snapshot = pureRestore(target.machine, m.snapshot);
    return { to: m.to, chart: target, snapshot, checkpoint };
  } catch (error) {
    return fail(
      'replay',
      `the migrated snapshot does not restore: ${error instanceof Error ? error.name : 'error'}`,
    );
  }
}
