/**
 * Invoked promises as durable steps. Entering a state that invokes
 * `fromPromise(fn)` begins a step in the same commit (keyed by actor, invoke id and
 * the version that entered the state); the process that committed it runs `fn`
 * once with `{ input, signal, key }` and delivers the outcome as XState's own
 * `xstate.done.actor.<id>` / `xstate.error.actor.<id>` event through the send
 * path. Leaving the state aborts `signal`; a result that arrives after that is
 * recorded on the step, never delivered. After a crash, `recover()` settles the
 * invoke like any step.
 */
import type { AnyActorLogic, AnyActorRef, EventObject } from 'xstate';
import { chartMeta } from '../core/meta.ts';
import type { StepRow } from '../store/types.ts';
import type { InvokeStart } from './effects.ts';
import type { PendingInvoke } from './ledger.ts';
import type { ActorCore } from './actor-core.ts';
import { PromiseSelf, takePromiseSends, withLiveSelf } from './action-self.ts';
import { actorKind, resolveActorLogic } from './actor-kinds.ts';
import { errorValue } from './pure.ts';
import type { ReservedTurn } from './runtime.ts';
import { settledMeanwhile, settleStep, type ReconcileHook } from './steps.ts';

export {
  durablePromise,
  type DurablePromiseArgs,
  type DurablePromiseLogic,
  type DurablePromiseOptions,
} from '../core/durable-promise.ts';
import type { DurablePromiseArgs } from '../core/durable-promise.ts';

/** The invoke id and entry version of an invoke step key of `actorId`, if it is one. */
export function parseInvokeKey(
  actorId: string,
  key: string,
): { id: string; version: number } | undefined {
  const prefix = `${actorId}:invoke:`;
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  const cut = rest.lastIndexOf(':');
  const version = Number(rest.slice(cut + 1));
  return cut > 0 && Number.isSafeInteger(version) ? { id: rest.slice(0, cut), version } : undefined;
}

/** XState's done and error events of invoke `id`. */
export function invokeDone(id: string, output: unknown): EventObject {
  return { type: `xstate.done.actor.${id}`, output, actorId: id } as EventObject;
}

export function invokeError(id: string, error: unknown): EventObject {
  return { type: `xstate.error.actor.${id}`, error, actorId: id } as EventObject;
}

/** The outcome of one run, as recorded on the step and delivered to the actor. */
type Outcome = { ok: true; output: unknown } | { ok: false; error: unknown };

/** Runs `fn` of a promise logic once; an output that is not JSON is an error of its own. */
async function settle(logic: AnyActorLogic, args: DurablePromiseArgs<unknown>): Promise<Outcome> {
  let output: unknown;
  try {
    const create = (logic as { config: (a: unknown) => unknown }).config;
    output = await create({
      ...args,
      self: { id: args.key, sessionId: args.key, send: () => {} },
      system: undefined,
      emit: () => {},
    });
  } catch (error) {
    return { ok: false, error: errorValue(error) };
  }
  // A promise that resolves with nothing delivers nothing: `event.output` is
  // undefined, as in XState (its step's result is null).
  if (output === undefined) return { ok: true, output: undefined };
  let text: string | undefined;
  try {
    text = JSON.stringify(output);
  } catch {
    text = undefined; // a BigInt, a cycle
  }
  if (text === undefined) {
    return {
      ok: false,
      error: {
        name: 'InvalidOutputError',
        message: 'the promise resolved with a value that is not JSON',
      },
    };
  }
  return { ok: true, output: JSON.parse(text) as unknown };
}

/** A place in one of an actor's queues of invokes: `ready` once every earlier place is released. */
interface Turn {
  ready: Promise<void>;
  release: () => void;
  /**
   * Every earlier place still held in the outcome queue delivers in a turn of
   * its tree reserved before `place` (runtime.reserveTurn): waiting for `ready`
   * inside the turn reserved at `place` cannot wait on that turn itself.
   */
  inOrder: boolean;
}

/**
 * Takes the next place in the actor's queue of invoke starts or of invoke
 * outcomes; `place`: the reserved turn of its tree an outcome is delivered in
 * (its `place`), Infinity for none.
 */
function takeTurn(core: ActorCore, queue: 'start' | 'outcome', place = Infinity): Turn {
  const turns = (core.invokeTurns ??= {
    start: Promise.resolve(),
    outcome: Promise.resolve(),
    outcomesHeld: new Set(),
  });
  const ready = turns[queue];
  let inOrder = place !== Infinity;
  let held: { place: number } | undefined;
  if (queue === 'outcome') {
    for (const earlier of turns.outcomesHeld) if (earlier.place >= place) inOrder = false;
    held = { place: inOrder ? place : Infinity };
    turns.outcomesHeld.add(held);
  }
  let release = (): void => {};
  const mine = new Promise<void>((resolve) => {
    release = () => {
      if (held !== undefined) turns.outcomesHeld.delete(held);
      resolve();
    };
  });
  // The next place waits for this one and every one before it, whenever this one
  // is released.
  turns[queue] = ready.then(() => mine);
  return { ready, release, inOrder };
}

/**
 * Whether `running` settles before the next macrotask: a promise that settles
 * at once, whose result XState takes before the next event from outside.
 */
function settlesAtOnce(running: Promise<unknown>): Promise<boolean> {
  return new Promise((resolve) => {
    nextTask(() => resolve(false));
    void running.then(() => resolve(true));
  });
}

/** The next macrotask: after every microtask queued now (setImmediate where there is one). */
const nextTask: (run: () => void) => void =
  typeof setImmediate === 'function' ? (run) => setImmediate(run) : (run) => setTimeout(run, 0);

/**
 * Runs an invoke whose step a commit began: claims its first run (exactly one
 * caller wins), runs it with an AbortSignal the state's exit fires, records the
 * outcome on the step, and delivers it while the actor still awaits it (the
 * send path checks the ledger: a result of an earlier entry of the state is never
 * delivered to a later one). `claimed` skips the claim (a reconcile said run it
 * again).
 *
 * An actor's invokes call their functions in the order its commits started them,
 * and deliver their outcomes in the order those settled, as XState's own promise
 * actors do: the claims and the recording of outcomes are round trips to the store
 * that may come back in any order (on a networked store, over several
 * connections), so each waits for its turn before the step that XState orders.
 */
export async function runInvoke(
  core: ActorCore,
  invoke: InvokeStart,
  claimed = false,
  reserved?: ReservedTurn,
  /** When its state was entered, with `reserved`: the instant an outcome at once is taken at. */
  enteredAt?: number,
): Promise<void> {
  try {
    await run(core, invoke, claimed, reserved, enteredAt);
  } finally {
    reserved?.pass(); // not used: the events behind it go on
  }
}

async function run(
  core: ActorCore,
  invoke: InvokeStart,
  claimed: boolean,
  reserved: ReservedTurn | undefined,
  enteredAt: number | undefined,
): Promise<void> {
  const { store, clock } = core.runtime;
  const start = takeTurn(core, 'start');
  let controller: AbortController;
  let running: Promise<Outcome>;
  // The actor's `self` in the promise's input (action-self.ts): what it sends
  // before the outcome is taken before the outcome.
  let self: PromiseSelf;
  try {
    if (!claimed) {
      // Claiming is store work, not the invoke's own: `drain({ invokes: 'settled' })`
      // waits for it, so what it drains to has every invoke running its promise.
      const claiming = store.startStep(invoke.key, clock.now());
      const settling = core.runtime.invokesSettling;
      const tracked = claiming.then(
        () => {},
        () => {},
      );
      settling.add(tracked);
      let won: boolean;
      try {
        won = await claiming;
        await start.ready;
      } catch (error) {
        // The store refused the claim (I/O error, closed): the step stays unclaimed, to
        // be started by recovery, and the invoke's chain does not reject unheard.
        core.runtime.logger.error(
          { actorId: core.id, key: invoke.key, err: error },
          'invoke not started: its step could not be claimed; recover() starts it',
        );
        return;
      } finally {
        settling.delete(tracked);
      }
      if (!won) return;
    } else {
      await start.ready;
    }
    controller = new AbortController();
    (core.invokes ??= new Map()).set(invoke.key, controller);
    self = new PromiseSelf(core);
    running = settle(invoke.logic, {
      input: withLiveSelf(core, invoke.input, self),
      signal: controller.signal,
      key: invoke.key,
    });
  } finally {
    start.release();
  }
  // A promise that settles at once has its outcome delivered in the turn its
  // commit reserved, before the events from outside that came meanwhile. Until
  // its outcome is on its way, `drain({ invokes: 'settled' })` waits for it: a
  // promise that settles at once is settling from its call on.
  const settling = core.runtime.invokesSettling;
  let handedOver = (): void => {};
  const handover = new Promise<void>((resolve) => (handedOver = resolve));
  settling.add(handover);
  const handOver = (): void => {
    settling.delete(handover);
    handedOver();
  };
  let finishing: Promise<void>;
  try {
    const atOnce = reserved !== undefined && (await settlesAtOnce(running));
    if (!atOnce) {
      reserved?.pass();
      handOver(); // a promise still running: not waited for
    }
    const outcome = await running;
    const turn = takeTurn(core, 'outcome', atOnce ? reserved.place : Infinity);
    if (!turn.inOrder) reserved?.pass();
    core.invokes?.delete(invoke.key);
    finishing = finish(
      core,
      invoke,
      outcome,
      controller.signal,
      turn,
      turn.inOrder ? reserved : undefined,
      atOnce ? enteredAt : undefined,
      self,
    );
    settling.add(finishing);
  } finally {
    handOver();
  }
  try {
    await finishing;
  } finally {
    settling.delete(finishing);
  }
}

/**
 * Records a settled invoke's outcome on its step and, in its turn, delivers it
 * unless its state was left.
 */
async function finish(
  core: ActorCore,
  invoke: InvokeStart,
  outcome: Outcome,
  signal: AbortSignal,
  turn: Turn,
  reserved: ReservedTurn | undefined,
  /**
   * Settled at once: the instant its state was entered. XState takes such an
   * outcome there, before its clock moves on, so the step is taken at that time
   * (the timers its `onDone` arms fall due from it), however long the claim and
   * the record took.
   */
  at: number | undefined,
  /** The actor's `self` in the promise's input: what it sent is taken before the outcome. */
  self: PromiseSelf,
): Promise<void> {
  const { store, clock, logger } = core.runtime;
  let recorded = outcome;
  try {
    if (self.lost) {
      // A send it made could not be taken (the runtime closed): its outcome is not
      // recorded either, and recovery settles the step as one interrupted.
      logger.warn(
        { actorId: core.id, key: invoke.key },
        'invoke outcome not recorded: a send it made after the runtime closed was lost',
      );
      return;
    }
    try {
      await store.finishStep(
        invoke.key,
        outcome.ok ? 'done' : 'failed',
        resultOf(outcome),
        clock.now(),
      );
    } catch (error) {
      // Another run of the same step (one a stopped process started) recorded its
      // outcome first: that is the outcome, delivered once.
      try {
        const row = await settledMeanwhile(store, invoke.key, error);
        recorded = outcomeOf(row.status, row.result);
      } catch {
        // Left `executing`: recovery settles it through the reconcile hook.
        logger.error(
          { actorId: core.id, key: invoke.key, err: error },
          'invoke outcome not recorded',
        );
        return;
      }
    }
    // Outcomes that settled before this one are delivered first: one of them may
    // leave the state, and then this one is recorded, never delivered.
    await turn.ready;
    // In its turn in the actor's tree, as XState takes a promise's result after the
    // run under way, one result (and what it sets off) at a time (runtime.inTurn);
    // settled at once, in the turn its commit reserved.
    const deliver = async (): Promise<void> => {
      // What promises sent the actor before this outcome: taken ahead of it.
      await takePromiseSends(core);
      if (signal.aborted) return; // its state was left: recorded, never delivered
      await deliverOutcome(
        core,
        invoke.id,
        invoke.key,
        recorded,
        reserved === undefined ? undefined : at,
      );
    };
    if (reserved !== undefined) await reserved.use(deliver);
    else await core.runtime.inTurn(core.id, deliver);
  } finally {
    turn.release();
  }
}

/** Delivers a settled invoke's outcome through the actor's mailbox and send path. */
export async function deliverOutcome(
  core: ActorCore,
  id: string,
  key: string,
  outcome: Outcome,
  /** The instant the step is taken at (SendOptions.at); absent: the clock's now. */
  at?: number,
): Promise<void> {
  const event = outcome.ok ? invokeDone(id, outcome.output) : invokeError(id, outcome.error);
  try {
    await core.handle?.deliverOutcome(event, key, at);
  } catch (error) {
    core.runtime.logger.warn(
      { actorId: core.id, key, eventType: event.type, err: error },
      'invoke outcome not delivered; recover() delivers it',
    );
  }
}

/** Aborts a running invoke whose state was left: its late outcome is recorded, never delivered. */
export function stopInvoke(core: ActorCore, key: string): void {
  const running = core.invokes?.get(key);
  if (!running) return;
  core.invokes?.delete(key);
  running.abort();
}

/** A settled invoke's step result: null for `undefined` (resolved or rejected with it). */
function resultOf(outcome: Outcome): string | null {
  if (outcome.ok) return outcome.output === undefined ? null : JSON.stringify(outcome.output);
  return outcome.error === undefined ? null : JSON.stringify({ error: outcome.error });
}

/** The recorded outcome of a settled invoke step, from its row's result. */
export function outcomeOf(status: 'done' | 'failed', result: string | null): Outcome {
  // Settled with `undefined` (a row written before held 'null' there instead).
  if (result === null)
    return status === 'done' ? { ok: true, output: undefined } : { ok: false, error: undefined };
  const parsed = JSON.parse(result) as unknown;
  if (status === 'done') return { ok: true, output: parsed };
  const error = (parsed as { error?: unknown } | null)?.error;
  return { ok: false, error: error ?? parsed };
}

/** What recovery did with one invoke found on a recovered actor. */
export interface InvokeRecovery {
  key: string;
  outcome: 'delivered' | 'started' | 'rerun' | 'uncertain' | 'failed';
  detail: string;
}

/**
 * After a restart: every invoked promise the actor awaits (its ledger) is settled.
 * A recorded outcome is delivered (once: delivering it takes it off the ledger); a
 * step that never started runs now; one that was running when the process died is
 * uncertain — the reconcile hook decides (done → delivered; not done → run again
 * only when the chart marks the invoke safe to re-run), never blindly re-run.
 */
export async function resumeInvokes(
  core: ActorCore,
  reconcile: ReconcileHook | undefined,
): Promise<InvokeRecovery[]> {
  const waiting = core.ledger.invokes.filter((i) => !core.invokes?.has(i.key));
  if (waiting.length === 0) return [];
  const awaited = await callOrder(core, waiting);
  const { store, clock } = core.runtime;
  const children = core.snapshot.children as Record<string, AnyActorRef | undefined>;
  const report: InvokeRecovery[] = [];
  for (const pending of awaited) {
    const { id, key } = pending;
    // Its logic from the ledger (an invoke whose id a sibling took over is no
    // longer among XState's children); a ledger from before that, the child's.
    const child = children[id] as (AnyActorRef & { logic: AnyActorLogic }) | undefined;
    const logic =
      pending.src === undefined ? child?.logic : resolveActorLogic(core.machine, pending.src);
    const row = await store.getStep(key);
    if (!row || !logic || actorKind(logic) !== 'promise') {
      report.push({ key, outcome: 'failed', detail: 'no step or promise logic for that key' });
      continue;
    }
    const input =
      pending.src === undefined
        ? (child?.getSnapshot() as { input?: unknown } | undefined)?.input
        : pending.input;
    const invoke = { id, key, logic, input };
    if (row.status !== 'executing') {
      await deliverOutcome(core, id, key, outcomeOf(row.status, row.result));
      report.push({ key, outcome: 'delivered', detail: `recorded ${row.status}` });
    } else if (row.attempts === 0) {
      trackRun(core, runInvoke(core, invoke));
      report.push({ key, outcome: 'started', detail: 'never started before the stop' });
    } else {
      report.push(await settleUncertain(core, invoke, row, reconcile, clock.now()));
    }
  }
  return report;
}

/** An invoke key's entry version and, for the second and later of one id in a step, its place. */
function versionOf(key: string): { version: number; twin: boolean } {
  const tail = key.slice(key.lastIndexOf(':') + 1);
  const dot = tail.indexOf('.');
  return { version: Number(dot < 0 ? tail : tail.slice(0, dot)), twin: dot >= 0 };
}

/**
 * The pending invokes in the order the live actor called them, which recovery
 * calls them again in (promises that settle at once deliver in that order): the
 * ledger's, which is the order their states were entered, save on an actor's first
 * step (its creation, or a spawn again after it finished), where XState starts
 * the promises its initial snapshot holds in `children` first, in that order, and
 * then those a second invoke of the same id displaced from there
 * (effects.ts, `startOrder`). Only a step with such a second invoke differs;
 * which one holds the id is the last of it still pending, unless the holder has
 * settled (`settled` names its id).
 */
async function callOrder(
  core: ActorCore,
  pending: readonly PendingInvoke[],
): Promise<PendingInvoke[]> {
  if (!pending.some((i) => versionOf(i.key).twin)) return [...pending];
  const children = Object.keys(core.snapshot.children);
  const settled = core.ledger.settled ?? [];
  const out: PendingInvoke[] = [];
  for (let from = 0; from < pending.length;) {
    const { version } = versionOf((pending[from] as PendingInvoke).key);
    let to = from;
    while (
      to < pending.length &&
      versionOf((pending[to] as PendingInvoke).key).version === version
    ) {
      to++;
    }
    const group = pending.slice(from, to);
    from = to;
    if (!group.some((i) => versionOf(i.key).twin) || !(await firstStep(core, version))) {
      out.push(...group);
      continue;
    }
    const holds = (i: PendingInvoke): boolean =>
      !settled.includes(i.id) && pending.findLast((j) => j.id === i.id) === i;
    const held = group.filter(holds);
    held.sort((a, b) => children.indexOf(a.id) - children.indexOf(b.id));
    out.push(...held, ...group.filter((i) => !holds(i)));
  }
  return out;
}

/** Whether the actor's commit at `version` was its first step (created, or spawned again). */
async function firstStep(core: ActorCore, version: number): Promise<boolean> {
  if (version === 1) return true;
  const [row] = await core.runtime.store.history(core.id, { afterSeq: version - 1, limit: 1 });
  return row?.seq === version && row.metadata.includes('"source":"spawn"');
}

async function settleUncertain(
  core: ActorCore,
  invoke: { id: string; key: string; logic: AnyActorLogic; input: unknown },
  row: StepRow,
  reconcile: ReconcileHook | undefined,
  now: number,
): Promise<InvokeRecovery> {
  const store = core.runtime.store;
  const safe = chartMeta(core.machine).invokeRerunSafe(invoke.id);
  try {
    const decision = reconcile
      ? await reconcile({
          key: row.key,
          actorId: core.id,
          name: row.name,
          startedAt: row.startedAt,
          attempts: row.attempts,
        })
      : undefined;
    if (decision?.status === 'done') {
      try {
        await settleStep(store, row.key, decision, now);
      } catch (error) {
        return await deliverRecorded(
          core,
          invoke.id,
          await settledMeanwhile(store, row.key, error),
        );
      }
      await deliverOutcome(core, invoke.id, row.key, { ok: true, output: decision.result });
      return { key: row.key, outcome: 'delivered', detail: 'reconciled as done' };
    }
    if (!safe) {
      return {
        key: row.key,
        outcome: 'uncertain',
        detail: decision
          ? `reconciled as not done (${decision.reason}); the chart does not mark it safe to re-run`
          : 'interrupted mid-run; no reconcile hook and the chart does not mark it safe to re-run',
      };
    }
    try {
      await store.restartStep(row.key, now);
    } catch (error) {
      return await deliverRecorded(core, invoke.id, await settledMeanwhile(store, row.key, error));
    }
    trackRun(core, runInvoke(core, invoke, true));
    return { key: row.key, outcome: 'rerun', detail: 'interrupted mid-run; safe to re-run' };
  } catch (error) {
    return { key: row.key, outcome: 'failed', detail: JSON.stringify(errorValue(error)) };
  }
}

/** Delivers the outcome another run recorded while recovery settled the step. */
async function deliverRecorded(
  core: ActorCore,
  id: string,
  row: StepRow & { status: 'done' | 'failed' },
): Promise<InvokeRecovery> {
  await deliverOutcome(core, id, row.key, outcomeOf(row.status, row.result));
  return { key: row.key, outcome: 'delivered', detail: `recorded ${row.status} meanwhile` };
}

/** Keeps a running invoke where `runtime.drain()` can wait for it. */
export function trackRun(core: ActorCore, run: Promise<void>): void {
  const running = core.runtime.invokesRunning;
  running.add(run);
  void run.finally(() => running.delete(run));
}
