import * as z from 'zod';
import { chartsOption, checkOptions, storeOption } from '../core/options.ts';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { childMachines } from './actor-kinds.ts';
import { pureInitial, pureTransition, transitionOrFail } from './pure.ts';
import { MessageLedger } from './verify-messages.ts';
import { isDeepStrictEqual } from 'node:util';
import type { ChartDefinition } from '../core/chart.ts';
import { stateLabel } from '../core/state.ts';
import type { Store, TransitionRow } from '../store/types.ts';
import { GENESIS_HASH, hashTransition, sha256 } from './row.ts';

export type { VerifyProblem, VerifyReport } from './verify-report.ts';
import type { VerifyProblem, VerifyReport } from './verify-report.ts';

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
  const charts = new Map<string, ChartDefinition>();
  for (const c of options.charts) {
    charts.set(c.machine.id, c);
    // Child machines a chart spawns are verified with it.
    for (const child of childMachines(c.machine)) {
      if (!charts.has(child.id))
        charts.set(child.id, { ...c, machine: child, version: 1, migrations: {} });
    }
  }
  const report: VerifyReport = { ok: true, actorsChecked: 0, rowsChecked: 0, problems: [] };
  const ledger = new MessageLedger();
  const ids = await store.actorIdsWithHistory();
  for (const actorId of ids) {
    report.actorsChecked++;
    const rows = await store.history(actorId);
    report.rowsChecked += rows.length;
    const problem = await verifyActor(store, charts, actorId, rows, ledger);
    if (problem) report.problems.push(problem);
  }
  report.problems.push(...ledger.problems());
  report.ok = report.problems.length === 0;
  return report;
}

async function verifyActor(
  store: Store,
  charts: Map<string, ChartDefinition>,
  actorId: string,
  rows: TransitionRow[],
  ledger: MessageLedger,
): Promise<VerifyProblem | undefined> {
  // Chain and sequence first: they do not need the chart.
  let prevHash = GENESIS_HASH;
  let prevTo: string | null = null;
  for (const [i, row] of rows.entries()) {
    const { hash, ...rest } = row;
    if (row.seq !== i + 1)
      return { actorId, kind: 'sequence', seq: row.seq, detail: `expected seq ${i + 1}` };
    if (row.prevHash !== prevHash)
      return {
        actorId,
        kind: 'chain',
        seq: row.seq,
        detail: 'prev_hash does not match the previous row',
      };
    if (hashTransition(rest) !== hash)
      return {
        actorId,
        kind: 'chain',
        seq: row.seq,
        detail: 'row content does not match its hash',
      };
    if (i > 0 && row.fromState !== prevTo)
      return {
        actorId,
        kind: 'sequence',
        seq: row.seq,
        detail: 'from_state differs from the previous to_state',
      };
    prevHash = hash;
    prevTo = row.toState;
  }

  const actor = await store.loadActor(actorId);
  if (!actor)
    return { actorId, kind: 'missing_actor', detail: 'transition rows without an actor row' };
  if (actor.version !== rows.length) {
    return {
      actorId,
      kind: 'version',
      detail: `actor version ${actor.version} but ${rows.length} rows`,
    };
  }
  if (actor.headHash !== prevHash)
    return {
      actorId,
      kind: 'chain',
      seq: rows.length,
      detail: 'actor head hash differs from the last row',
    };
  const head = rows.at(-1);
  if (head?.snapshotHash != null && sha256(actor.snapshot) !== head.snapshotHash) {
    return {
      actorId,
      kind: 'snapshot',
      seq: rows.length,
      detail: 'stored snapshot differs from the one the last row recorded',
    };
  }
  const chart = charts.get(actor.machineId);
  if (!chart)
    return {
      actorId,
      kind: 'unknown_machine',
      detail: `machine "${actor.machineId}" is not registered`,
    };
  if (actor.chartVersion !== chart.version) {
    return {
      actorId,
      kind: 'version',
      detail: `stored at chart version ${actor.chartVersion}, chart is at ${chart.version}; replay needs the same version`,
    };
  }

  let snapshot: AnyMachineSnapshot | undefined;
  const parentId = MessageLedger.parentOf(rows);
  for (const row of rows) {
    ledger.row(actorId, row);
    const previous = snapshot;
    const event = parseJson(row.event) as (EventObject & { input?: unknown }) | undefined;
    if (!event || typeof event.type !== 'string')
      return { actorId, kind: 'replay', seq: row.seq, detail: 'event is not valid JSON' };
    try {
      if (!snapshot || (event.type === 'xstate.init' && snapshot.status !== 'active')) {
        if (event.type !== 'xstate.init')
          return { actorId, kind: 'replay', seq: row.seq, detail: 'first row is not the creation' };
        const [initial, actions] = pureInitial(chart.machine, event.input);
        snapshot = initial;
        ledger.replayed(actorId, parentId, chart.machine.id, row, undefined, initial, actions);
      } else {
        // A message or timer whose transition threw failed the actor when it ran.
        const current = snapshot;
        const { next, actions } = transitionOrFail(
          current,
          () => (parseJson(row.metadata ?? '{}') as { source?: unknown } | undefined)?.source,
          () => pureTransition(chart.machine, current, event),
        );
        snapshot = next;
        ledger.replayed(actorId, parentId, chart.machine.id, row, previous, next, actions);
      }
    } catch (error) {
      return {
        actorId,
        kind: 'replay',
        seq: row.seq,
        detail: `replay threw: ${error instanceof Error ? error.name : 'error'}`,
      };
    }
    const label = stateLabel(snapshot.value);
    if (label !== row.toState) {
      return {
        actorId,
        kind: 'replay',
        seq: row.seq,
        detail: `replay reached "${label}", row says "${row.toState}"`,
      };
    }
  }
  const stored = parseJson(actor.snapshot);
  if (stored === undefined)
    return { actorId, kind: 'snapshot', detail: 'stored snapshot is not valid JSON' };
  if (!snapshot || !isDeepStrictEqual(persisted(chart, snapshot), stored)) {
    return {
      actorId,
      kind: 'snapshot',
      seq: rows.length,
      detail: 'replayed snapshot differs from the stored snapshot',
    };
  }
  return undefined;
}
