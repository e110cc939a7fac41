/**
 * Getting a durable actor: the runtime of a store, creating an actor (its first
 * audit row committed with its initial snapshot and timers), loading one (its
 * snapshot checked against the head of its chain, migrated to the chart's
 * version), and loading by id through the charts a runtime knows.
 */
import {
  EXPECTED,
  InvalidOptionsError,
  isStore,
  requireArg,
  requireOptions,
  requireText,
} from '../core/options.ts';
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import {
  chartAndMachine,
  chartEvents,
  type ChartDefinition,
  type EventSchemas,
} from '../core/chart.ts';
import { getEventSchemas } from '../strict/events.ts';
import { warnNoEventSchemas } from './no-schemas.ts';
import { ConcurrencyError, StoreError } from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import type { ActorHead, ActorRow, Store } from '../store/types.ts';
import { DurableActor } from './actor.ts';
import type { ChartVersioning } from './codec.ts';
import { loadMigrated } from './migrate.ts';
import { DurableInspection } from './inspection.ts';
import { DurableRuntime, type RuntimeOptions } from './runtime.ts';
import { checkDurableActors } from './actor-kinds.ts';
import { createActor } from './create.ts';
import { spawnChild } from './spawn.ts';
import { newCore, type ActorOptions } from './actor-core.ts';
import type { DurableActorOptions } from './options.ts';

export type { DurableActorOptions } from './options.ts';

const runtimes = new WeakMap<Store, DurableRuntime>();

/** The migrations of a chart that declares none (one object: registering it again is a no-op). */
const NO_MIGRATIONS = Object.freeze({});

/** `schemas: false`: no schema, events checked by type alone (an empty set is none). */
const NO_SCHEMAS: EventSchemas = Object.freeze({});

/** The runtime of a store, created on first use with `options`. */
export function getRuntime(store: Store, options?: RuntimeOptions): DurableRuntime {
  requireArg('getRuntime', 'store', isStore(store), EXPECTED.store);
  requireOptions('getRuntime', options);
  let runtime = runtimes.get(store);
  if (!runtime) {
    const created = new DurableRuntime(store, options ?? {}, {
      load: loadActorById,
      spawn: spawnChild,
    });
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
    if (options?.maxLiveActors !== undefined) runtime.limitLiveActors(options.maxLiveActors);
  }
  return runtime;
}

/** Makes a live actor of a stored row (checked against its head) and arms its timers. */
async function loadInto<TLogic extends AnyStateMachine>(
  runtime: DurableRuntime,
  machine: TLogic,
  versioning: ChartVersioning,
  stored: ActorHead,
  options: ActorOptions,
): Promise<DurableActor<TLogic>> {
  // Stored at an older chart version: migrated once, on the record.
  const loaded = await loadMigrated(runtime, machine, versioning, stored);
  const found = loaded.found;
  const actor = new DurableActor<TLogic>(
    newCore(
      runtime,
      machine,
      versioning,
      found.actor,
      loaded.snapshot,
      loaded.ledger,
      options,
      found.parentId,
    ),
  );
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([found.actor.id]);
  // Arm the wake-ups of its pending timers in this process (e.g. after a restart).
  for (const t of loaded.ledger.timers) {
    runtime.schedule({
      actorId: found.actor.id,
      timerId: t.key,
      dueAt: t.due,
      armedAt: t.at,
      rank: t.rank,
    });
  }
  return actor;
}

/**
 * Loads a durable actor, or creates it from `input` when it does not exist.
 * The creation itself is the first audit row (`xstate.init`), committed with the
 * initial snapshot and its timers; it resolves once the children its initial
 * state spawns are created too.
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
  machineOrChart: TLogic | ChartDefinition<TLogic>,
  options: DurableActorOptions<TLogic>,
): Promise<DurableActor<TLogic>> {
  // Plain checks, not a schema: this is on the path of every actor created.
  const given = machineOrChart as unknown;
  if (!isMachineLike(given) && !isMachineLike((given as { machine?: unknown } | null)?.machine)) {
    throw new InvalidOptionsError(
      'createDurableActor',
      'machine',
      'an XState machine (setup().createMachine()) or its chart (defineChart)',
    );
  }
  const { machine, chart } = chartAndMachine(machineOrChart);
  if (
    typeof options !== 'object' ||
    options === null ||
    typeof options.id !== 'string' ||
    options.id === ''
  ) {
    throw new InvalidOptionsError('createDurableActor', 'options.id', 'a non-empty string');
  }
  if (!isStore(options.store)) {
    throw new InvalidOptionsError(
      'createDurableActor',
      'options.store',
      'a store (what openStore() returns)',
    );
  }
  if (
    options.systemId !== undefined &&
    (typeof options.systemId !== 'string' || options.systemId === '')
  ) {
    throw new InvalidOptionsError('createDurableActor', 'options.systemId', 'a non-empty string');
  }
  const actor = await openOrCreate(machine, chart, options);
  if (options.inspect) {
    const inspection = new DurableInspection(options.inspect);
    inspection.register(actor.id, actor.machine, actor.getSnapshot() as AnyMachineSnapshot);
    actor.subscribe((notice) => inspection.transition(notice, actor.machine));
  }
  // After the cascade its creation set off (children spawned and started), as
  // XState's `start()` returns after it (runtime.afterCascade).
  return getRuntime(options.store).afterCascade(actor.id, actor);
}

async function openOrCreate<TLogic extends AnyStateMachine>(
  machine: TLogic,
  chart: ChartDefinition<TLogic> | undefined,
  given: DurableActorOptions<TLogic>,
): Promise<DurableActor<TLogic>> {
  const runtimeOptions: RuntimeOptions = {};
  if (given.clock) runtimeOptions.clock = given.clock;
  if (given.logger) runtimeOptions.logger = given.logger;
  const runtime = getRuntime(given.store, runtimeOptions);
  chartMeta(machine); // ill-formed chart metadata fails here, not on a later timer
  checkDurableActors(machine); // so does an actor the runtime cannot persist
  // The chart's version, migrations, events and default input, unless the options say.
  const versioning = {
    version: given.version ?? chart?.version ?? 1,
    migrations: given.migrations ?? chart?.migrations ?? NO_MIGRATIONS,
  };
  runtime.registerChart(
    chart ? { ...(chart as ChartDefinition), ...versioning } : { machine, ...versioning },
  );
  const input = given.input ?? chart?.defaultInput;
  const options = input === undefined ? given : { ...given, input };
  const schemas = given.schemas === false ? NO_SCHEMAS : (given.schemas ?? chartEvents(chart));
  if (schemas === undefined && getEventSchemas(machine) === undefined) warnNoEventSchemas(machine);
  const actorOptions = { schemas, maxEventBytes: options.maxEventBytes };
  const mode = options.mode ?? 'load-or-create';

  const live = runtime.heldActor(options.id) as DurableActor<TLogic> | undefined;
  if (live) {
    if (live.machine !== machine && live.machine.id !== machine.id) {
      throw new StoreError({
        operation: 'load',
        kind: 'machine_mismatch',
        actorId: options.id,
        detail: `actor runs "${live.machine.id}"`,
      });
    }
    if (mode === 'create') throw exists(options.id, live.version);
    return live;
  }

  if (mode === 'create') {
    // No read first: the creation's compare-and-set (expected version 0) is the
    // check that the actor does not exist, and a networked store saves a round trip.
    return createActor(runtime, machine, versioning, options, actorOptions, undefined, true);
  }
  const found = await options.store.loadActorHead(options.id);
  if (found) return loadInto(runtime, machine, versioning, found, actorOptions);
  if (mode === 'load') {
    throw new StoreError({ operation: 'load', kind: 'not_found', actorId: options.id });
  }
  try {
    return await createActor(runtime, machine, versioning, options, actorOptions);
  } catch (error) {
    if (error instanceof ConcurrencyError && mode === 'load-or-create') {
      // Another process created it first: load theirs.
      const theirs = await options.store.loadActorHead(options.id);
      if (theirs) return loadInto(runtime, machine, versioning, theirs, actorOptions);
    }
    throw error;
  }
}

/** Plain functions, not closures: they are on the path of every actor created. */
function isMachineLike(v: unknown): boolean {
  return typeof v === 'object' && v !== null && 'root' in v;
}

/** `mode: 'create'` of an actor that exists. */
function exists(actorId: string, version: number): ConcurrencyError {
  return new ConcurrencyError({ actorId, expectedVersion: 0, actualVersion: version });
}

/** Options of {@link openDurableActor}. */
export interface OpenDurableActorOptions<TLogic extends AnyStateMachine = AnyStateMachine> {
  /**
   * The chart the actor runs (or its machine): registered with the runtime, and
   * the actor is returned typed by it. An actor of another machine is a
   * `StoreError` (`machine_mismatch`).
   */
  chart?: ChartDefinition<TLogic> | TLogic | undefined;
  /** Charts to register with the store's runtime (as `recover({ charts })` does). */
  charts?: Iterable<ChartDefinition> | undefined;
}

/**
 * Loads an existing actor by id through the charts registered on the store's
 * runtime (see `recover({ charts })`) or given here. Unknown actor or machine →
 * StoreError. With `{ chart }` the actor is typed by that chart's machine: its
 * context, its state values and the events `send` takes. While messages are
 * being delivered in the actor's tree it waits for them first, as `send` does: a
 * child the last send spawned is found, as XState's is once `send` returns.
 *
 * @example
 * const review = await openDurableActor(store, 'doc-1', { chart: docReview });
 * await review.send({ type: 'APPROVE', reviewer: 'ana' }); // checked at compile time too
 */
export async function openDurableActor<TLogic extends AnyStateMachine>(
  store: Store,
  actorId: string,
  options: OpenDurableActorOptions<TLogic> & { chart: ChartDefinition<TLogic> | TLogic },
): Promise<DurableActor<TLogic>>;
export async function openDurableActor(
  store: Store,
  actorId: string,
  options?: OpenDurableActorOptions,
): Promise<DurableActor<AnyStateMachine>>;
export async function openDurableActor(
  store: Store,
  actorId: string,
  options: OpenDurableActorOptions = {},
): Promise<DurableActor<AnyStateMachine>> {
  requireArg('openDurableActor', 'store', isStore(store), EXPECTED.store);
  requireText('openDurableActor', 'actorId', actorId);
  requireOptions('openDurableActor', options);
  const runtime = getRuntime(store, options.charts ? { charts: options.charts } : undefined);
  const wanted = options.chart === undefined ? undefined : chartAndMachine(options.chart);
  if (wanted?.chart) runtime.registerChart(wanted.chart);
  else if (wanted && !runtime.chartFor(wanted.machine.id)) {
    // A bare machine no chart was defined for: version 1, as createDurableActor takes it.
    runtime.registerChart({ machine: wanted.machine, version: 1, migrations: NO_MIGRATIONS });
  }
  // A cascade of messages under way in its tree first (runtime.turnFor): a child
  // a send just spawned is there, as XState's is once `send` returns.
  const turn = runtime.turnFor(actorId);
  if (turn !== undefined) await turn;
  const actor = await loadActorById(runtime, actorId);
  if (wanted && actor.machine.id !== wanted.machine.id) {
    throw new StoreError({
      operation: 'load',
      kind: 'machine_mismatch',
      actorId,
      detail: `actor runs "${actor.machine.id}", not "${wanted.machine.id}"`,
    });
  }
  return actor;
}

async function loadActorById(
  runtime: DurableRuntime,
  actorId: string,
): Promise<DurableActor<AnyStateMachine>> {
  const live = runtime.heldActor(actorId) as DurableActor<AnyStateMachine> | undefined;
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

/** @internal The live actor of a stored actor row (recovery pages through rows). */
export async function adoptActorRow(
  runtime: DurableRuntime,
  row: ActorRow,
): Promise<DurableActor<AnyStateMachine>> {
  const live = runtime.heldActor(row.id) as DurableActor<AnyStateMachine> | undefined;
  if (live) return live;
  // The head is read with the row, so both come from one moment.
  const found = await runtime.store.loadActorHead(row.id);
  if (!found) {
    throw new StoreError({ operation: 'load', kind: 'not_found', actorId: row.id });
  }
  return adoptLoaded(runtime, found);
}

function adoptLoaded(
  runtime: DurableRuntime,
  found: ActorHead,
): Promise<DurableActor<AnyStateMachine>> {
  const chart = runtime.requireChart(found.actor.machineId, found.actor.id);
  checkDurableActors(chart.machine);
  return loadInto(
    runtime,
    chart.machine,
    { version: chart.version, migrations: chart.migrations },
    found,
    { schemas: chart.events },
  );
}
