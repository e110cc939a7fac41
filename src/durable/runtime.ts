/**
 * The per-store engine behind durable actors: the actors live in this process,
 * the charts it can load, group commit, timers, leases and the observers that
 * want to hear about transitions. One runtime per store (`getRuntime`); most code
 * never touches it directly. It imports no observer: observers subscribe.
 */
import { pino, type Logger } from 'pino';
import type { ChartDefinition } from '../core/chart.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { ConcurrencyError, LeaseLostError, StoreError } from '../core/errors.ts';
import type { ActorWrite, MessageRow, Store } from '../store/types.ts';
import { treeOf } from './actor-ids.ts';
import { childMachines } from './actor-kinds.ts';
import { Committer } from './commit.ts';
import { Courier } from './deliver.ts';
import type { TimerArm } from './placed-timers.ts';
import { Leases } from './leases.ts';
import type { LiveActor, RuntimeObserver } from './notices.ts';
import { ChartRegistry, childRegistration, type ChartRegistration } from './registry.ts';
import { TimerScheduler, type TimerWake } from './timers.ts';
import type { Rank } from './ledger.ts';

export type { RuntimeObserver } from './notices.ts';

export interface RuntimeOptions {
  clock?: Clock;
  /** pino logger; default: JSON to stderr at `AGENTCHARTS_LOG_LEVEL` (default `silent`). */
  logger?: Logger;
  /** Charts known by machine id, for loading actors by id (recover, timers, verify). */
  charts?: Iterable<ChartDefinition>;
  /** Largest number of writes in one group commit. Default 512. */
  maxBatch?: number;
  /**
   * Worker identity for multi-process deployments. When set, this runtime takes
   * leases on the actors it creates, loads or recovers; only a lease holder fires
   * an actor's timers and applies recovery, and those writes are fenced by the
   * lease. Plain sends from any worker stay ordered by compare-and-set.
   */
  owner?: string;
  /** Lease length in ms (default 30,000); renewed every third of it. */
  leaseMs?: number;
  /**
   * How many times a send that lost a compare-and-set race reloads and tries again
   * before rejecting with ConcurrencyError (default 0: the caller decides). Per
   * send: `actor.send(event, metadata, { conflictRetries })`.
   */
  conflictRetries?: number;
  /**
   * Most actors kept in memory (default: no limit). Past it, the least recently
   * used idle ones are dropped from the cache; see {@link DurableRuntime.limitLiveActors}.
   */
  maxLiveActors?: number;
}

/** Loads a stored actor into this runtime by id (provided by whoever builds the runtime). */
export type ActorLoader = (runtime: DurableRuntime, actorId: string) => Promise<LiveActor>;

/** What the runtime needs from the module that builds actors (it imports none of it). */
export interface RuntimeHooks {
  load: ActorLoader;
  /** Creates the child actor a spawn message asks for, consuming the message. */
  spawn: (runtime: DurableRuntime, message: MessageRow, base?: Rank) => Promise<void>;
}

const noop = (): void => {};

/** A place in a tree's turns taken ahead of its event (DurableRuntime.reserveTurn). */
export interface ReservedTurn {
  /** Its order among the places reserved in this runtime. */
  readonly place: number;
  /** Runs `work` in the place; the first of `use` and `pass` decides. */
  use(work: () => Promise<void>): Promise<void>;
  /** Gives the place up. */
  pass(): void;
}

export class DurableRuntime {
  readonly store: Store;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly conflictRetries: number;
  /** Worker identity, when leases are on. */
  readonly owner: string | undefined;
  readonly leaseMs: number;
  readonly leases: Leases;
  readonly timers: TimerScheduler;
  /** @internal The place in the arm order of a step no delivery nests (TimerScheduler.nextBase). */
  nextBase(): Rank {
    return this.timers.nextBase();
  }
  readonly courier: Courier;
  private readonly committer: Committer;
  private readonly charts = new ChartRegistry();
  private readonly observers = new Set<RuntimeObserver>();
  /** The actors of this process, least recently used first when a limit is set. */
  private readonly live = new Map<string, LiveActor>();
  private maxLive = Number.POSITIVE_INFINITY;
  /**
   * Actors dropped from `live` that someone may still hold: `actor(id)` hands the
   * same object back while it exists, so one process never has two handles (two
   * mailboxes) for one actor.
   */
  private readonly evicted = new Map<string, WeakRef<LiveActor>>();
  private readonly collected = new FinalizationRegistry<string>((id) => {
    if (this.evicted.get(id)?.deref() === undefined) this.evicted.delete(id);
  });
  private closed = false;

  private readonly loader: ActorLoader;

  constructor(store: Store, options: RuntimeOptions, hooks: RuntimeHooks) {
    this.loader = hooks.load;
    this.store = store;
    this.clock = options.clock ?? systemClock;
    this.logger =
      options.logger ??
      pino(
        { name: 'agentcharts', level: process.env['AGENTCHARTS_LOG_LEVEL'] ?? 'silent' },
        pino.destination(2),
      );
    this.conflictRetries = options.conflictRetries ?? 0;
    this.owner = options.owner;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.committer = new Committer(store, options.maxBatch ?? 512, (write) =>
      this.courier.deliversElsewhere(write.actorId),
    );
    this.leases = new Leases(store, this.clock, this.logger, this.owner, this.leaseMs);
    this.timers = new TimerScheduler(
      store,
      this.clock,
      this.logger,
      (actorId, timerId, current, firedAt) => this.fireWake(actorId, timerId, current, firedAt),
      this.owner,
      this.leaseMs,
    );
    this.courier = new Courier({
      store,
      logger: this.logger,
      owns: async (actorId) => this.holds(actorId) || (await this.acquire([actorId])).length > 0,
      actor: (actorId) => this.actor(actorId),
      spawn: (message, base) => hooks.spawn(this, message, base),
    });
    for (const chart of options.charts ?? []) this.registerChart(chart);
    if (options.maxLiveActors !== undefined) this.limitLiveActors(options.maxLiveActors);
    this.unlistenRetries = store.onRetry?.((retry) =>
      this.logger.warn(retry, 'the store ran a statement again: the database rolled it back'),
    );
  }

  /** Stops logging the store's runs again (Store.onRetry), once closed. */
  private readonly unlistenRetries: (() => void) | undefined;

  // ---- charts and observers ----------------------------------------------------

  registerChart(chart: ChartRegistration): void {
    if (!this.charts.register(chart)) return;
    // Child machines are loaded by id too (timers, recovery, messages), at their
    // parent's version: a child machine that changed with its parent's chart is
    // told apart from the one before (see childRegistration).
    for (const child of childMachines(chart.machine)) {
      const known = this.charts.get(child.id);
      if (!known || known.version < chart.version) {
        this.charts.register(childRegistration(child, chart.version));
      }
    }
  }

  chartFor(machineId: string): ChartRegistration | undefined {
    return this.charts.get(machineId);
  }

  /**
   * @internal The chart of `machineId`, for loading actor `actorId`: StoreError
   * (`load`, kind `unknown_machine`) when no such chart is registered.
   */
  requireChart(machineId: string, actorId: string): ChartRegistration {
    const chart = this.charts.get(machineId);
    if (!chart) {
      throw new StoreError({
        operation: 'load',
        kind: 'unknown_machine',
        actorId,
        detail: `machine "${machineId}" is not registered`,
      });
    }
    return chart;
  }

  observe(observer: RuntimeObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** Whether anyone listens for `kind`: nothing is built for observers nobody has. */
  observed(kind: keyof RuntimeObserver): boolean {
    if (this.observers.size === 0) return false;
    for (const observer of this.observers) if (observer[kind]) return true;
    return false;
  }

  /** Calls every observer; an observer that throws is logged and never affects the transition. */
  notify<K extends keyof RuntimeObserver>(
    kind: K,
    notice: Parameters<NonNullable<RuntimeObserver[K]>>[0],
  ): void {
    for (const observer of this.observers) {
      const fn = observer[kind] as ((n: typeof notice) => void) | undefined;
      if (!fn) continue;
      try {
        fn.call(observer, notice);
      } catch (error) {
        this.logger.error({ err: error, kind }, 'observer threw; transition unaffected');
      }
    }
  }

  // ---- live actors -----------------------------------------------------------

  /**
   * Keeps at most `max` actors in memory (a server that touches every actor of a
   * large store). When more are loaded, the least recently used *idle* ones are
   * dropped: nothing queued or running for them, no listener, and no timer that
   * only this process would fire (unless timer polling is on, which finds it in
   * the store). Actors that are busy stay, so the limit can be passed while they
   * are; dropping one writes nothing and loses nothing, since its state is in the
   * store. A handle someone still holds keeps working: `actor(id)` returns that
   * same handle, which reloads before its next send.
   */
  limitLiveActors(max: number): void {
    if (!(max >= 1)) throw new RangeError(`maxLiveActors must be at least 1, got ${max}`);
    this.maxLive = max;
    this.evictIdle();
  }

  /** Actors held in memory now (see {@link limitLiveActors}). */
  get liveCount(): number {
    return this.live.size;
  }

  /** @internal */
  track(actor: LiveActor): void {
    this.live.set(actor.id, actor);
    this.evicted.delete(actor.id);
    if (this.live.size > this.maxLive) this.evictIdle(actor);
  }

  /** @internal */
  untrack(actor: LiveActor): void {
    if (this.live.get(actor.id) === actor) {
      this.live.delete(actor.id);
      this.timers.unscheduleAll(actor.id);
    }
    if (this.evicted.get(actor.id)?.deref() === actor) this.evicted.delete(actor.id);
  }

  /**
   * @internal A handle is used (every send): most recently used now, and back in
   * the cache, reading the store first, when it had been dropped from it.
   */
  touch(actor: LiveActor): void {
    if (this.maxLive === Number.POSITIVE_INFINITY) return;
    const id = actor.id;
    if (this.live.get(id) === actor) {
      this.live.delete(id);
      this.live.set(id, actor);
    } else if (this.evicted.get(id)?.deref() === actor) {
      actor.markStale();
      this.track(actor);
    }
  }

  /** Drops least recently used idle actors until the limit holds (a bounded scan). */
  private evictIdle(keep?: LiveActor): void {
    let budget = 64 + this.live.size - this.maxLive;
    for (const [id, actor] of this.live) {
      if (this.live.size <= this.maxLive || budget-- <= 0) return;
      // The one just loaded or used is never the one to go.
      if (actor === keep) continue;
      if (!actor.idle() || (this.timers.hasScheduled(id) && !this.timers.polling)) continue;
      this.live.delete(id);
      this.timers.unscheduleAll(id);
      this.evicted.set(id, new WeakRef(actor));
      this.collected.register(actor, id);
    }
  }

  /** The live actor of this process with that id, if any (in the cache). */
  liveActor(actorId: string): LiveActor | undefined {
    return this.live.get(actorId);
  }

  /**
   * The handle of this process for that actor, if any: in the cache, or dropped from
   * it while someone still holds it (that same handle comes back, back in the
   * cache, so one process never has two handles, two mailboxes, for one actor).
   */
  heldActor(actorId: string): LiveActor | undefined {
    const cached = this.live.get(actorId);
    if (cached) return cached;
    const held = this.evicted.get(actorId)?.deref();
    if (held) this.touch(held);
    return held;
  }

  /** Returns the held actor or loads it from the store through its registered chart. */
  actor(actorId: string): Promise<LiveActor> {
    const cached = this.heldActor(actorId);
    if (!cached) return this.loader(this, actorId);
    this.touch(cached);
    return Promise.resolve(cached);
  }

  // ---- commits, timers, leases -------------------------------------------------

  /** Queues a write for the next group commit; the committer batches writes that arrive together. */
  commit(write: ActorWrite): Promise<void> {
    return this.commitPlacing(write, undefined);
  }

  /**
   * @internal {@link commit}, with the timers its step armed after some of its
   * messages, armed by the courier in their place.
   */
  commitPlacing(
    write: ActorWrite,
    arms: readonly TimerArm[] | undefined,
    /** The step's place in the arm order (Effects.base): its messages' deliveries nest under it. */
    base?: Rank,
  ): Promise<void> {
    const done = this.committer.commit(write);
    const batch = {
      from: write.actorId,
      fromSeq: write.transition.seq,
      messages: write.messagesOut ?? [],
      arms,
      base,
    };
    this.courier.submitting(batch, done);
    if (arms === undefined) return done;
    return done.catch((error: unknown) => {
      this.courier.unplace(batch);
      throw error;
    });
  }

  /** Invoked promises running in this process (see {@link drain}). */
  readonly invokesRunning = new Set<Promise<void>>();
  /** Invokes doing store work: claiming their step, or recording and delivering their outcome. */
  readonly invokesSettling = new Set<Promise<void>>();

  /**
   * Waits for timer firings under way, queued commits, the message deliveries they
   * started and the invoked promises running here (and what their outcomes commit)
   * to finish. With `{ invokes: 'settled' }` it does not wait for promises still
   * running, only for the outcomes of those that have settled to be committed.
   */
  async drain(options: { invokes?: 'all' | 'settled' } = {}): Promise<void> {
    const invokes = options.invokes === 'settled' ? this.invokesSettling : this.invokesRunning;
    do {
      await this.timers.idle();
      await this.committer.drain();
      await this.courier.idle();
      await Promise.all([...invokes, ...this.invokesSettling]);
      // What a settled invoke committed may have queued messages (a spawned child's
      // greeting): they are delivered before the runtime counts as drained.
      await this.committer.drain();
    } while (
      invokes.size > 0 ||
      this.invokesSettling.size > 0 ||
      this.timers.busy ||
      this.courier.busy
    );
  }

  /** @internal Arms the in-process wake-up of a committed timer (TimerScheduler.schedule). */
  schedule(timer: TimerWake): void {
    if (!this.closed) this.timers.schedule(timer);
  }

  /** @internal Disarms the wake-up of a timer row deleted in a commit. */
  unschedule(actorId: string, timerId: string): void {
    this.timers.unschedule(actorId, timerId);
  }

  holds(actorId: string): boolean {
    return this.leases.holds(actorId);
  }

  fence(): { owner: string; now: number } | undefined {
    return this.leases.fence();
  }

  acquire(actorIds?: readonly string[], limit = 500): Promise<string[]> {
    return this.leases.acquire(actorIds, limit);
  }

  /** @internal Forgets a lease the store says is gone. */
  dropLease(actorId: string): void {
    this.leases.drop(actorId);
  }

  /**
   * Per tree ({@link treeOf}), the last external event queued for its turn: a
   * caller's send that waits for a cascade, or a timer (see {@link turnFor}).
   */
  private readonly turns = new Map<string, Promise<unknown>>();

  /** Places reserved so far ({@link reserveTurn}): each one's order. */
  private reserved = 0;

  /**
   * @internal When a caller's event to `actorId` may go: undefined for at once,
   * or a promise. XState runs an event and the cascade of messages it sets off
   * synchronously, so the next event from outside (a caller's send, a timer)
   * comes after that cascade. A durable cascade commits step by step; an event
   * from outside that arrives while one is under way in its actor's tree waits
   * for it, and for the commits with messages submitted there, behind the
   * events already waiting. Nothing waits in a tree with no cascade under way.
   */
  turnFor(actorId: string): Promise<void> | undefined {
    const tree = treeOf(actorId);
    const queued = this.turns.get(tree);
    if (queued === undefined && !this.courier.busyIn(tree)) return undefined;
    const turn = (queued ?? Promise.resolve()).then(() => this.courier.settledFor(actorId, false));
    this.queueTurn(tree, turn);
    return turn;
  }

  /**
   * @internal Holds `actorId`'s tree for a caller's send that cannot submit its
   * commit at once (it waits for its turn or for its actor's earlier events, or
   * reads the store first): the events from outside that arrive meanwhile wait
   * ({@link turnFor}) until the returned release is called, once the send's
   * commit is submitted or the send has ended, and then for the cascade that
   * commit sets off. XState takes events from outside in the order they are
   * sent, each with its cascade; without the hold, a later send to another
   * actor of the tree went ahead of an earlier one still on its way.
   */
  holdTree(actorId: string): () => void {
    const tree = treeOf(actorId);
    let release: () => void = noop;
    const held = new Promise<void>((resolve) => (release = resolve));
    this.queueTurn(
      tree,
      (this.turns.get(tree) ?? Promise.resolve()).then(() => held),
    );
    return release;
  }

  /**
   * @internal A place in `actorId`'s turns ({@link turnFor}), taken now for an
   * event that may come at once: an invoked promise whose commit has just
   * started it. XState calls the promise as it enters the state, and a promise
   * that settles at once has its result taken before the next event from
   * outside (the caller's next send, a timer falling due). A durable invoke is
   * called once its step's claim is on record, a store write later; the place
   * holds the events from outside that arrive meanwhile. `use(work)` runs `work`
   * in the place, after the cascades under way in the tree; `pass()` gives the
   * place up (the promise did not settle at once) and the events behind it go on.
   */
  reserveTurn(actorId: string): ReservedTurn {
    let decide: (work: (() => Promise<void>) | undefined) => void = noop;
    const decided = new Promise<(() => Promise<void>) | undefined>((resolve) => (decide = resolve));
    const run = (this.turns.get(treeOf(actorId)) ?? Promise.resolve())
      .then(() => decided)
      .then(async (work) => {
        if (work === undefined) return;
        await this.courier.settledFor(actorId, true);
        await work();
      });
    this.queueTurn(treeOf(actorId), run.then(noop, noop));
    return {
      place: ++this.reserved,
      use: (work) => {
        decide(work);
        return run;
      },
      pass: () => decide(undefined),
    };
  }

  /**
   * @internal `value`, once the cascade of messages under way in `actorId`'s tree
   * has been delivered: a caller's send resolves after the cascade it set off, as
   * XState's `send` returns after it. So the timers that cascade arms, and those
   * its step arms after its messages (./placed-timers.ts), are armed when the
   * send resolves: a clock moved right after it fires them as XState's would.
   * At once when nothing is under way in the tree. The outcome of a promise it
   * started is not waited for, even one that settles at once (docs/durability.md).
   */
  afterCascade<T>(actorId: string, value: T): T | Promise<T> {
    if (!this.courier.busyIn(treeOf(actorId))) return value;
    const cascade = this.courier.settledFor(actorId, false);
    // A runtime closed meanwhile delivers nothing more: the send has its commit.
    return Promise.race([cascade, this.closing]).then(() => value);
  }

  /** Resolves when {@link close} is called. */
  /** @internal Whether {@link close} was called (what is sent from now on is not taken). */
  get isClosed(): boolean {
    return this.closeCalled;
  }
  private closeCalled = false;
  private markClosing: () => void = noop;
  private readonly closing = new Promise<void>((resolve) => (this.markClosing = resolve));

  /** Makes `turn` the one the next external event of `tree` waits for. */
  private queueTurn(tree: string, turn: Promise<unknown>): void {
    this.turns.set(tree, turn);
    void turn.then(() => {
      if (this.turns.get(tree) === turn) this.turns.delete(tree);
    });
  }

  /**
   * Delivers a due timer through the actor's normal send path. Exactly once across
   * processes: the commit consumes the timer row, so a second deliverer conflicts.
   * Returns whether this call fired it.
   *
   * As XState's scheduler runs a delayed event as a task of its own, after the
   * synchronous run under way: the timer takes its turn in its actor's tree
   * (`turnFor`), and the next event from outside waits for its firing and
   * what that sets off. So timers of one tree go one at a time, in the order they
   * fell due; timers of other trees do not wait for them.
   */
  fireTimer(actorId: string, timerId: string): Promise<boolean> {
    return this.fireWake(actorId, timerId, undefined);
  }

  /**
   * {@link fireTimer} for a wake-up of this process: `current` tells, when its
   * turn comes, whether the timer is still the one it was armed for (FireTimer).
   */
  private fireWake(
    actorId: string,
    timerId: string,
    current: (() => boolean) | undefined,
    firedAt?: number,
  ): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return this.inTurn(actorId, () => this.fireNow(actorId, timerId, current, firedAt));
  }

  /**
   * @internal Runs `work`, an event from outside `actorId`'s tree that XState
   * runs as a task of its own (a timer, an invoked promise's outcome), in its turn
   * ({@link turnFor}): after the cascades under way in the tree, including passes
   * over pending messages, and after the events queued before it; the next event
   * waits for `work` and what it sets off.
   */
  inTurn<T>(actorId: string, work: () => Promise<T>): Promise<T> {
    const tree = treeOf(actorId);
    const run = (this.turns.get(tree) ?? Promise.resolve())
      .then(() => this.courier.settledFor(actorId, true))
      .then(work);
    this.queueTurn(tree, run.then(noop, noop));
    return run;
  }

  /** {@link fireTimer} once its turn has come; never rejects. */
  private async fireNow(
    actorId: string,
    timerId: string,
    current: (() => boolean) | undefined,
    firedAt?: number,
  ): Promise<boolean> {
    if (this.closed || current?.() === false) return false;
    try {
      if (!this.holds(actorId) && (await this.acquire([actorId])).length === 0) {
        return false; // its lease holder fires it
      }
      const actor = await this.actor(actorId);
      return await actor.deliverTimer(timerId, current, firedAt);
    } catch (error) {
      if (error instanceof ConcurrencyError) return false;
      if (error instanceof LeaseLostError) {
        this.dropLease(actorId);
        return false;
      }
      this.logger.error(
        { err: error, actorId, timerId },
        'timer delivery failed; it stays pending',
      );
      return false;
    }
  }

  /** Fires every timer due now (from any process), earliest first. Returns how many fired here. */
  fireDueTimers(limit = 1000): Promise<number> {
    return this.timers.fireDue(limit);
  }

  /** Polls the store every `intervalMs` for due timers and pending messages (other processes'). */
  startTimerPolling(intervalMs = 1000): void {
    this.timers.startPolling(intervalMs, () => this.courier.deliverAll());
  }

  /** Stops timers and polling, waits for pending commits. Does not close the store. */
  async close(): Promise<void> {
    this.closeCalled = true;
    this.markClosing();
    this.courier.close();
    await this.committer.close();
    this.closed = true;
    this.timers.close();
    await this.leases.close();
    for (const actor of [...this.live.values()]) actor.detach();
    this.unlistenRetries?.();
    this.onClose?.();
  }

  /** @internal Set by whoever keeps the runtime per store, to forget it when closed. */
  onClose: (() => void) | undefined;
}
