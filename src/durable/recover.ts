import * as z from 'zod';
import { checkOptions, storeOption } from '../core/options.ts';
import { AgentchartsError } from '../core/errors.ts';
import type { RecoveryDecision, RecoverySnapshot } from '../core/recovery.ts';
import type { ActorRow, StepRow, Store } from '../store/types.ts';
import { adoptActorRow, getRuntime } from './open.ts';
import type { DurableRuntime, RuntimeOptions } from './runtime.ts';
import type { InvokeRecovery } from './invoke.ts';
import { settledMeanwhile, settleStep, type ReconcileHook } from './steps.ts';
import { compareRanks, ledgerOf } from './ledger.ts';
import type { TimerWake } from './timers.ts';
import {
  hasPendingWork,
  isAwaitedInvoke,
  parseStored,
  storedSnapshot,
  type Stored,
} from './stored.ts';

export type { RecoverOptions, RecoveryEntry, RecoveryReport } from './recover-report.ts';
import type { RecoverOptions, RecoveryEntry, RecoveryReport } from './recover-report.ts';

function errorInfo(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}

/**
 * Restores every non-final actor of the store after a restart: settles steps
 * interrupted mid-run through `reconcile`, fires overdue durable timers, applies
 * each machine's declared recovery policy to what is still active, and re-arms
 * future timers. One actor's failure (unknown machine, corrupt row) is reported
 * and never stops the others.
 *
 * @example
 * const report = await recover(openStore(), { charts: Object.values(catalog) });
 * for (const a of report.actors) console.log(a.actorId, a.action, a.reason);
 */
export async function recover(store: Store, options: RecoverOptions = {}): Promise<RecoveryReport> {
  checkOptions('recover', { store }, z.object({ store: storeOption }));
  const runtimeOptions: RuntimeOptions = {};
  if (options.owner !== undefined) runtimeOptions.owner = options.owner;
  if (options.leaseMs !== undefined) runtimeOptions.leaseMs = options.leaseMs;
  if (options.clock) runtimeOptions.clock = options.clock;
  if (options.logger) runtimeOptions.logger = options.logger;
  if (options.charts) runtimeOptions.charts = options.charts;
  const runtime = getRuntime(store, runtimeOptions);
  const startedAt = runtime.clock.now();
  const report: RecoveryReport = {
    startedAt,
    finishedAt: startedAt,
    actors: [],
    steps: [],
    counts: { actors: 0, resumed: 0, sent: 0, failed: 0, timersFired: 0 },
  };

  // Uncertain steps, by actor; settled only by whoever recovers that actor.
  const uncertain = new Map<string, StepRow[]>();
  const invokeSteps: StepRow[] = [];
  for (const step of await store.listSteps({ status: 'executing' })) {
    if (runtime.liveActor(step.actorId)) continue; // running in this process, not interrupted
    if (step.name.startsWith('invoke:')) {
      invokeSteps.push(step); // settled with its actor's invokes
      continue;
    }
    const list = uncertain.get(step.actorId) ?? [];
    list.push(step);
    uncertain.set(step.actorId, list);
  }
  const settle = async (actorId: string): Promise<void> => {
    for (const step of uncertain.get(actorId) ?? []) {
      report.steps.push(await reconcileOne(store, step, options.reconcile, runtime.clock.now()));
    }
    uncertain.delete(actorId);
  };

  // The actors to recover: every active one, or (with an owner) those whose lease
  // was free or expired and is now ours.
  let afterId: string | undefined;
  const seen = new Set<string>();
  const nextPage = async (): Promise<ActorRow[]> => {
    if (runtime.owner === undefined) {
      const page = await store.listActors({ status: 'active', afterId, limit: 500 });
      afterId = page.at(-1)?.id;
      return page;
    }
    const taken = (await runtime.acquire(undefined, 500)).filter((id) => !seen.has(id));
    const rows: ActorRow[] = [];
    for (const id of taken) {
      const row = await store.loadActor(id);
      if (row) rows.push(row);
    }
    return rows;
  };

  // Messages posted before the stop and not delivered yet go first: in XState they
  // were delivered at once, before any invoked promise could settle, so a child's
  // greeting reaches its parent before the result of a promise the same step
  // invoked, which the loop below may run again and deliver.
  await runtime.courier.deliverAll();

  // Every recovered actor: uncertain steps, overdue timers, then the policy on what is
  // still stale. No live actor is built for one that only resumes. Those with overdue
  // timers or invokes to settle are recovered together after the others (below).
  const live: Live[] = [];
  for (;;) {
    const page = await nextPage();
    if (page.length === 0) break;
    for (const row of page) {
      if (runtime.owner !== undefined) seen.add(row.id);
      if (uncertain.has(row.id)) await settle(row.id);
      const entry: RecoveryEntry = {
        actorId: row.id,
        machineId: row.machineId,
        stateBefore: row.state,
        stateAfter: row.state,
        action: 'resumed',
        reason: '',
        timersFired: 0,
      };
      report.actors.push(entry);
      try {
        // Most actors only resume: judged from their row, with no turn of the event
        // loop (a tenth of recovering 100k of them went to awaiting settled promises).
        const recovered = recoverOne(runtime, row, entry, {
          startedAt,
          reconcile: options.reconcile,
          live,
        });
        const invokes = Array.isArray(recovered) ? recovered : await recovered;
        if (invokes.length > 0) report.steps.push(...invokes);
      } catch (error) {
        entry.action = 'failed';
        entry.error = errorInfo(error);
        entry.reason = error instanceof AgentchartsError ? error.code : 'error';
        runtime.logger.error({ actorId: row.id, err: error }, 'recovery failed for actor');
      }
    }
  }

  report.steps.push(...(await recoverLive(runtime, live, options.reconcile, startedAt)));

  // Overdue timers of actors that are not active: a delayed send that outlived its
  // sender's stop (docs/durability.md) is relayed, as XState's scheduler fires it.
  await runtime.fireDueTimers();

  // Messages written before the stop and not delivered yet (spawns, events, completions).
  await runtime.courier.deliverAll();

  // Invokes interrupted after their state was left (or their actor finished) can
  // never deliver: they are closed as abandoned, so nothing stays `executing`.
  const handled = new Set(report.steps.map((r) => r.key));
  for (const step of invokeSteps) {
    if (handled.has(step.key)) continue;
    if ((await runtime.acquire([step.actorId])).length === 0) continue;
    if (
      runtime.liveActor(step.actorId) &&
      (await store.getStep(step.key))?.status !== 'executing'
    ) {
      continue; // settled meanwhile by the run recovery started
    }
    const current = await store.loadActor(step.actorId);
    if (current?.status === 'active' && isAwaitedInvoke(current.snapshot, step)) continue;
    await store.finishStep(
      step.key,
      'failed',
      JSON.stringify({
        error: { name: 'Abandoned', message: 'its state was left before it settled' },
      }),
      runtime.clock.now(),
    );
    report.steps.push({ key: step.key, outcome: 'abandoned', detail: 'its state was left' });
  }

  // Steps of actors that are no longer active (finished or errored) are settled too;
  // with an owner, only after taking that actor's lease.
  for (const actorId of [...uncertain.keys()]) {
    if ((await runtime.acquire([actorId])).length > 0) await settle(actorId);
  }

  for (const a of report.actors) {
    report.counts.actors++;
    report.counts.timersFired += a.timersFired;
    if (a.action === 'resumed') report.counts.resumed++;
    else if (a.action === 'sent') report.counts.sent++;
    else report.counts.failed++;
  }
  if (options.pollTimersMs) runtime.startTimerPolling(options.pollTimersMs);
  report.finishedAt = runtime.clock.now();
  return report;
}

type RecoverOneOptions = {
  startedAt: number;
  reconcile: ReconcileHook | undefined;
  /** Where an actor with overdue timers or invokes to settle goes ({@link recoverLive}). */
  live: Live[];
};

/** An actor recovered live: its row, its report entry, and its overdue timers. */
interface Live {
  row: ActorRow;
  entry: RecoveryEntry;
  overdue: readonly PendingTimerRef[];
  now: number;
}
type PendingTimerRef = TimerWake;

/**
 * One unfinished actor: overdue timers fire first, through the actor's send path;
 * the chart's recovery policy then judges the state only if it is still the stale
 * one the process stopped in (a timer that moved the actor leaves a fresh state).
 * An actor with nothing overdue or pending that its policy resumes is judged
 * synchronously, from its row.
 */
function recoverOne(
  runtime: DurableRuntime,
  row: ActorRow,
  entry: RecoveryEntry,
  options: RecoverOneOptions,
): InvokeRecovery[] | Promise<InvokeRecovery[]> {
  const stored = parseStored(row);
  // Its timers are in its row (the ledger): in the order the actor armed them, due
  // times first, so timers due at the same instant fire as XState's scheduler would
  // fire them. An actor written before timers moved into snapshots has rows of them.
  const ledger = ledgerOf(stored);
  if (ledger === undefined) {
    return runtime.store
      .timers(row.id)
      .then((rows) =>
        recoverWith(runtime, row, stored, rows, hasPendingWork(stored), entry, options),
      );
  }
  const pending: PendingTimerRef[] =
    ledger.timers.length === 0
      ? []
      : [...ledger.timers]
          .sort((a, b) => a.due - b.due)
          .map((t) => ({
            actorId: row.id,
            timerId: t.key,
            dueAt: t.due,
            armedAt: t.at,
            rank: t.rank,
          }));
  return recoverWith(runtime, row, stored, pending, ledger.invokes.length > 0, entry, options);
}

function recoverWith(
  runtime: DurableRuntime,
  row: ActorRow,
  stored: Stored,
  pending: readonly PendingTimerRef[],
  awaitsInvokes: boolean,
  entry: RecoveryEntry,
  options: RecoverOneOptions,
): InvokeRecovery[] | Promise<InvokeRecovery[]> {
  const now = runtime.clock.now();
  const overdue = pending.length === 0 ? pending : pending.filter((t) => t.dueAt <= now);
  if (overdue.length > 0 || awaitsInvokes) {
    options.live.push({ row, entry, overdue, now });
    return [];
  }
  for (const t of pending) runtime.schedule(t);
  return judge(
    runtime,
    row,
    row.state,
    storedSnapshot(runtime, row, stored),
    entry,
    options,
    now,
    [],
  );
}

/**
 * The actors with overdue timers or invokes to settle, adopted as live actors.
 * Their overdue timers fire first, all of them in the order XState fires them
 * (due time, then when they were armed), not actor by actor: a child's timer due
 * before its parent's fires first, and what it sends is delivered before the
 * next one fires. Then each actor settles its invokes, and the chart's recovery
 * policy judges the state of those that nothing moved.
 */
async function recoverLive(
  runtime: DurableRuntime,
  live: readonly Live[],
  reconcile: ReconcileHook | undefined,
  startedAt: number,
): Promise<InvokeRecovery[]> {
  // Whether an overdue timer moved each actor. No actor is held here: the runtime's
  // cache holds what it keeps (recovering 100k actors must not hold them all).
  const moved = new Map<Live, boolean>(live.map((l) => [l, false]));
  const failed = (l: Live, error: unknown): void => {
    moved.delete(l);
    l.entry.action = 'failed';
    l.entry.error = errorInfo(error);
    l.entry.reason = error instanceof AgentchartsError ? error.code : 'error';
    runtime.logger.error({ actorId: l.row.id, err: error }, 'recovery failed for actor');
  };
  const due = live.flatMap((l) => l.overdue.map((timer) => ({ l, timer })));
  // In the order XState fires them: due time, arm time, then, of one instant, arm
  // order (PendingTimer.rank). Stable: of two timers without an arm time or rank
  // (an earlier build's), the actor recovered first, and one actor's in its order.
  due.sort(
    (a, b) =>
      a.timer.dueAt - b.timer.dueAt ||
      (a.timer.armedAt !== undefined && b.timer.armedAt !== undefined
        ? a.timer.armedAt - b.timer.armedAt
        : 0) ||
      (a.timer.rank !== undefined && b.timer.rank !== undefined
        ? compareRanks(a.timer.rank, b.timer.rank)
        : 0),
  );
  for (const { l, timer } of due) {
    if (!moved.has(l)) continue;
    try {
      const actor = await adoptActorRow(runtime, l.row);
      const before = actor.state;
      if (await runtime.fireTimer(l.row.id, timer.timerId)) {
        l.entry.timersFired++;
        if (actor.state !== before) moved.set(l, true);
      }
      // What it set off, before the next one fires (XState delivers it at once).
      await runtime.courier.settled();
    } catch (error) {
      failed(l, error);
    }
  }
  const steps: InvokeRecovery[] = [];
  const options = { startedAt, reconcile, live: [] };
  for (const l of live) {
    if (!moved.has(l)) continue;
    const entry = l.entry;
    try {
      const actor = await adoptActorRow(runtime, l.row);
      const before = actor.state;
      const invokes = await actor.resumeInvokes(reconcile);
      const state = (entry.stateAfter = actor.state);
      const snapshot = actor.getSnapshot();
      if (snapshot.status !== 'active') {
        entry.reason = `finished by an overdue timer or invoke (${state})`;
        steps.push(...invokes);
      } else if (moved.get(l) === true || state !== before) {
        entry.reason = `an overdue timer or a settled invoke moved it to ${state}, which is not stale`;
        steps.push(...invokes);
      } else {
        steps.push(
          ...(await judge(runtime, l.row, state, snapshot, entry, options, l.now, invokes)),
        );
      }
    } catch (error) {
      failed(l, error);
    }
  }
  return steps;
}

/** The chart's recovery policy on a state still stale: resume, or send its event. */
function judge(
  runtime: DurableRuntime,
  row: ActorRow,
  state: string,
  snapshot: RecoverySnapshot,
  entry: RecoveryEntry,
  options: RecoverOneOptions,
  now: number,
  invokes: InvokeRecovery[],
): InvokeRecovery[] | Promise<InvokeRecovery[]> {
  const chart = runtime.chartFor(row.machineId);
  const decision: RecoveryDecision = chart?.recovery
    ? chart.recovery({ actorId: row.id, state, snapshot, updatedAt: row.updatedAt, now })
    : { action: 'resume', reason: 'no recovery policy declared' };
  entry.reason = decision.reason;
  if (decision.action !== 'send') return invokes;
  return (async () => {
    const actor = await adoptActorRow(runtime, row);
    await actor.sendFromRecovery(decision.event, decision.reason, options.startedAt);
    entry.action = 'sent';
    entry.event = decision.event;
    entry.stateAfter = actor.state;
    return invokes;
  })();
}

async function reconcileOne(
  store: Store,
  step: StepRow,
  reconcile: ReconcileHook | undefined,
  now: number,
): Promise<RecoveryReport['steps'][number]> {
  if (!reconcile) {
    return {
      key: step.key,
      outcome: 'uncertain',
      detail: 'no reconcile hook; left for an operator',
    };
  }
  try {
    const decision = await reconcile({
      key: step.key,
      actorId: step.actorId,
      name: step.name,
      startedAt: step.startedAt,
      attempts: step.attempts,
    });
    try {
      await settleStep(store, step.key, decision, now);
    } catch (error) {
      // Another run recorded it (a stopped process's last statement landing late).
      const row = await settledMeanwhile(store, step.key, error);
      return {
        key: step.key,
        outcome: row.status === 'done' ? 'done' : 'not_done',
        detail: `recorded ${row.status} meanwhile`,
      };
    }
    return {
      key: step.key,
      outcome: decision.status,
      detail: decision.status === 'done' ? 'reconciled as done' : decision.reason,
    };
  } catch (error) {
    return { key: step.key, outcome: 'failed', detail: errorInfo(error).message };
  }
}
