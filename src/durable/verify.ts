import * as z from 'zod';
import { chartsOption, checkOptions, storeOption } from '../core/options.ts';
import type { AnyActorLogic, AnyMachineSnapshot, EventObject } from 'xstate';
import { actorKind, childMachines } from './actor-kinds.ts';
import { applyAtomicOrder, ATOMIC_ORDER_KEY, recordedOrder } from './node-order.ts';
import { pureRestore } from './pure.ts';
import { MIGRATION_EVENT, type MigrationEvent } from './migrate.ts';
import { MessageLedger } from './verify-messages.ts';
import { isDeepStrictEqual } from 'node:util';
import type { ChartDefinition, PersistedSnapshot } from '../core/chart.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorLog, Store, TransitionRow } from '../store/types.ts';
import { encodeSnapshot } from './codec.ts';
import {
  EMPTY_LEDGER,
  LEDGER_KEY,
  TO_STOPPED,
  ledgerJson,
  ledgerOf,
  nextDue,
  type Ledger,
} from './ledger.ts';
import { parentOfLog, parseJson, replayRow, START, type Replayed } from './replay.ts';
import { GENESIS_HASH, hashTransition, sha256 } from './row.ts';

export type {
  VerifyCheckpoint,
  VerifyProblem,
  VerifyReport,
  VerifyUnverifiable,
} from './verify-report.ts';
import type {
  VerifyCheckpoint,
  VerifyProblem,
  VerifyReport,
  VerifyUnverifiable,
} from './verify-report.ts';

type Versions = Map<string, Map<number, ChartDefinition>>;

/** The persisted form of a snapshot with its ledger, normalised through JSON. */
function persisted(chart: ChartDefinition, snapshot: AnyMachineSnapshot, ledger: Ledger): unknown {
  return JSON.parse(encodeSnapshot(chart.machine, snapshot, ledger)) as unknown;
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
 * of the logged events — with the send path's own step function, timers, invoke
 * results and messages included — that must land on the stored row: its
 * snapshot, what it has pending, its state, status, version, chart version and
 * parent, and its timer rows. Each actor is read in one consistent snapshot of
 * the store, so a live store gives no false problem. An actor stored at a chart
 * version not registered here is reported as not verifiable, not as a problem.
 * Names every actor that differs and its first bad row.
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
  const charts: Versions = new Map();
  const register = (chart: ChartDefinition) => {
    const versions = charts.get(chart.machine.id) ?? new Map<number, ChartDefinition>();
    charts.set(chart.machine.id, versions);
    if (!versions.has(chart.version)) versions.set(chart.version, chart);
  };
  for (const c of options.charts) {
    register(c);
    // Child machines a chart spawns are verified with it, at its version (the
    // version the runtime creates them at).
    for (const child of childMachines(c.machine)) {
      register({ ...c, machine: child, migrations: {} });
    }
  }
  const report: VerifyReport = {
    ok: true,
    actorsChecked: 0,
    rowsChecked: 0,
    problems: [],
    checkpoints: [],
    notVerifiable: [],
  };
  const ledger = new MessageLedger();
  const ids = await store.actorIdsWithHistory();
  for (const actorId of ids) {
    report.actorsChecked++;
    const log = await store.readActorLog(actorId);
    const rows = log?.rows ?? (await store.history(actorId));
    report.rowsChecked += rows.length;
    const found = verifyActor(charts, actorId, log, rows, ledger, report);
    if (found) report.problems.push(found);
  }
  report.problems.push(...ledger.problems());
  report.ok = report.problems.length === 0;
  return report;
}

/** The chain and sequence of an actor's rows: they need no chart. */
function checkChain(actorId: string, rows: readonly TransitionRow[]): VerifyProblem | string {
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
  return prevHash;
}

function verifyActor(
  charts: Versions,
  actorId: string,
  log: ActorLog | undefined,
  rows: TransitionRow[],
  messages: MessageLedger,
  report: Pick<VerifyReport, 'checkpoints' | 'notVerifiable'>,
): VerifyProblem | undefined {
  const chain = checkChain(actorId, rows);
  if (typeof chain !== 'string') return chain;
  if (!log)
    return problem(actorId, 'missing_actor', undefined, 'transition rows without an actor row');
  const actor = log.actor;
  if (actor.version !== rows.length) {
    return problem(
      actorId,
      'version',
      undefined,
      `actor version ${actor.version} but ${rows.length} rows`,
    );
  }
  if (actor.headHash !== chain)
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
  if (head && head.toState !== actor.state) {
    return problem(
      actorId,
      'state',
      rows.length,
      `the actor row says state "${actor.state}", its last row "${head.toState}"`,
    );
  }
  const parentId = parentOfLog(rows);
  if (parentId !== log.parentId) {
    return problem(
      actorId,
      'parent',
      undefined,
      `the actor row names parent ${log.parentId ?? 'none'}, its creation row ${parentId ?? 'none'}`,
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
    const unverifiable: VerifyUnverifiable = {
      actorId,
      machineId: actor.machineId,
      chartVersion: actor.chartVersion,
      reason: `chart version ${actor.chartVersion} not registered (registered: ${[...versions.keys()].join(', ')})`,
    };
    report.notVerifiable.push(unverifiable);
    for (const row of rows) messages.unreplayed(actorId, row.seq);
    return undefined;
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
  let state: Replayed = START;
  for (const row of rows) {
    messages.row(actorId, row);
    const event = parseJson(row.event) as (EventObject & { input?: unknown }) | undefined;
    if (!event || typeof event.type !== 'string')
      return problem(actorId, 'replay', row.seq, 'event is not valid JSON');
    if (event.type === MIGRATION_EVENT) {
      const migrated = checkMigration(actorId, row, event, segment, versions, chart, state);
      if ('problem' in migrated) return migrated.problem;
      if (migrated.checkpoint) report.checkpoints.push(migrated.checkpoint);
      segment = migrated.to;
      chart = migrated.chart;
      state = migrated.state;
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
      messages.unreplayed(actorId, row.seq);
      continue;
    } else {
      if (state.snapshot === undefined && event.type !== 'xstate.init') {
        return problem(actorId, 'replay', row.seq, 'first row is not the creation');
      }
      const step = replayRow(chart.machine, actorId, parentId, state, row, event);
      if (!step.ok) return problem(actorId, 'replay', row.seq, step.detail);
      state = { snapshot: step.snapshot, ledger: step.ledger };
      messages.sent(actorId, row.seq, step.messages, step.legacyMessages);
    }
    if (!state.snapshot) continue;
    const label = stateLabel(state.snapshot.value);
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
  return checkStored(actorId, log, last, state, rows.length);
}

/** The stored row against the replay: snapshot, ledger, state, status and timer rows. */
function checkStored(
  actorId: string,
  log: ActorLog,
  chart: ChartDefinition,
  state: Replayed,
  seq: number,
): VerifyProblem | undefined {
  const { actor } = log;
  const stored = parseJson(actor.snapshot) as Record<string, unknown> | undefined;
  if (stored === undefined)
    return problem(actorId, 'snapshot', undefined, 'stored snapshot is not valid JSON');
  const snapshot = state.snapshot;
  if (!snapshot) return problem(actorId, 'snapshot', seq, 'nothing to compare the snapshot with');
  if (actor.state !== stateLabel(snapshot.value)) {
    return problem(
      actorId,
      'state',
      undefined,
      `the actor row says state "${actor.state}", the replay "${stateLabel(snapshot.value)}"`,
    );
  }
  if (actor.status !== snapshot.status) {
    return problem(
      actorId,
      'status',
      undefined,
      `the actor row says status "${actor.status}", the replay "${snapshot.status}"`,
    );
  }
  // Written before ledgers: only XState's part can be compared. A ledger is compared
  // as this build writes it (a timer stored in its long form where the short one
  // would do is the same timer; the stored bytes are held by the head's hash).
  const storedLedger = ledgerOf(stored);
  const legacy = storedLedger === undefined;
  // The order of its active atomic states, when recorded, is compared as stored.
  const order = recordedOrder(stored, LEDGER_KEY);
  const actual = legacy
    ? stored
    : {
        ...stored,
        [LEDGER_KEY]:
          order === undefined
            ? ledgerJson(storedLedger)
            : { ...(ledgerJson(storedLedger) as object), [ATOMIC_ORDER_KEY]: order },
      };
  let replayed = state.ledger;
  let expected = persisted(chart, snapshot, replayed) as Record<string, unknown>;
  if (legacy) delete expected[LEDGER_KEY];
  if (!legacy && !isDeepStrictEqual(expected, actual)) {
    const before = asEarlierBuildsWrote(replayed, storedLedger, snapshot);
    if (before !== replayed) {
      replayed = before;
      expected = persisted(chart, snapshot, replayed) as Record<string, unknown>;
    }
  }
  if (!isDeepStrictEqual(expected, actual)) {
    const pending = !isDeepStrictEqual(expected[LEDGER_KEY], actual[LEDGER_KEY]);
    return problem(
      actorId,
      'snapshot',
      seq,
      pending
        ? 'what the actor has pending (timers, invokes) differs from the replay'
        : 'replayed snapshot differs from the stored snapshot',
    );
  }
  if (!legacy && log.nextDueAt !== nextDue(replayed)) {
    // What finds the actor's timers due: a wrong one fires them late, or never.
    return problem(
      actorId,
      'timers',
      undefined,
      `the actor row says the next timer is due at ${String(log.nextDueAt)}, its pending timers at ${String(nextDue(replayed))}`,
    );
  }
  return undefined;
}

/**
 * The replayed ledger as the builds before this one wrote it, where an honest log
 * of theirs would otherwise read as a false difference. Returns `replayed` itself
 * when it holds nothing of either kind that `stored` lacks:
 *
 * - a delayed `sendTo` whose child was stopped (or never started): 0.1.0 dropped
 *   it where XState keeps it, to fire to no one; it changes nothing when it fires
 *   but which later send its id cancels;
 * - a child machine that finished, among the `settled` ids: earlier builds did not
 *   record it, and `system.get` kept finding it;
 * - the life of a child spawned again under its id (Ledger.life): earlier builds
 *   did not record it;
 * - when a timer was armed (PendingTimer.at), and its rank in its tree's arm order
 *   (PendingTimer.rank): earlier builds did not record them;
 * - a delayed `sendTo` a child's stopped life still held when it was spawned again
 *   under its id (PendingTimer.sentIn): earlier builds dropped it, where XState
 *   still delivers it.
 */
function asEarlierBuildsWrote(
  replayed: Ledger,
  stored: Ledger,
  snapshot: AnyMachineSnapshot,
): Ledger {
  const keys = new Map(stored.timers.map((t) => [t.key, t]));
  let unarmed = false;
  const timers = replayed.timers
    .filter((t) => (t.to !== TO_STOPPED && t.sentIn === undefined) || keys.has(t.key))
    .map((t) => {
      // When it was armed, and its rank: earlier builds did not record them.
      const kept = keys.get(t.key);
      const at = t.at !== undefined && kept?.at === undefined;
      const rank = t.rank !== undefined && kept?.rank === undefined;
      if (!at && !rank) return t;
      unarmed = true;
      const { at: _at, rank: _rank, ...rest } = t;
      return {
        ...rest,
        ...(at ? {} : { at: t.at }),
        ...(rank ? {} : { rank: t.rank }),
      };
    });
  const children = snapshot.children as Record<string, { logic?: unknown } | undefined>;
  const settled = replayed.settled?.filter(
    (id) =>
      stored.settled?.includes(id) === true ||
      children[id]?.logic === undefined ||
      actorKind(children[id].logic as AnyActorLogic) !== 'machine',
  );
  // Its life (Ledger.life): earlier builds did not record that a child started over.
  const life = stored.life === undefined ? undefined : replayed.life;
  if (
    !unarmed &&
    timers.length === replayed.timers.length &&
    settled?.length === replayed.settled?.length &&
    life === replayed.life
  ) {
    return replayed;
  }
  const { settled: _all, life: _life, ...unlived } = replayed;
  const rest = life === undefined ? unlived : { ...unlived, life };
  return settled !== undefined && settled.length > 0
    ? { ...rest, timers, settled }
    : { ...rest, timers };
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
  replayed: Replayed,
):
  | { problem: VerifyProblem }
  | {
      to: number;
      chart: ChartDefinition | undefined;
      state: Replayed;
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
  const recorded = (m.snapshot ?? {}) as Record<string, unknown>;
  const { [LEDGER_KEY]: _pending, ...xstatePart } = recorded;
  const ledger = ledgerOf(recorded) ?? EMPTY_LEDGER;
  const target = versions.get(m.to);
  let checkpoint: VerifyCheckpoint | undefined;
  if (target && chart && replayed.snapshot) {
    let migrated: unknown = JSON.parse(
      JSON.stringify(chart.machine.getPersistedSnapshot(replayed.snapshot)),
    );
    try {
      for (let v = m.from; v < m.to; v++) {
        const migrate = target.migrations[v];
        if (!migrate) return fail('version', `chart version ${m.to} has no migration from ${v}`);
        migrated = JSON.parse(JSON.stringify(migrate(migrated as PersistedSnapshot))) as unknown;
      }
    } catch (error) {
      return fail('replay', `migration threw: ${error instanceof Error ? error.name : 'error'}`);
    }
    if (!isDeepStrictEqual(migrated, xstatePart)) {
      return fail(
        'replay',
        `migrating the replayed snapshot from ${m.from} to ${m.to} does not give the recorded one`,
      );
    }
    if (
      _pending !== undefined &&
      !isDeepStrictEqual(
        ledgerJson(asEarlierBuildsWrote(replayed.ledger, ledger, replayed.snapshot)),
        ledgerJson(ledger),
      )
    ) {
      return fail('replay', 'the migration row changed what the actor has pending');
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
  if (!target)
    return { to: m.to, chart: undefined, state: { snapshot: undefined, ledger }, checkpoint };
  try {
    const snapshot = pureRestore(target.machine, xstatePart);
    const order = recordedOrder(recorded, LEDGER_KEY);
    if (order !== undefined) applyAtomicOrder(snapshot, order);
    return { to: m.to, chart: target, state: { snapshot, ledger }, checkpoint };
  } catch (error) {
    return fail(
      'replay',
      `the migrated snapshot does not restore: ${error instanceof Error ? error.name : 'error'}`,
    );
  }
}
