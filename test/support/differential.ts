/**
 * The differential harness: one machine, one script, run on plain XState
 * (`createActor`, in memory, a stepped clock) and on durable actors (a store, the
 * same kind of clock, restarts that close the runtime and `recover()`), compared
 * after every step: state value, context, status and output of the actor and of
 * each child machine, the children it has, the events each actor consumed
 * from effects (timers, messages, invoke results), in order, and the events the
 * actor emitted (`emit`), in order.
 */
import { isDeepStrictEqual } from 'node:util';
import { createActor, type AnyActorRef, type AnyStateMachine, type InspectionEvent } from 'xstate';
import {
  createDurableActor,
  defineChart,
  verify,
  getRuntime,
  InvalidEventError,
  InvalidTransitionError,
  openDurableActor,
  recover,
  type Clock,
  type Store,
} from '../../src/index.ts';
import { ledgerOf } from '../../src/durable/ledger.ts';
import { Runaway, type Gate, type ScriptStep } from './machine-gen.ts';

/** A caller's event of a script: to the root, or to one of its children. */
type CallerStep = Extract<ScriptStep, { send: unknown }>;

/** The ids of the generated machines' invoked promises (their child machines have others). */
const PROMISE_IDS: ReadonlySet<string> = new Set(['work', 'workNow']);

/** A manual clock whose `advance` fires one due callback at a time, settling in between. */
export class StepClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start: number) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  async advance(ms: number, settle: () => Promise<void>): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) {
        if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      }
      if (!next) break;
      this.pending.delete(next[0]);
      this.current = Math.max(this.current, next[1].at);
      next[1].fn();
      await settle();
    }
    this.current = target;
  }
}

/** What one actor looks like, for comparison. */
export interface ActorView {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  children: string[];
}

/** JSON's view of a value (context as it is stored: `undefined` properties absent). */
function json(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

/**
 * A context's JSON without its refs to children that are gone: XState's own
 * `restoreSnapshot` revives a persisted ref from `children`, so one to a child
 * stopped or finished since reads `undefined` after a restore, plain or durable.
 */
function withoutGoneRefs(value: unknown, children: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((v) => withoutGoneRefs(v, children));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const ref = v as { xstate$$type?: unknown; id?: unknown } | null;
    const gone =
      ref !== null &&
      typeof ref === 'object' &&
      ref.xstate$$type === 1 &&
      typeof ref.id === 'string' &&
      !(ref.id in children);
    if (!gone) out[key] = withoutGoneRefs(v, children);
  }
  return out;
}

function viewOf(snapshot: {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  children: Record<string, unknown>;
}): ActorView {
  return {
    value: snapshot.value,
    context: withoutGoneRefs(json(snapshot.context), snapshot.children),
    status: snapshot.status,
    output: json(snapshot.output),
    children: Object.keys(snapshot.children).sort(),
  };
}

/** A divergence: where, and the two sides. */
export class Divergence extends Error {
  override name = 'Divergence';
  constructor(
    readonly step: number,
    readonly what: string,
    readonly plain: unknown,
    readonly durable: unknown,
  ) {
    super(
      `after step ${step}, ${what} differs:${firstDifference(plain, durable)}\n` +
        `  plain   ${JSON.stringify(plain)}\n  durable ${JSON.stringify(durable)}`,
    );
  }
}

/** Where two lists part (long lists are cut short in a report): ` from [i]: a… / b…`. */
function firstDifference(plain: unknown, durable: unknown): string {
  if (!Array.isArray(plain) || !Array.isArray(durable)) return '';
  let i = 0;
  while (i < plain.length && i < durable.length && isDeepStrictEqual(plain[i], durable[i])) i++;
  const from = (list: unknown[]) => JSON.stringify(list.slice(i, i + 6));
  return ` from [${i}]: plain ${from(plain)}, durable ${from(durable)}`;
}

/** Where both sides' clocks start. */
export const START = 1_000_000;
/** The durable root actor's id (its child machines are `root/<id>`). */
export const ROOT = 'root';

/** Settles plain XState: its promise actors resolve in microtasks. */
export async function settlePlain(): Promise<void> {
  for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Lets a durable store's runtime settle: what is queued committed and delivered,
 * every invoke whose promise settled delivered. A promise that settles at once is
 * called once its claim is on record, and settles microtasks after `drain` saw the
 * claim end: a turn later it is settling, and `drain` waits for it (three turns:
 * its outcome may invoke again).
 */
export async function settleStore(store: Store): Promise<void> {
  await settlePlain();
  const runtime = getRuntime(store);
  await runtime.drain({ invokes: 'settled' });
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await runtime.drain({ invokes: 'settled' });
  }
}

/** One actor as compared: its view and the events it consumed from effects, in order. */
export interface ActorRecord {
  view: ActorView;
  consumed: string[];
}

/**
 * One side after a step, plain data (the crash test carries a durable one across
 * processes): the root, and each of its child machines by id, their own child
 * machines by `<id>/<their id>` (the root's grandchildren). On the plain side a
 * child spawned and stopped in one macrostep (a final state reached) is marked
 * `neverStarted`: XState never starts it (its snapshot still reads active) and no
 * durable actor is made. On the durable side `undefined` is a child the store
 * does not have. Promises (`work`) are compared by their results.
 */
export interface World {
  root: ActorRecord;
  kids: Record<string, (ActorRecord & { neverStarted?: true }) | undefined>;
}

/** Throws a Divergence at the first difference of the two sides after `step`. */
export function compareWorlds(step: number, plain: World, durable: World): void {
  const [a, b] = [plain.root.view, durable.root.view];
  if (!isDeepStrictEqual(a, b)) throw new Divergence(step, 'the actor', a, b);
  /** Compares the child machine at `path`; true when it was compared (it ran on both sides). */
  const compareKid = (path: string): boolean => {
    const plainKid = plain.kids[path];
    if (plainKid === undefined) return false; // a promise
    const durableKid = durable.kids[path];
    // The durable actor of that id, if any, is an earlier child that has finished
    // (stopped, or done before it was spawned again).
    if (plainKid.neverStarted && (!durableKid || durableKid.view.status !== 'active')) {
      return false;
    }
    if (!durableKid) throw new Divergence(step, `child ${path}`, plainKid.view, 'missing');
    if (!isDeepStrictEqual(plainKid.view, durableKid.view)) {
      throw new Divergence(step, `child ${path}`, plainKid.view, durableKid.view);
    }
    if (!isDeepStrictEqual(plainKid.consumed, durableKid.consumed)) {
      const what = `the effects child ${path} consumed`;
      throw new Divergence(step, what, plainKid.consumed, durableKid.consumed);
    }
    return true;
  };
  for (const id of a.children) {
    if (!compareKid(id)) continue;
    for (const gid of plain.kids[id]?.view.children ?? []) compareKid(`${id}/${gid}`);
  }
  if (!isDeepStrictEqual(plain.root.consumed, durable.root.consumed)) {
    const what = 'the effects the actor consumed';
    throw new Divergence(step, what, plain.root.consumed, durable.root.consumed);
  }
}

/**
 * The plain half: `createActor` on a StepClock, driven by the script's steps (a
 * `restart` is nothing to it), recording the events from effects each actor
 * consumed. Each is relayed to it (queued in its mailbox) and consumed when XState
 * reports the snapshot it led to; the mailbox is first in, first out, so a report
 * of the head of the queue consumes it. (Events are matched by identity: one
 * `sendParent` of many children may relay the same object.)
 */
export class PlainSide {
  readonly clock = new StepClock(START);
  readonly root: AnyActorRef;
  private readonly queued = new Map<unknown, object[]>();
  private readonly consumed = new Map<unknown, string[]>();
  private readonly erroredWithSnapshot = new Set<unknown>();
  /** Events an action sent with `self.send` (queued, never counted as consumed). */
  private readonly selfSent = new WeakSet<object>();
  /** What the root emitted since it started (`actor.on('*')`), as JSON. */
  readonly emitted: unknown[] = [];

  constructor(
    machine: AnyStateMachine,
    private readonly gate: Gate,
  ) {
    // A machine whose promises multiply ends the case (Gate.MAX_RELEASES).
    gate.bound();
    this.root = createActor(machine, {
      clock: this.clock,
      inspect: (event: InspectionEvent) => this.inspect(event),
    });
    this.root.subscribe({ error: () => {} });
  }

  async start(): Promise<void> {
    // Listened to before it starts, as the durable runtime's observers are before
    // the durable actor is created: its initial entry's emits count too.
    this.root.on('*', (event: unknown) => this.emitted.push(json(event)));
    this.root.start();
    await settlePlain();
  }

  /**
   * Runs one step and settles. `kid`: the child a kid step was sent to (the
   * durable side sends to the same); `parted`: a caller's event whose transition
   * threw failed the actor (a durable actor refuses it instead, by design).
   */
  async step(step: ScriptStep): Promise<{ kid?: string; parted?: true }> {
    const root = this.root;
    let result: { kid?: string; parted?: true } = {};
    if ('send' in step) {
      result = this.send(step);
    } else if ('settle' in step) {
      root.send({ type: 'SETTLE' });
      const epoch = (root.getSnapshot() as { context: { epoch: number } }).context.epoch;
      await this.gate.openTo(epoch, settlePlain);
    } else if ('wait' in step) {
      await this.clock.advance(step.wait, settlePlain);
    }
    await settlePlain();
    return result;
  }

  /**
   * Sends one caller's event, synchronously (nothing settles: a burst's events
   * go one right after another, as a caller's sends made together).
   */
  send(step: CallerStep): { kid?: string; parted?: true } {
    const root = this.root;
    if (!('kid' in step)) {
      const wasActive = this.status(root) === 'active';
      root.send({ type: step.send, k: step.k });
      return wasActive && this.status(root) === 'error' ? { parted: true } : {};
    }
    const id = this.kidFor(step);
    if (id === undefined) return {};
    this.children()[id]?.send({ type: step.send });
    return { kid: id };
  }

  /**
   * The child a kid step goes to now, if any. Only one that takes the event: a
   * durable actor refuses a caller's event it has no transition for (by design),
   * where XState's child takes it, changing nothing, and still tells a parent that
   * asked for its snapshots.
   */
  kidFor(step: CallerStep & { kid: number }): string | undefined {
    const children = this.children();
    const id = Object.keys(children)
      .filter((key) => !PROMISE_IDS.has(key))
      .sort()[step.kid];
    const ref = id === undefined ? undefined : children[id];
    return id !== undefined &&
      ref &&
      !neverStarted(ref) &&
      this.status(ref) === 'active' &&
      (ref.getSnapshot() as { can(event: { type: string }): boolean }).can({ type: step.send })
      ? id
      : undefined;
  }

  /** The root, and its child machines by id. */
  world(): World {
    const kids: World['kids'] = {};
    const add = (path: string, ref: AnyActorRef, parentNeverStarted = false): void => {
      kids[path] = {
        view: viewOf(ref.getSnapshot() as never),
        consumed: this.consumedBy(ref),
        ...(parentNeverStarted || neverStarted(ref) ? { neverStarted: true as const } : {}),
      };
    };
    for (const [id, ref] of Object.entries(this.children())) {
      if (PROMISE_IDS.has(id) || !ref) continue;
      add(id, ref);
      const grand = (ref.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> })
        .children;
      for (const [gid, gref] of Object.entries(grand ?? {})) {
        if (gref) add(`${id}/${gid}`, gref, neverStarted(ref));
      }
    }
    const root = {
      view: viewOf(this.root.getSnapshot() as never),
      consumed: this.consumedBy(this.root),
    };
    return { root, kids };
  }

  stop(): void {
    this.root.stop();
  }

  private inspect(event: InspectionEvent): void {
    if (event.type === '@xstate.snapshot') {
      const queue = this.queued.get(event.actorRef);
      if (queue !== undefined && queue[0] === event.event) {
        queue.shift();
        if (!this.selfSent.has(event.event)) {
          const list = this.consumed.get(event.actorRef) ?? [];
          list.push(event.event.type);
          this.consumed.set(event.actorRef, list);
        }
      }
      if ((event.snapshot as { status?: string }).status === 'error') {
        this.erroredWithSnapshot.add(event.actorRef);
      }
      return;
    }
    if (event.type !== '@xstate.event') return;
    // An action's self.send (the generated machines' only R from no actor) takes its
    // place in the mailbox like a message, but is not an effect from another actor.
    if (event.sourceRef === undefined) {
      if (event.event.type !== 'R') return;
      this.selfSent.add(event.event);
    }
    const target = event.actorRef;
    if (this.status(target) !== 'active' || event.event.type === 'xstate.init') return;
    const queue = this.queued.get(target) ?? [];
    queue.push(event.event);
    this.queued.set(target, queue);
  }

  /**
   * What a plain actor consumed; when its transition threw, the event it threw on
   * too (XState reports no snapshot for that one).
   */
  private consumedBy(ref: AnyActorRef): string[] {
    const out = [...(this.consumed.get(ref) ?? [])];
    const threw = this.queued.get(ref)?.[0] as { type: string } | undefined;
    if (
      this.status(ref) === 'error' &&
      !this.erroredWithSnapshot.has(ref) &&
      threw &&
      !this.selfSent.has(threw)
    ) {
      out.push(threw.type);
    }
    return out;
  }

  private status(ref: { getSnapshot(): unknown }): string | undefined {
    return (ref.getSnapshot() as { status?: string } | undefined)?.status;
  }

  private children(): Record<string, AnyActorRef | undefined> {
    return (this.root.getSnapshot() as { children: Record<string, AnyActorRef | undefined> })
      .children;
  }
}

/** The durable side as stored: the root and its child machines (`root/<id>`). */
export async function durableWorld(store: Store): Promise<World> {
  const snapshot = (await openDurableActor(store, ROOT)).getSnapshot();
  const root = { view: viewOf(snapshot), consumed: await consumedDurable(store, ROOT) };
  const kids: World['kids'] = {};
  const add = async (path: string): Promise<ActorRecord | undefined> => {
    const actorId = `${ROOT}/${path}`;
    const record = (await store.loadActor(actorId))
      ? {
          view: viewOf((await openDurableActor(store, actorId)).getSnapshot()),
          consumed: await consumedDurable(store, actorId),
        }
      : undefined;
    kids[path] = record;
    return record;
  };
  for (const id of root.view.children) {
    if (PROMISE_IDS.has(id)) continue;
    const kid = await add(id);
    // Its own child machines (grandchildren of the root: `root/<id>/<gid>`).
    for (const gid of kid?.view.children ?? []) await add(`${id}/${gid}`);
  }
  return { root, kids };
}

/** How the durable side gets its store: opened again after each restart, or kept (memory). */
export interface StoreSource {
  open(): Store;
  /** The store survives the process (a file, a server): a restart closes and reopens it. */
  reopens: boolean;
}

/**
 * Runs `script` on both sides and throws a Divergence at the first difference; at
 * the end, `verify` must accept the log the durable side wrote.
 */
export async function runBoth(
  /** Builds the machine (called once per side) and the gate its promises wait on. */
  make: () => { machine: AnyStateMachine; gate: Gate },
  script: readonly ScriptStep[],
  source: StoreSource,
  /**
   * Whether the durable side goes on to step `i + 1` without settling after
   * caller's event `i`, when that step is a caller's event too, or a clock step:
   * its send only awaited, so the next event, or a timer the clock fires, arrives
   * while what the first set off may still be delivered (XState's `send` returns
   * after it; the durable actor's next event waits for it,
   * test/cascade-turns.test.ts). Compared after the second.
   */
  hurry: (step: number) => boolean = () => false,
  /**
   * Whether caller's event `i`, followed by another caller's event, is sent
   * without awaiting it: the next one is sent at once (to the actor the runtime
   * holds, not opened again), as a caller that fires several sends together does.
   * Plain XState takes them one after another, each with its cascade; so must the
   * durable tree (runtime.holdTree). The sends are awaited at the next caller's
   * event that is not sent so.
   */
  overlap: (step: number) => boolean = () => false,
): Promise<{
  restarts: number;
  /**
   * Restarts of the script left out: timers of two actors due and armed at one
   * instant, one of them unranked (see {@link timersTied}).
   */
  tiedRestarts: number;
  /** The step at which plain XState's own invocations multiplied past a bound (the rest not run). */
  runaway: number | undefined;
  grandchildren: number;
  treeLookups: number;
}> {
  const { machine: plainMachine, gate: plainGate } = make();
  const { machine, gate } = make();
  const chart = defineChart(machine);
  const plain = new PlainSide(plainMachine, plainGate);
  await plain.start();

  const durableClock = new StepClock(START);
  let store = source.open();
  getRuntime(store, { clock: durableClock, charts: [chart] });
  // What the durable root emitted, told by its runtime (one per process, so
  // watched again after a restart, before `recover()` runs anything).
  const emitted: unknown[] = [];
  const watchEmitted = () =>
    getRuntime(store).observe({
      onEmitted: (notice) => {
        if (notice.actorId === ROOT) emitted.push(json(notice.event));
      },
    });
  watchEmitted();
  await createDurableActor(machine, { id: ROOT, store, clock: durableClock, schemas: false });
  // Promises still waiting for their gate are not waited for; settled ones are.
  const settleDurable = () => settleStore(store);
  await settleDurable();

  let restarts = 0;
  let tiedRestarts = 0;
  /** Grandchildren of the root compared (`<id>/<gid>`, once each). */
  const grandchildren = new Set<string>();
  /** Every child path the durable side had (for the rows that looked up system ids). */
  const paths = new Set<string>();
  const compare = async (step: number): Promise<void> => {
    const world = await durableWorld(store);
    compareWorlds(step, plain.world(), world);
    for (const [path, kid] of Object.entries(world.kids)) {
      paths.add(path);
      if (kid !== undefined && path.includes('/')) grandchildren.add(path);
    }
    if (!isDeepStrictEqual(plain.emitted, emitted)) {
      throw new Divergence(step, 'the events the actor emitted', plain.emitted, emitted);
    }
  };
  await compare(0);

  /** The step whose settle ran away in plain XState (Gate.MAX_RELEASES); the case ends there. */
  let runaway: number | undefined;
  const callerStep = (s: ScriptStep | undefined): s is CallerStep => s !== undefined && 'send' in s;
  for (let i = 0; i < script.length; i++) {
    const step = script[i] as ScriptStep;
    if (callerStep(step) && callerStep(script[i + 1]) && overlap(i)) {
      // A burst (`overlap`): caller's events i..j sent one right after another on
      // both sides, nothing settled between them, then compared once.
      let j = i + 1;
      while (callerStep(script[j + 1]) && overlap(j)) j++;
      const sends: Array<{ to: string; event: { type: string; k?: number } }> = [];
      let parted = false;
      let last = i;
      for (let k = i; k <= j && !parted; k++) {
        const s = script[k] as CallerStep;
        const kidId = 'kid' in s ? plain.kidFor(s) : undefined;
        // A child the durable side does not hold yet (one the burst's own sends
        // spawn) is opened only after the cascade that creates it: no send to it
        // can be made at once, so the burst ends before it.
        const target = 'kid' in s ? (kidId === undefined ? undefined : `${ROOT}/${kidId}`) : ROOT;
        if (k > i && target !== undefined && getRuntime(store).heldActor(target) === undefined) {
          break;
        }
        last = k;
        const taken = plain.send(s);
        parted = taken.parted === true;
        if ('kid' in s) {
          if (taken.kid !== undefined)
            sends.push({ to: `${ROOT}/${taken.kid}`, event: { type: s.send } });
        } else sends.push({ to: ROOT, event: { type: s.send, k: s.k } });
      }
      // Each sent as soon as it is made, in order: to the actor the runtime holds at
      // once, or to one opened first (opening waits for the cascades under way in its
      // tree, as a child a send just spawned exists only once it is created).
      const sending: Array<Promise<Error | undefined>> = [];
      for (const { to, event } of sends) {
        const actor = getRuntime(store).heldActor(to) ?? (await openDurableActor(store, to));
        sending.push(
          actor.send(event).then(
            () => undefined,
            (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
          ),
        );
      }
      const outcomes = await Promise.all(sending);
      for (const [k, error] of outcomes.entries()) {
        if (error === undefined || refused(error)) continue;
        // The last one's transition threw, failing the plain actor (a durable actor
        // refuses it instead, by design): the two part there.
        if (!(parted && k === outcomes.length - 1)) throw error;
      }
      if (parted) break;
      try {
        await settlePlain();
      } catch (error) {
        if (!(error instanceof Runaway)) throw error;
        runaway = last;
        break;
      }
      await settleDurable();
      i = last;
      await compare(i + 1);
      continue;
    }
    let taken: Awaited<ReturnType<PlainSide['step']>>;
    try {
      taken = await plain.step(step);
    } catch (error) {
      if (!(error instanceof Runaway)) throw error;
      runaway = i;
      break;
    }
    const { kid, parted } = taken;
    if ('send' in step && !('kid' in step)) {
      try {
        await (await openDurableActor(store, ROOT)).send({ type: step.send, k: step.k });
      } catch (error) {
        // A caller's event whose transition throws: refused by the durable actor,
        // failing the plain one (by design, docs/durability.md). The two part there.
        if (parted && !refused(error)) break;
        if (!refused(error)) throw error;
      }
    } else if ('kid' in step) {
      if (kid !== undefined) {
        try {
          await (await openDurableActor(store, `${ROOT}/${kid}`)).send({ type: step.send });
        } catch (error) {
          if (!refused(error)) throw error;
        }
      }
    } else if ('settle' in step) {
      const durable = await openDurableActor(store, ROOT);
      try {
        await durable.send({ type: 'SETTLE' });
      } catch (error) {
        if (!refused(error)) throw error;
      }
      const epoch = (plain.root.getSnapshot() as { context: { epoch: number } }).context.epoch;
      await gate.openTo(epoch, settleDurable);
    } else if ('wait' in step) {
      await durableClock.advance(step.wait, settleDurable);
    } else {
      // Timers of different actors due and armed at one instant fire in the order
      // they were armed, which their ranks keep (PendingTimer.rank); of one without
      // a rank (an earlier build's), a restart does not know it.
      if (!(await timersTied(store))) {
        await getRuntime(store).close();
        if (source.reopens) {
          await store.close();
          store = source.open();
        }
        getRuntime(store, { clock: durableClock, charts: [chart] });
        watchEmitted();
        const report = await recover(store, { charts: [chart], clock: durableClock });
        if (process.env['DIFF_DEBUG'])
          console.log(
            JSON.stringify(report.steps),
            JSON.stringify(report.actors.map((a) => [a.actorId, a.action, a.reason])),
          );
        restarts++;
      } else tiedRestarts++;
    }
    const next = script[i + 1];
    const follows = next !== undefined && ('send' in next || 'wait' in next);
    if (callerStep(step) && follows && hurry(i)) continue;
    await settlePlain();
    await settleDurable();
    await compare(i + 1);
  }
  // Steps that found a system id elsewhere in the tree (a row's `systemIds`).
  let treeLookups = 0;
  for (const id of [ROOT, ...[...paths].map((path) => `${ROOT}/${path}`)]) {
    for (const row of (await store.readActorLog(id))?.rows ?? []) {
      if (row.metadata.includes('"systemIds"')) treeLookups++;
    }
  }
  await getRuntime(store).close();
  // The log the case wrote is honest: `verify` replays every actor's to the end.
  const checked = await verify(store, { charts: [chart] });
  if (checked.problems.length > 0 || checked.notVerifiable.length > 0) {
    throw new Error(
      `verify flags an honest log: ${JSON.stringify([...checked.problems, ...checked.notVerifiable])}`,
    );
  }
  // A store that survives restarts is this run's to close; a kept one is the caller's.
  if (source.reopens) await store.close();
  plain.stop();
  return { restarts, tiedRestarts, runaway, grandchildren: grandchildren.size, treeLookups };
}

/** The events an actor's log shows it consumed from effects since it (last) started, in order. */
async function consumedDurable(store: Store, actorId: string): Promise<string[]> {
  const out: string[] = [];
  for (const row of await store.history(actorId)) {
    const meta = JSON.parse(row.metadata) as { source?: string; relay?: unknown; by?: unknown };
    // A child spawned again starts over, as a new actor does in XState.
    if (row.eventType === 'xstate.init') out.length = 0;
    if (meta.source !== 'timer' && meta.source !== 'message' && meta.source !== 'invoke') continue;
    if (meta.relay !== undefined) continue; // sent on, not consumed
    // An action's self.send: XState sees a send from outside (no source actor).
    if (meta.by === 'self') continue;
    const event = JSON.parse(row.event) as { type: string };
    if (event.type === 'xstate.stop') continue;
    out.push(event.type);
  }
  return out;
}

/** An XState actor stopped before it ever ran (its processing status, XState's own). */
function neverStarted(ref: AnyActorRef): boolean {
  const STOPPED = 2;
  return (
    (ref as unknown as { _processingStatus: number })._processingStatus === STOPPED &&
    (ref.getSnapshot() as { status?: string }).status === 'active'
  );
}

/** A caller's event the durable actor refuses where plain XState ignores it. */
export function refused(error: unknown): boolean {
  return (
    error instanceof InvalidTransitionError ||
    (error instanceof InvalidEventError && error.reason === 'unknown_type')
  );
}

/**
 * Whether timers of two different actors are pending for one instant and were
 * armed at one instant, one of them without a rank (an earlier build's). XState
 * fires timers due at once in the order it armed them; a restart arms them again
 * by when they were armed (PendingTimer.at), then by their ranks, which keep
 * that order across actors (one actor's keep theirs).
 */
export async function timersTied(store: Store): Promise<boolean> {
  const instants = new Map<string, Array<{ actorId: string; ranked: boolean }>>();
  for (const t of await store.dueTimers(Number.MAX_SAFE_INTEGER, 10_000)) {
    const row = await store.loadActor(t.actorId);
    const timer = ledgerOf(JSON.parse(row?.snapshot ?? '{}'))?.timers.find(
      (p) => p.key === t.timerId,
    );
    const instant = `${t.dueAt}:${timer?.at ?? '?'}`;
    const ranked = timer?.rank !== undefined;
    const others = instants.get(instant) ?? [];
    if (others.some((o) => o.actorId !== t.actorId && !(o.ranked && ranked))) return true;
    instants.set(instant, [...others, { actorId: t.actorId, ranked }]);
  }
  return false;
}
