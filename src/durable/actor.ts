import {
  initialTransition,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type EventObject,
  type InputFrom,
  type SnapshotFrom,
  type Subscription,
} from 'xstate';
import type { Logger } from 'pino';
import type { ChartDefinition, SnapshotMigration } from '../core/chart.ts';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  LeaseLostError,
  StoreError,
  UncertainStepError,
} from '../core/errors.ts';
import { validateEvent, validateInput, type EventSchemas } from '../strict/events.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorRow, ActorStatus, Store, TimerRow, TransitionRow } from '../store/types.ts';
import type { Clock } from '../core/clock.ts';
import { decodeActorRow, encodeSnapshot, type ChartVersioning } from './codec.ts';
import { GENESIS_HASH, hashTransition } from './hash.ts';
import type { InspectorLike } from '../inspect/inspector.ts';
import { pureTransition } from './pure.ts';
import { DurableRuntime, getRuntime } from './runtime.ts';

/** Where an event came from, recorded in the transition row's metadata. */
export type EventSource = 'send' | 'timer' | 'recover';

/** Told to subscribers after a transition committed. */
export interface TransitionNotice {
  actorId: string;
  machineId: string;
  /** Actor version after the transition (= transition row seq). */
  version: number;
  /** `null` when the actor was created. */
  from: string | null;
  to: string;
  event: EventObject;
  source: EventSource | 'create';
  at: number;
  status: ActorStatus;
  snapshot: AnyMachineSnapshot;
  /** The snapshot before the transition (undefined on creation). */
  previous: AnyMachineSnapshot | undefined;
}

/** Told to observers when an event was refused (nothing changed). */
export interface RejectionNotice {
  actorId: string;
  machineId: string;
  state: string;
  eventType: string | undefined;
  error: InvalidEventError | InvalidTransitionError;
  at: number;
}

export interface DurableActorOptions<TLogic extends AnyStateMachine> {
  /** Actor id; the key of its row, its history and its steps. */
  id: string;
  store: Store;
  /** Input for a new actor (ignored when the actor already exists). */
  input?: InputFrom<TLogic>;
  clock?: Clock;
  logger?: Logger;
  /** Snapshot version of the chart (default 1) and migrations from older ones. */
  version?: number;
  migrations?: Readonly<Record<number, SnapshotMigration>>;
  schemas?: EventSchemas;
  maxEventBytes?: number;
  /** `load-or-create` (default), `load` (must exist) or `create` (must not exist). */
  mode?: 'load-or-create' | 'load' | 'create';
  /** Extra metadata recorded on the creation row (JSON-serialisable). */
  metadata?: Record<string, unknown>;
  /**
   * The user the actor works for (seed 000's `user_id`), recorded at creation and
   * indexed for "active agents of a user" queries.
   */
  userId?: string;
  /**
   * Shows the actor in the Stately inspector: pass `createWebSocketInspector()` (or
   * any `{ inspect }` observer) from `@statelyai/inspect`. Every committed
   * transition is reported with the machine definition.
   */
  inspect?: InspectorLike;
}

/** What a reconcile hook decides about an uncertain step. */
export type StepReconciliation =
  | { status: 'done'; result: unknown }
  /** The side effect did not happen: the next `step()` call runs it again. */
  | { status: 'not_done'; reason: string };

export interface UncertainStep {
  key: string;
  actorId: string;
  name: string;
  startedAt: number;
  attempts: number;
}

/** Settles an uncertain step, e.g. by asking the payment provider whether the refund exists. */
export type ReconcileHook = (
  step: UncertainStep,
) => Promise<StepReconciliation> | StepReconciliation;

interface Effect {
  type: string;
  exec: ((info: unknown, params: unknown) => void) | undefined;
  info: unknown;
  params: unknown;
}

interface Planned {
  timersSet: TimerRow[];
  timersCancel: string[];
  emitted: EventObject[];
  effects: Effect[];
}

/**
 * Splits the actions `transition()` returned into durable timer changes (delayed
 * raises and cancels), emitted events and user effects, which run after commit.
 */
function planActions(actorId: string, now: number, actions: readonly unknown[]): Planned {
  const planned: Planned = { timersSet: [], timersCancel: [], emitted: [], effects: [] };
  for (const raw of actions) {
    const action = raw as Effect & { params?: Record<string, unknown> };
    const params = (action.params ?? {}) as {
      delay?: number;
      id?: string;
      event?: EventObject;
      sendId?: string;
    };
    switch (action.type) {
      case 'xstate.raise':
        if (typeof params.delay === 'number' && params.event) {
          const timerId = params.id ?? `raise:${params.event.type}`;
          planned.timersSet.push({
            actorId,
            timerId,
            event: JSON.stringify(params.event),
            dueAt: now + params.delay,
          });
          planned.timersCancel = planned.timersCancel.filter((t) => t !== timerId);
        }
        break;
      case 'xstate.cancel':
        if (typeof params.sendId === 'string') {
          const id = params.sendId;
          planned.timersSet = planned.timersSet.filter((t) => t.timerId !== id);
          planned.timersCancel.push(id);
        }
        break;
      case 'xstate.emit':
        if (params.event) planned.emitted.push(params.event);
        break;
      default:
        // Other built-ins (assign, log, sendTo, spawn) are either applied inside the
        // pure transition or unsupported for durable charts; user actions run after commit.
        if (!action.type.startsWith('xstate.')) planned.effects.push(action);
    }
  }
  return planned;
}

/**
 * A persisted XState actor: every accepted event is validated, transitioned with
 * the pure `transition()`, and committed (snapshot compare-and-set, hash-chained
 * audit row, timer changes) in one store transaction before anything else
 * happens. Sends to one actor are serialised through a mailbox.
 */
export class DurableActor<TLogic extends AnyStateMachine> {
  readonly id: string;
  readonly machine: TLogic;
  readonly runtime: DurableRuntime;
  private readonly versioning: ChartVersioning;
  private readonly schemas: EventSchemas | undefined;
  private readonly maxEventBytes: number | undefined;
  private snapshot: AnyMachineSnapshot;
  private row: ActorRow;
  private tail: Promise<unknown> = Promise.resolve();
  private stale = false;
  private readonly listeners = new Set<(notice: TransitionNotice) => void>();
  private readonly emittedListeners = new Map<string, Set<(event: EventObject) => void>>();
  private readonly stepsInFlight = new Map<string, Promise<unknown>>();

  /** @internal Use {@link createDurableActor}. */
  constructor(
    runtime: DurableRuntime,
    machine: TLogic,
    versioning: ChartVersioning,
    row: ActorRow,
    snapshot: AnyMachineSnapshot,
    options: { schemas?: EventSchemas | undefined; maxEventBytes?: number | undefined } = {},
  ) {
    this.runtime = runtime;
    this.machine = machine;
    this.versioning = versioning;
    this.id = row.id;
    this.row = row;
    this.snapshot = snapshot;
    this.schemas = options.schemas;
    this.maxEventBytes = options.maxEventBytes;
  }

  /** Current committed snapshot. */
  getSnapshot(): SnapshotFrom<TLogic> {
    return this.snapshot as SnapshotFrom<TLogic>;
  }

  /** Committed version (number of transition rows). */
  get version(): number {
    return this.row.version;
  }

  /** State label of the current snapshot. */
  get state(): string {
    return this.row.state;
  }

  /**
   * Validates, transitions and durably commits one event; resolves with the new
   * snapshot once it is on disk. Rejects with InvalidEventError or
   * InvalidTransitionError (nothing written), ConcurrencyError (another writer
   * moved the actor: it reloads on the next send) or StoreError (state unchanged).
   *
   * @example
   * const task = await createDurableActor(taskLifecycle.machine, { id: 'refund-42', store, input });
   * await task.send({ type: 'START' });
   */
  send(
    event: EventFromLogic<TLogic>,
    metadata?: Record<string, unknown>,
    options: { conflictRetries?: number } = {},
  ): Promise<SnapshotFrom<TLogic>> {
    const retries = options.conflictRetries ?? this.runtime.conflictRetries;
    return this.enqueue(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.process(event, 'send', { metadata });
        } catch (error) {
          // A lost race marked the actor stale: the next attempt reloads and decides
          // on the stored state (possibly InvalidTransitionError now).
          if (!(error instanceof ConcurrencyError) || attempt >= retries) throw error;
        }
      }
    });
  }

  /** @internal Sends on behalf of recovery (recorded with source `recover`). */
  sendFromRecovery(event: EventObject, reason: string): Promise<SnapshotFrom<TLogic>> {
    return this.enqueue(() =>
      this.process(event, 'recover', { fenced: true, metadata: { reason } }),
    );
  }

  /**
   * @internal Fires one of this actor's durable timers, consuming its row in the
   * same commit. Returns false when the timer is gone (fired or cancelled elsewhere).
   */
  deliverTimer(timerId: string): Promise<boolean> {
    return this.enqueue(async () => {
      for (let attempt = 0; attempt < 3; attempt++) {
        if (this.stale) await this.reloadNow();
        const timer = (await this.runtime.store.timers(this.id)).find((t) => t.timerId === timerId);
        if (!timer) return false;
        if (timer.dueAt > this.runtime.clock.now()) {
          // Not due yet: Node timers may wake a millisecond early, and another process
          // may have re-armed this timer id for later. Wait for the stored due time.
          this.runtime.schedule(timer);
          return false;
        }
        const event = JSON.parse(timer.event) as EventObject;
        try {
          await this.process(event, 'timer', {
            consumeTimer: timerId,
            internal: true,
            fenced: true,
          });
          return true;
        } catch (error) {
          if (error instanceof ConcurrencyError) continue; // reload and look again
          throw error;
        }
      }
      return false;
    });
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async reloadNow(): Promise<void> {
    const row = await this.runtime.store.loadActor(this.id);
    if (!row) throw new StoreError({ operation: 'load', kind: 'not_found', actorId: this.id });
    this.snapshot = decodeActorRow(this.machine, this.versioning, row);
    this.row = row;
    this.stale = false;
  }

  /** Re-reads the actor from the store (after a ConcurrencyError, or to see other writers). */
  reload(): Promise<void> {
    return this.enqueue(() => this.reloadNow());
  }

  private async process(
    event: unknown,
    source: EventSource,
    options: {
      consumeTimer?: string;
      internal?: boolean;
      /** An owner duty (timer, recovery): fenced by the lease when leases are on. */
      fenced?: boolean;
      metadata?: Record<string, unknown> | undefined;
    },
  ): Promise<SnapshotFrom<TLogic>> {
    if (this.stale) await this.reloadNow();
    const runtime = this.runtime;
    const now = runtime.clock.now();
    const previous = this.snapshot;
    const from = this.row.state;

    let parsed: EventObject;
    let next: AnyMachineSnapshot;
    let actions: readonly unknown[];
    let legal: boolean;
    try {
      parsed = options.internal
        ? (event as EventObject)
        : validateEvent(this.machine, event, {
            actorId: this.id,
            schemas: this.schemas,
            maxBytes: this.maxEventBytes,
          });
      [next, actions, legal] = this.step1(previous, parsed);
      if (!legal && (options.internal || !(await this.movedElsewhere()))) {
        throw this.illegal(parsed.type);
      }
    } catch (error) {
      if (error instanceof InvalidEventError || error instanceof InvalidTransitionError) {
        await this.reject(error, now);
      }
      throw error;
    }
    // Another process had moved the actor: it was reloaded, decide on the stored state.
    if (!legal) return this.process(event, source, options);

    const nextSnapshot = next;
    const planned = planActions(this.id, now, actions);
    const status = nextSnapshot.status;
    if (status !== 'active') {
      // A finished actor keeps no timers.
      for (const t of await runtime.store.timers(this.id)) {
        if (!planned.timersCancel.includes(t.timerId)) planned.timersCancel.push(t.timerId);
      }
      planned.timersSet = [];
    }
    const to = stateLabel(nextSnapshot.value);
    const version = this.row.version + 1;
    const transitionRow = buildTransitionRow({
      actorId: this.id,
      seq: version,
      fromState: from,
      toState: to,
      event: parsed,
      at: now,
      metadata: { source, ...(options.metadata ?? {}) },
      prevHash: this.row.headHash,
    });
    const actorRow: ActorRow = {
      ...this.row,
      version,
      state: to,
      status,
      snapshot: encodeSnapshot(this.machine, nextSnapshot),
      updatedAt: now,
      headHash: transitionRow.hash,
    };
    try {
      await runtime.commit({
        actorId: this.id,
        expectedVersion: this.row.version,
        actor: actorRow,
        transition: transitionRow,
        timersSet: planned.timersSet,
        timersCancel: planned.timersCancel,
        consumeTimer: options.consumeTimer,
        lease: options.fenced ? runtime.fence() : undefined,
      });
    } catch (error) {
      if (error instanceof ConcurrencyError) this.stale = true;
      if (error instanceof LeaseLostError) runtime.dropLease(this.id);
      const err = error instanceof Error ? error : new Error(String(error));
      // Seed 001's log guidance: ERROR when persistence fails; a lost race (version
      // moved, lease taken over) is an expected outcome the caller retries: WARN.
      const race = error instanceof ConcurrencyError || error instanceof LeaseLostError;
      runtime.logger[race ? 'warn' : 'error'](
        { actorId: this.id, machineId: this.machine.id, state: from, eventType: parsed.type, err },
        'transition not committed; state unchanged',
      );
      runtime.notify('onWriteError', { actorId: this.id, error: err, at: now });
      throw err;
    }

    this.snapshot = nextSnapshot;
    this.row = actorRow;
    if (options.consumeTimer) runtime.unschedule(this.id, options.consumeTimer);
    for (const id of planned.timersCancel) runtime.unschedule(this.id, id);
    for (const t of planned.timersSet) runtime.schedule(t);
    runtime.logger.info(
      {
        actorId: this.id,
        machineId: this.machine.id,
        from,
        to,
        eventType: parsed.type,
        version,
        source,
      },
      'transition',
    );
    this.afterCommit(planned, {
      actorId: this.id,
      machineId: this.machine.id,
      version,
      from,
      to,
      event: parsed,
      source,
      at: now,
      status,
      snapshot: nextSnapshot,
      previous,
    });
    return nextSnapshot as SnapshotFrom<TLogic>;
  }

  /**
   * The pure transition of `event` from `snapshot`; returns the same snapshot object
   * when no transition is enabled. `transition()` keeps the snapshot object for an
   * unhandled event, and also for a targetless transition whose actions leave
   * context alone (an `emit`): only in that rare case is `can()` asked.
   */
  private step1(
    snapshot: AnyMachineSnapshot,
    event: EventObject,
  ): [AnyMachineSnapshot, unknown[], boolean] {
    if (snapshot.status !== 'active') return [snapshot, [], false];
    const [next, actions] = pureTransition(this.machine, snapshot, event);
    return [next, actions, next !== snapshot || snapshot.can(event)];
  }

  /**
   * Before refusing an event as illegal, checks whether another process moved the
   * actor since it was loaded here; if so, reloads (one indexed read, paid only on
   * the rejection path) so legality is decided on the stored state.
   */
  private async movedElsewhere(): Promise<boolean> {
    if (this.stale) {
      await this.reloadNow();
      return true;
    }
    const stored = await this.runtime.store.loadActor(this.id);
    if (!stored || stored.version === this.row.version) return false;
    await this.reloadNow();
    return true;
  }

  private illegal(eventType: string): InvalidTransitionError {
    return new InvalidTransitionError({
      machineId: this.machine.id,
      actorId: this.id,
      state: this.row.state,
      eventType,
    });
  }

  private async reject(
    error: InvalidEventError | InvalidTransitionError,
    now: number,
  ): Promise<void> {
    const runtime = this.runtime;
    const state = this.row.state;
    const reason = error instanceof InvalidTransitionError ? 'invalid_transition' : error.reason;
    runtime.logger.warn(
      { actorId: this.id, machineId: this.machine.id, state, eventType: error.eventType, reason },
      'event rejected',
    );
    try {
      await runtime.store.recordRejection({
        actorId: this.id,
        machineId: this.machine.id,
        state,
        eventType: error.eventType ?? '',
        reason,
        at: now,
      });
    } catch (storeError) {
      runtime.logger.error({ actorId: this.id, err: storeError }, 'could not record rejection');
    }
    runtime.notify('onRejection', {
      actorId: this.id,
      machineId: this.machine.id,
      state,
      eventType: error.eventType,
      error,
      at: now,
    });
  }

  /** Runs effects and tells observers; nothing here can undo the committed transition. */
  private afterCommit(planned: Planned, notice: TransitionNotice): void {
    const runtime = this.runtime;
    for (const effect of planned.effects) {
      try {
        effect.exec?.(effect.info, effect.params);
      } catch (error) {
        runtime.logger.error(
          { actorId: this.id, action: effect.type, err: error },
          'effect threw after commit',
        );
      }
    }
    for (const event of planned.emitted) {
      for (const listener of [
        ...(this.emittedListeners.get(event.type) ?? []),
        ...(this.emittedListeners.get('*') ?? []),
      ]) {
        try {
          listener(event);
        } catch (error) {
          runtime.logger.error({ actorId: this.id, err: error }, 'emitted-event listener threw');
        }
      }
      runtime.notify('onEmitted', {
        actorId: this.id,
        machineId: this.machine.id,
        event,
        at: notice.at,
      });
    }
    for (const listener of this.listeners) {
      try {
        listener(notice);
      } catch (error) {
        runtime.logger.error(
          { actorId: this.id, err: error },
          'subscriber threw; transition unaffected',
        );
      }
    }
    runtime.notify('onTransition', notice);
  }

  /** Called after every committed transition of this actor (in this process). */
  subscribe(listener: (notice: TransitionNotice) => void): Subscription {
    this.listeners.add(listener);
    return { unsubscribe: () => this.listeners.delete(listener) };
  }

  /** Listens to events the chart emits (`emit(...)`), after their transition committed; `'*'` for all. */
  on(type: string, listener: (event: EventObject) => void): Subscription {
    let set = this.emittedListeners.get(type);
    if (!set) this.emittedListeners.set(type, (set = new Set()));
    set.add(listener);
    return { unsubscribe: () => set.delete(listener) };
  }

  /** The whole audit trail, oldest first. */
  history(): Promise<TransitionRow[]> {
    return this.runtime.store.history(this.id);
  }

  /**
   * Runs a side effect at most once per actor and name (seed 001 §5). `fn`
   * receives the idempotency key `<actorId>:<name>` (pass it to the API you call).
   * The step is marked `executing`, run, and marked `done` with its JSON result,
   * each durably; later calls return the stored result without running `fn`.
   * A step that threw is marked `failed` and runs again on the next call. A step
   * found `executing` from a crashed process throws {@link UncertainStepError}
   * until it is reconciled.
   *
   * @example
   * const receipt = await task.step('refund', (key) => payments.refund({ idempotencyKey: key, amount }));
   */
  step<T>(name: string, fn: (key: string) => Promise<T> | T): Promise<T> {
    const key = `${this.id}:${name}`;
    const inFlight = this.stepsInFlight.get(key);
    if (inFlight) return inFlight as Promise<T>;
    const run = this.runStep(key, name, fn).finally(() => this.stepsInFlight.delete(key));
    this.stepsInFlight.set(key, run);
    return run;
  }

  private async runStep<T>(
    key: string,
    name: string,
    fn: (key: string) => Promise<T> | T,
  ): Promise<T> {
    const store = this.runtime.store;
    const clock = this.runtime.clock;
    const { row, created } = await store.beginStep({
      key,
      actorId: this.id,
      name,
      startedAt: clock.now(),
    });
    if (!created) {
      if (row.status === 'done') return JSON.parse(row.result ?? 'null') as T;
      if (row.status === 'executing') throw new UncertainStepError({ actorId: this.id, key });
      await store.restartStep(key, clock.now());
    }
    let result: T;
    try {
      result = await fn(key);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await store.finishStep(key, 'failed', JSON.stringify({ error: message }), clock.now());
      throw error;
    }
    await store.finishStep(key, 'done', JSON.stringify(result ?? null), clock.now());
    return result;
  }

  /** Settles this actor's uncertain step `name` with a reconcile hook's answer. */
  async reconcileStep(name: string, decision: StepReconciliation): Promise<void> {
    const key = `${this.id}:${name}`;
    await settleStep(this.runtime.store, key, decision, this.runtime.clock.now());
  }

  /** Detaches this in-memory actor from the runtime. Its durable timers stay pending. */
  detach(): void {
    this.runtime.untrack(this);
  }

  /** Alias of {@link detach}, as XState's `actor.stop()`: the durable actor itself lives on. */
  stop(): void {
    this.detach();
  }
}

/** Applies a reconcile decision to a step row. */
export async function settleStep(
  store: Store,
  key: string,
  decision: StepReconciliation,
  now: number,
): Promise<void> {
  if (decision.status === 'done') {
    await store.finishStep(key, 'done', JSON.stringify(decision.result ?? null), now);
  } else {
    await store.finishStep(key, 'failed', JSON.stringify({ reconciled: decision.reason }), now);
  }
}

/** Builds an audit row and its chain hash. */
export function buildTransitionRow(fields: {
  actorId: string;
  seq: number;
  fromState: string | null;
  toState: string;
  event: EventObject;
  at: number;
  metadata: Record<string, unknown>;
  prevHash: string;
}): TransitionRow {
  const base = {
    actorId: fields.actorId,
    seq: fields.seq,
    fromState: fields.fromState,
    toState: fields.toState,
    eventType: fields.event.type,
    event: JSON.stringify(fields.event),
    at: fields.at,
    metadata: JSON.stringify(fields.metadata),
    prevHash: fields.prevHash,
  };
  return { ...base, hash: hashTransition(base) };
}

function versioningOf(options: {
  version?: number | undefined;
  migrations?: Readonly<Record<number, SnapshotMigration>> | undefined;
}): ChartVersioning {
  return { version: options.version ?? 1, migrations: options.migrations ?? {} };
}

async function loadInto<TLogic extends AnyStateMachine>(
  runtime: DurableRuntime,
  machine: TLogic,
  versioning: ChartVersioning,
  row: ActorRow,
  options: { schemas?: EventSchemas | undefined; maxEventBytes?: number | undefined },
  timers?: readonly TimerRow[],
): Promise<DurableActor<TLogic>> {
  const snapshot = decodeActorRow(machine, versioning, row);
  const actor = new DurableActor(runtime, machine, versioning, row, snapshot, options);
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([row.id]);
  // Re-arm timers this process does not know about yet (e.g. after a restart).
  for (const t of timers ?? (await runtime.store.timers(row.id))) runtime.schedule(t);
  return actor;
}

/**
 * Loads a durable actor, or creates it from `input` when it does not exist.
 * The creation itself is the first audit row (`xstate.init`), committed with the
 * initial snapshot and its timers.
 *
 * @example
 * import { createDurableActor, openStore } from 'agentcharts';
 * import { taskLifecycle } from 'agentcharts/machines';
 *
 * const store = openStore(); // ./agentcharts.db
 * const task = await createDurableActor(taskLifecycle.machine, {
 *   id: 'refund-42',
 *   store,
 *   input: { taskId: 'refund-42' },
 * });
 * await task.send({ type: 'START' });
 */
export async function createDurableActor<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: DurableActorOptions<TLogic>,
): Promise<DurableActor<TLogic>> {
  const actor = await openOrCreate(machine, options);
  if (options.inspect) {
    // Loaded on demand: the inspector hookup is optional and depends on this module.
    const { attachInspector } = await import('../inspect/inspector.ts');
    attachInspector(actor, options.inspect);
  }
  return actor;
}

async function openOrCreate<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: DurableActorOptions<TLogic>,
): Promise<DurableActor<TLogic>> {
  const runtimeOptions: { clock?: Clock; logger?: Logger } = {};
  if (options.clock) runtimeOptions.clock = options.clock;
  if (options.logger) runtimeOptions.logger = options.logger;
  const runtime = getRuntime(options.store, runtimeOptions);
  const versioning = versioningOf(options);
  runtime.registerChart({
    machine,
    version: versioning.version,
    migrations: versioning.migrations,
  });
  const actorOptions = { schemas: options.schemas, maxEventBytes: options.maxEventBytes };

  const live = runtime.liveActor(options.id);
  if (live) {
    if (live.machine !== machine && live.machine.id !== machine.id) {
      throw new StoreError({
        operation: 'load',
        kind: 'machine_mismatch',
        actorId: options.id,
        detail: `actor runs "${live.machine.id}"`,
      });
    }
    if (options.mode === 'create')
      throw new ConcurrencyError({
        actorId: options.id,
        expectedVersion: 0,
        actualVersion: live.version,
      });
    return live as unknown as DurableActor<TLogic>;
  }

  const mode = options.mode ?? 'load-or-create';
  const existing = await options.store.loadActor(options.id);
  if (existing) {
    if (mode === 'create')
      throw new ConcurrencyError({
        actorId: options.id,
        expectedVersion: 0,
        actualVersion: existing.version,
      });
    return loadInto(runtime, machine, versioning, existing, actorOptions);
  }
  if (mode === 'load')
    throw new StoreError({ operation: 'load', kind: 'not_found', actorId: options.id });

  validateInput(machine, options.input, options.id);
  const now = runtime.clock.now();
  const [snapshot, actions] = initialTransition(machine, options.input as InputFrom<TLogic>);
  const initial = snapshot as AnyMachineSnapshot;
  const planned = planActions(options.id, now, actions);
  const state = stateLabel(initial.value);
  const initEvent: EventObject =
    options.input === undefined
      ? { type: 'xstate.init' }
      : ({ type: 'xstate.init', input: options.input } as EventObject);
  const transitionRow = buildTransitionRow({
    actorId: options.id,
    seq: 1,
    fromState: null,
    toState: state,
    event: initEvent,
    at: now,
    metadata: { source: 'create', ...(options.metadata ?? {}) },
    prevHash: GENESIS_HASH,
  });
  const row: ActorRow = {
    id: options.id,
    machineId: machine.id,
    chartVersion: versioning.version,
    version: 1,
    state,
    status: initial.status,
    snapshot: encodeSnapshot(machine, initial),
    createdAt: now,
    updatedAt: now,
    headHash: transitionRow.hash,
  };
  try {
    await runtime.commit({
      actorId: options.id,
      expectedVersion: 0,
      actor: row,
      transition: transitionRow,
      timersSet: planned.timersSet,
      timersCancel: [],
      userId: options.userId,
    });
  } catch (error) {
    if (error instanceof ConcurrencyError && mode === 'load-or-create') {
      // Another process created it first: load theirs.
      const theirs = await options.store.loadActor(options.id);
      if (theirs) return loadInto(runtime, machine, versioning, theirs, actorOptions);
    }
    const err = error instanceof Error ? error : new Error(String(error));
    const race = error instanceof ConcurrencyError;
    runtime.logger[race ? 'warn' : 'error'](
      { actorId: options.id, machineId: machine.id, err },
      'actor not created; nothing written',
    );
    runtime.notify('onWriteError', { actorId: options.id, error: err, at: now });
    throw error;
  }
  runtime.logger.info(
    {
      actorId: options.id,
      machineId: machine.id,
      from: null,
      to: state,
      eventType: 'xstate.init',
      version: 1,
      source: 'create',
    },
    'transition',
  );
  const actor = new DurableActor(runtime, machine, versioning, row, initial, actorOptions);
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([row.id]);
  for (const t of planned.timersSet) runtime.schedule(t);
  for (const listener of planned.effects) {
    try {
      listener.exec?.(listener.info, listener.params);
    } catch (error) {
      runtime.logger.error({ actorId: options.id, err: error }, 'entry effect threw after commit');
    }
  }
  runtime.notify('onTransition', {
    actorId: options.id,
    machineId: machine.id,
    version: 1,
    from: null,
    to: state,
    event: initEvent,
    source: 'create',
    at: now,
    status: row.status,
    snapshot: initial,
    previous: undefined,
  });
  return actor;
}

/**
 * Loads an existing actor by id through the charts registered on the store's
 * runtime (see `recover({ charts })`). Unknown actor or machine → StoreError.
 */
export async function openDurableActor(
  store: Store,
  actorId: string,
  options: { charts?: Iterable<ChartDefinition> } = {},
): Promise<DurableActor<AnyStateMachine>> {
  const runtime = getRuntime(store, options.charts ? { charts: options.charts } : undefined);
  return loadActorById(runtime, actorId);
}

async function loadActorById(
  runtime: DurableRuntime,
  actorId: string,
): Promise<DurableActor<AnyStateMachine>> {
  const live = runtime.liveActor(actorId);
  if (live) return live;
  const row = await runtime.store.loadActor(actorId);
  if (!row) {
    throw new StoreError({
      operation: 'load',
      kind: 'not_found',
      actorId,
      detail: 'no such actor',
    });
  }
  return adoptActorRow(runtime, row);
}

/**
 * @internal The live actor for a row already read from the store (recovery pages
 * through rows and has each actor's timers at hand: no second read of either).
 */
export async function adoptActorRow(
  runtime: DurableRuntime,
  row: ActorRow,
  timers?: readonly TimerRow[],
): Promise<DurableActor<AnyStateMachine>> {
  const live = runtime.liveActor(row.id);
  if (live) return live;
  const chart = runtime.chartFor(row.machineId);
  if (!chart) {
    throw new StoreError({
      operation: 'load',
      kind: 'unknown_machine',
      actorId: row.id,
      detail: `machine "${row.machineId}" is not registered`,
    });
  }
  return loadInto(
    runtime,
    chart.machine,
    { version: chart.version, migrations: chart.migrations },
    row,
    { schemas: chart.events },
    timers,
  );
}

DurableRuntime.loadActor = loadActorById;
