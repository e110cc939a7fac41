import type { AnyStateMachine, EventObject } from 'xstate';
import { pino, type Logger } from 'pino';
import type { ChartDefinition } from '../core/chart.ts';
import { ConcurrencyError, LeaseLostError, StoreError } from '../core/errors.ts';
import type { ActorWrite, Store, TimerRow } from '../store/types.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import type { ChartVersioning } from './codec.ts';
import type { DurableActor, TransitionNotice, RejectionNotice } from './actor.ts';

/** Something that wants to know about every transition and rejection of a runtime. */
export interface RuntimeObserver {
  onTransition?(notice: TransitionNotice): void;
  onRejection?(notice: RejectionNotice): void;
  /** An emitted event (`emit(...)` in a chart), delivered after its transition committed. */
  onEmitted?(notice: { actorId: string; machineId: string; event: EventObject; at: number }): void;
  /** A commit failed: state unchanged, the send rejected with `error`. */
  onWriteError?(notice: { actorId: string; error: Error; at: number }): void;
}

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
}

interface PendingWrite {
  write: ActorWrite;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Resolves a machine id to its chart (machine + versioning). */
export interface ChartResolver {
  resolve(machineId: string): { machine: AnyStateMachine; versioning: ChartVersioning } | undefined;
}

/**
 * The per-store engine behind durable actors: it group-commits writes from
 * concurrent sends (one transaction, each send resolved only after it), schedules
 * durable timers, and keeps the live actors of this process.
 *
 * One runtime per store is created on demand by {@link getRuntime}; most code
 * never touches it directly.
 */
export class DurableRuntime {
  readonly store: Store;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxBatch: number;
  readonly conflictRetries: number;
  private readonly observers = new Set<RuntimeObserver>();
  private readonly charts = new Map<string, ChartDefinition>();
  private readonly live = new Map<string, DurableActor<AnyStateMachine>>();
  private queue: PendingWrite[] = [];
  private flushScheduled = false;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timerHandles = new Map<string, unknown>();
  private pollHandle: unknown;
  private pollMs = 0;
  private closed = false;
  /** Worker identity, when leases are on. */
  readonly owner: string | undefined;
  readonly leaseMs: number;
  private readonly held = new Set<string>();
  private renewHandle: unknown;
  /** Set by the factory in actor.ts to avoid an import cycle. */
  static loadActor?: (
    runtime: DurableRuntime,
    actorId: string,
  ) => Promise<DurableActor<AnyStateMachine>>;

  constructor(store: Store, options: RuntimeOptions = {}) {
    this.store = store;
    this.clock = options.clock ?? systemClock;
    this.logger =
      options.logger ??
      pino(
        { name: 'agentcharts', level: process.env['AGENTCHARTS_LOG_LEVEL'] ?? 'silent' },
        pino.destination(2),
      );
    this.maxBatch = options.maxBatch ?? 512;
    this.conflictRetries = options.conflictRetries ?? 0;
    this.owner = options.owner;
    this.leaseMs = options.leaseMs ?? 30_000;
    for (const chart of options.charts ?? []) this.registerChart(chart);
  }

  // ---- leases ----------------------------------------------------------------

  /** Whether this runtime holds the actor's lease (always true without an owner). */
  holds(actorId: string): boolean {
    return this.owner === undefined || this.held.has(actorId);
  }

  /** The fencing token for owner duties, or undefined when leases are off. */
  fence(): { owner: string; now: number } | undefined {
    return this.owner === undefined ? undefined : { owner: this.owner, now: this.clock.now() };
  }

  /**
   * Tries to take (or renew) the leases of `actorIds`, or of up to `limit` unowned
   * or expired actors when no ids are given. Returns the ids now held.
   */
  async acquire(actorIds?: readonly string[], limit = 500): Promise<string[]> {
    if (this.owner === undefined) return actorIds ? [...actorIds] : [];
    const now = this.clock.now();
    const leases = await this.store.acquireLeases({
      owner: this.owner,
      now,
      leaseUntil: now + this.leaseMs,
      limit: actorIds ? actorIds.length : limit,
      actorIds,
    });
    for (const l of leases) this.held.add(l.actorId);
    this.scheduleRenewal();
    return leases.map((l) => l.actorId);
  }

  private scheduleRenewal(): void {
    if (this.renewHandle !== undefined || this.closed || this.owner === undefined) return;
    this.renewHandle = this.clock.setTimeout(
      () => {
        this.renewHandle = undefined;
        void this.renew().finally(() => {
          if (this.held.size > 0) this.scheduleRenewal();
        });
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
  }

  /** Extends every held lease; leases that were lost are dropped (another worker took over). */
  async renew(): Promise<void> {
    if (this.owner === undefined || this.held.size === 0 || this.closed) return;
    const ids = [...this.held];
    const now = this.clock.now();
    try {
      const kept = new Set(
        await this.store.renewLeases({
          owner: this.owner,
          now,
          leaseUntil: now + this.leaseMs,
          actorIds: ids,
        }),
      );
      for (const id of ids) {
        if (!kept.has(id)) {
          this.held.delete(id);
          this.logger.warn(
            { actorId: id, owner: this.owner },
            'lease lost; another worker owns the actor now',
          );
        }
      }
    } catch (error) {
      this.logger.error({ err: error, owner: this.owner }, 'lease renewal failed');
    }
  }

  /** @internal Forgets a lease the store says is gone. */
  dropLease(actorId: string): void {
    this.held.delete(actorId);
  }

  /**
   * Makes a chart loadable by machine id (recover, timers, verify). A partial
   * registration (createDurableActor's machine + versioning) is merged into what is
   * known, so it never drops a recovery policy or event schemas registered earlier.
   */
  registerChart(
    chart: Pick<ChartDefinition, 'machine' | 'version' | 'migrations'> & Partial<ChartDefinition>,
  ): void {
    const existing = this.charts.get(chart.machine.id);
    this.charts.set(chart.machine.id, { ...existing, ...chart } as ChartDefinition);
  }

  chartFor(machineId: string): ChartDefinition | undefined {
    return this.charts.get(machineId);
  }

  observe(observer: RuntimeObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
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

  // ---- live actors -------------------------------------------------------

  /** @internal */
  track(actor: DurableActor<AnyStateMachine>): void {
    this.live.set(actor.id, actor);
  }

  /** @internal */
  untrack(actor: DurableActor<AnyStateMachine>): void {
    if (this.live.get(actor.id) === actor) this.live.delete(actor.id);
  }

  /** The live actor of this process with that id, if any. */
  liveActor(actorId: string): DurableActor<AnyStateMachine> | undefined {
    return this.live.get(actorId);
  }

  /** Returns the live actor or loads it from the store through its registered chart. */
  async actor(actorId: string): Promise<DurableActor<AnyStateMachine>> {
    const live = this.live.get(actorId);
    if (live) return live;
    if (!DurableRuntime.loadActor) throw new Error('durable actor module not loaded');
    return DurableRuntime.loadActor(this, actorId);
  }

  // ---- group commit --------------------------------------------------------

  /**
   * Queues a write for the next group commit; resolves once it is durable and
   * rejects with that write's own error (ConcurrencyError) or the batch's StoreError.
   */
  commit(write: ActorWrite): Promise<void> {
    if (this.closed) {
      return Promise.reject(
        new StoreError({
          operation: 'commit',
          kind: 'closed',
          actorId: write.actorId,
          detail: 'runtime closed',
        }),
      );
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // setImmediate lets every send issued in this turn of the event loop join the batch.
        setImmediate(() => {
          this.flushing = this.flushing.then(() => this.flush());
        });
      }
    });
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.store.commit(batch.map((p) => p.write));
        batch.forEach((p, i) => {
          const error = results[i];
          if (error) p.reject(error);
          else p.resolve();
        });
      } catch (error) {
        const err =
          error instanceof Error
            ? error
            : new StoreError({ operation: 'commit', kind: 'unknown', detail: String(error) });
        for (const p of batch) p.reject(err);
      }
    }
  }

  // ---- durable timers --------------------------------------------------------

  private timerKey(actorId: string, timerId: string): string {
    return `${actorId}\u0000${timerId}`;
  }

  /** @internal Arms an in-process timeout for a committed timer row. */
  schedule(timer: Pick<TimerRow, 'actorId' | 'timerId' | 'dueAt'>): void {
    if (this.closed) return;
    const key = this.timerKey(timer.actorId, timer.timerId);
    const previous = this.timerHandles.get(key);
    if (previous !== undefined) this.clock.clearTimeout(previous);
    const handle = this.clock.setTimeout(() => {
      this.timerHandles.delete(key);
      void this.fireTimer(timer.actorId, timer.timerId);
    }, timer.dueAt - this.clock.now());
    this.timerHandles.set(key, handle);
  }

  /** @internal Disarms an in-process timeout (its row was deleted in a commit). */
  unschedule(actorId: string, timerId: string): void {
    const key = this.timerKey(actorId, timerId);
    const handle = this.timerHandles.get(key);
    if (handle !== undefined) {
      this.clock.clearTimeout(handle);
      this.timerHandles.delete(key);
    }
  }

  /**
   * Delivers a due timer through the actor's normal send path. Exactly once across
   * processes: the commit consumes the timer row, so a second deliverer conflicts.
   * Returns whether this call fired it.
   */
  async fireTimer(actorId: string, timerId: string): Promise<boolean> {
    if (this.closed) return false;
    try {
      if (!this.holds(actorId) && (await this.acquire([actorId])).length === 0) {
        return false; // its lease holder fires it
      }
      const actor = await this.actor(actorId);
      return await actor.deliverTimer(timerId);
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
  async fireDueTimers(limit = 1000): Promise<number> {
    let fired = 0;
    for (;;) {
      const now = this.clock.now();
      const due =
        this.owner === undefined
          ? await this.store.dueTimers(now, limit)
          : await this.store.claimDueTimers({
              owner: this.owner,
              now,
              claimUntil: now + this.leaseMs,
              limit,
            });
      if (due.length === 0) return fired;
      let progressed = false;
      for (const t of due) {
        if (await this.fireTimer(t.actorId, t.timerId)) {
          fired++;
          progressed = true;
        }
      }
      if (!progressed || due.length < limit) return fired;
    }
  }

  /**
   * Polls the store for due timers every `intervalMs` (timers set by other
   * processes, or whose process died). Idempotent; `close()` stops it.
   */
  startTimerPolling(intervalMs = 1000): void {
    if (this.pollMs) return;
    this.pollMs = intervalMs;
    const tick = () => {
      this.fireDueTimers()
        .catch((error: unknown) => this.logger.error({ err: error }, 'timer poll failed'))
        .finally(() => {
          if (!this.closed) this.pollHandle = this.clock.setTimeout(tick, this.pollMs);
        });
    };
    this.pollHandle = this.clock.setTimeout(tick, 0);
  }

  /** Waits for queued commits to finish. */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.flushScheduled) {
      await new Promise<void>((r) => setImmediate(r));
      await this.flushing;
    }
    await this.flushing;
  }

  /** Stops timers and polling, waits for pending commits. Does not close the store. */
  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
    if (this.pollHandle !== undefined) this.clock.clearTimeout(this.pollHandle);
    if (this.renewHandle !== undefined) this.clock.clearTimeout(this.renewHandle);
    if (this.owner !== undefined && this.held.size > 0) {
      await this.store.releaseLeases(this.owner, [...this.held]).catch((error: unknown) => {
        this.logger.error({ err: error }, 'could not release leases');
      });
      this.held.clear();
    }
    for (const handle of this.timerHandles.values()) this.clock.clearTimeout(handle);
    this.timerHandles.clear();
    for (const actor of [...this.live.values()]) actor.detach();
    runtimes.delete(this.store);
  }
}

const runtimes = new WeakMap<Store, DurableRuntime>();

/** The runtime of a store, created on first use with `options`. */
export function getRuntime(store: Store, options?: RuntimeOptions): DurableRuntime {
  let runtime = runtimes.get(store);
  if (!runtime) {
    runtime = new DurableRuntime(store, options);
    runtimes.set(store, runtime);
  } else {
    if (options?.owner !== undefined && options.owner !== runtime.owner) {
      throw new Error(
        `the runtime of this store already runs as owner "${runtime.owner ?? '(none)'}"; open another store handle for owner "${options.owner}"`,
      );
    }
    for (const chart of options?.charts ?? []) runtime.registerChart(chart);
  }
  return runtime;
}
