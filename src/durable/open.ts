/**
 * Getting a durable actor: the runtime of a store, creating an actor (its first
 * audit row committed with its initial snapshot and timers), loading one (its
 * snapshot checked against the head of its chain, migrated to the chart's
 * version), and loading by id through the charts a runtime knows.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject, InputFrom } from 'xstate';
import type { Logger } from 'pino';
import type { ChartDefinition, EventSchemas, SnapshotMigration } from '../core/chart.ts';
import type { Clock } from '../core/clock.ts';
import { ConcurrencyError, StoreError } from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import { validateInput } from '../strict/events.ts';
import type { ActorRow, Store, TimerRow, TransitionRow } from '../store/types.ts';
import { DurableActor } from './actor.ts';
import type { ActorCore } from './actor-core.ts';
import { decodeActorRow, encodeSnapshot, type ChartVersioning } from './codec.ts';
import { DurableInspection, type InspectorLike } from './inspection.ts';
import { planActions } from './plan.ts';
import { pureInitial } from './pure.ts';
import { buildTransitionRow, checkHead, GENESIS_HASH } from './row.ts';
import { DurableRuntime, type RuntimeOptions } from './runtime.ts';
import { afterCommit } from './send.ts';

const runtimes = new WeakMap<Store, DurableRuntime>();

/** The runtime of a store, created on first use with `options`. */
export function getRuntime(store: Store, options?: RuntimeOptions): DurableRuntime {
  let runtime = runtimes.get(store);
  if (!runtime) {
    const created = new DurableRuntime(store, options ?? {}, loadActorById);
    created.onClose = () => {
      if (runtimes.get(store) === created) runtimes.delete(store);
    };
    runtimes.set(store, created);
    runtime = created;
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
   * The user the actor works for (the agent document's `user_id`), recorded at
   * creation and indexed for "active agents of a user" queries.
   */
  userId?: string;
  /**
   * An inspector in XState's sense (`{ inspect }`, e.g. `createWebSocketInspector()`
   * from `@statelyai/inspect`): every committed transition is reported to it as
   * XState's own actor would, with the machine definition.
   */
  inspect?: InspectorLike;
}

type ActorOptions = { schemas?: EventSchemas | undefined; maxEventBytes?: number | undefined };

function newCore(
  runtime: DurableRuntime,
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  row: ActorRow,
  snapshot: AnyMachineSnapshot,
  options: ActorOptions,
): ActorCore {
  return {
    id: row.id,
    machine,
    runtime,
    versioning,
    schemas: options.schemas,
    maxEventBytes: options.maxEventBytes,
    row,
    snapshot,
    stale: false,
    listeners: new Set(),
    emittedListeners: new Map(),
  };
}

/** Makes a live actor of a stored row (checked against its head) and arms its timers. */
async function loadInto<TLogic extends AnyStateMachine>(
  runtime: DurableRuntime,
  machine: TLogic,
  versioning: ChartVersioning,
  found: { actor: ActorRow; head: TransitionRow | undefined },
  options: ActorOptions,
  timers?: readonly TimerRow[],
): Promise<DurableActor<TLogic>> {
  // Decoded first: a state the chart no longer has is a version problem
  // (SnapshotVersionError) before it is a chain problem.
  const snapshot = decodeActorRow(machine, versioning, found.actor);
  checkHead(found.actor, found.head);
  const actor = new DurableActor<TLogic>(
    newCore(runtime, machine, versioning, found.actor, snapshot, options),
  );
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([found.actor.id]);
  // Re-arm timers this process does not know about yet (e.g. after a restart).
  for (const t of timers ?? (await runtime.store.timers(found.actor.id))) runtime.schedule(t);
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
    const inspection = new DurableInspection(options.inspect);
    inspection.register(actor.id, actor.machine, actor.getSnapshot() as AnyMachineSnapshot);
    actor.subscribe((notice) => inspection.transition(notice, actor.machine));
  }
  return actor;
}

async function openOrCreate<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: DurableActorOptions<TLogic>,
): Promise<DurableActor<TLogic>> {
  const runtimeOptions: RuntimeOptions = {};
  if (options.clock) runtimeOptions.clock = options.clock;
  if (options.logger) runtimeOptions.logger = options.logger;
  const runtime = getRuntime(options.store, runtimeOptions);
  chartMeta(machine); // ill-formed chart metadata fails here, not on a later timer
  const versioning = {
    version: options.version ?? 1,
    migrations: options.migrations ?? {},
  };
  runtime.registerChart({ machine, ...versioning });
  const actorOptions = { schemas: options.schemas, maxEventBytes: options.maxEventBytes };
  const mode = options.mode ?? 'load-or-create';
  const exists = (version: number) =>
    new ConcurrencyError({ actorId: options.id, expectedVersion: 0, actualVersion: version });

  const live = runtime.liveActor(options.id) as DurableActor<TLogic> | undefined;
  if (live) {
    if (live.machine !== machine && live.machine.id !== machine.id) {
      throw new StoreError({
        operation: 'load',
        kind: 'machine_mismatch',
        actorId: options.id,
        detail: `actor runs "${live.machine.id}"`,
      });
    }
    if (mode === 'create') throw exists(live.version);
    return live;
  }

  const found = await options.store.loadActorHead(options.id);
  if (found) {
    if (mode === 'create') throw exists(found.actor.version);
    return loadInto(runtime, machine, versioning, found, actorOptions);
  }
  if (mode === 'load') {
    throw new StoreError({ operation: 'load', kind: 'not_found', actorId: options.id });
  }
  try {
    return await create(runtime, machine, versioning, options, actorOptions);
  } catch (error) {
    if (error instanceof ConcurrencyError && mode === 'load-or-create') {
      // Another process created it first: load theirs.
      const theirs = await options.store.loadActorHead(options.id);
      if (theirs) return loadInto(runtime, machine, versioning, theirs, actorOptions);
    }
    throw error;
  }
}

/** Commits a new actor: its initial snapshot, its creation row and its first timers. */
async function create<TLogic extends AnyStateMachine>(
  runtime: DurableRuntime,
  machine: TLogic,
  versioning: ChartVersioning,
  options: DurableActorOptions<TLogic>,
  actorOptions: ActorOptions,
): Promise<DurableActor<TLogic>> {
  validateInput(machine, options.input, options.id);
  const now = runtime.clock.now();
  const [initial, actions] = pureInitial(machine, options.input);
  const plan = planActions(options.id, now, actions);
  const state = stateLabel(initial.value);
  const initEvent: EventObject =
    options.input === undefined
      ? { type: 'xstate.init' }
      : ({ type: 'xstate.init', input: options.input } as EventObject);
  const snapshot = encodeSnapshot(machine, initial);
  const transition = buildTransitionRow({
    actorId: options.id,
    seq: 1,
    fromState: null,
    toState: state,
    eventType: initEvent.type,
    event: JSON.stringify(initEvent),
    at: now,
    metadata: JSON.stringify({ source: 'create', ...options.metadata }),
    prevHash: GENESIS_HASH,
    chartVersion: versioning.version,
    snapshot,
  });
  const row: ActorRow = {
    id: options.id,
    machineId: machine.id,
    chartVersion: versioning.version,
    version: 1,
    state,
    status: initial.status,
    snapshot,
    createdAt: now,
    updatedAt: now,
    headHash: transition.hash,
  };
  try {
    await runtime.commit({
      actorId: options.id,
      expectedVersion: 0,
      actor: row,
      transition,
      timersSet: plan.timersSet,
      timersCancel: [],
      userId: options.userId,
    });
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    const race = error instanceof ConcurrencyError;
    runtime.logger[race ? 'warn' : 'error'](
      { actorId: options.id, machineId: machine.id, err },
      'actor not created; nothing written',
    );
    runtime.notify('onWriteError', { actorId: options.id, error: err, at: now });
    throw error;
  }
  const core = newCore(runtime, machine, versioning, row, initial, actorOptions);
  const actor = new DurableActor<TLogic>(core);
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([row.id]);
  for (const t of plan.timersSet) runtime.schedule(t);
  afterCommit(core, { ...plan, emitted: [] }, () => ({
    actorId: options.id,
    machineId: machine.id,
    version: 1,
    from: null,
    to: state,
    event: initEvent,
    eventType: initEvent.type,
    source: 'create',
    at: now,
    status: row.status,
    snapshot: initial,
    previous: undefined,
  }));
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
  const live = runtime.liveActor(actorId) as DurableActor<AnyStateMachine> | undefined;
  if (live) return live;
  const found = await runtime.store.loadActorHead(actorId);
  if (!found) {
    throw new StoreError({
      operation: 'load',
      kind: 'not_found',
      actorId,
      detail: 'no such actor',
    });
  }
  return adoptLoaded(runtime, found);
}

/**
 * @internal The live actor of a stored actor row (recovery pages through rows and
 * has each actor's timers at hand: they are not read again).
 */
export async function adoptActorRow(
  runtime: DurableRuntime,
  row: ActorRow,
  timers?: readonly TimerRow[],
): Promise<DurableActor<AnyStateMachine>> {
  const live = runtime.liveActor(row.id) as DurableActor<AnyStateMachine> | undefined;
  if (live) return live;
  // The head is read with the row, so both come from one moment.
  const found = await runtime.store.loadActorHead(row.id);
  if (!found) {
    throw new StoreError({ operation: 'load', kind: 'not_found', actorId: row.id });
  }
  return adoptLoaded(runtime, found, timers);
}

function adoptLoaded(
  runtime: DurableRuntime,
  found: { actor: ActorRow; head: TransitionRow | undefined },
  timers?: readonly TimerRow[],
): Promise<DurableActor<AnyStateMachine>> {
  const chart = runtime.chartFor(found.actor.machineId);
  if (!chart) {
    throw new StoreError({
      operation: 'load',
      kind: 'unknown_machine',
      actorId: found.actor.id,
      detail: `machine "${found.actor.machineId}" is not registered`,
    });
  }
  return loadInto(
    runtime,
    chart.machine,
    { version: chart.version, migrations: chart.migrations },
    found,
    { schemas: chart.events },
    timers,
  );
}
