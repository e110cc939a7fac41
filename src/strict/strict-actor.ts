import {
  createActor,
  type Actor,
  type ActorOptions,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type InputFrom,
  type Observer,
  type Snapshot,
  type SnapshotFrom,
  type Subscription,
} from 'xstate';
import { InvalidEventError, InvalidTransitionError } from '../core/errors.ts';
import { eventIn, validateInput, type EventSchemas, type ValidateEventOptions } from './events.ts';
import { stateLabel } from '../core/state.ts';
import {
  chartAndMachine,
  chartEvents,
  isChartDefinition,
  type ChartDefinition,
} from '../core/chart.ts';
import { EXPECTED, isMachine, requireArg, requireOptions } from '../core/options.ts';

export interface CheckEventOptions {
  actorId?: string | undefined;
  schemas?: EventSchemas | undefined;
  maxEventBytes?: number | undefined;
}

/**
 * Validates `event` against the machine's schemas, then checks that the current
 * snapshot enables a transition for it (guards evaluated). Returns the parsed
 * event; throws {@link InvalidEventError} or {@link InvalidTransitionError}.
 */
export function checkEvent<TLogic extends AnyStateMachine>(
  machine: TLogic,
  snapshot: SnapshotFrom<TLogic>,
  event: unknown,
  options: CheckEventOptions = {},
): EventFromLogic<TLogic> {
  requireArg('checkEvent', 'machine', isMachine(machine), EXPECTED.machine);
  requireArg(
    'checkEvent',
    'snapshot',
    typeof snapshot === 'object' && snapshot !== null,
    'a snapshot of the machine',
  );
  return checkedEvent(machine, snapshot, event, options);
}

/** {@link checkEvent} without its argument checks (the strict actor checked them once). */
function checkedEvent<TLogic extends AnyStateMachine>(
  machine: TLogic,
  snapshot: SnapshotFrom<TLogic>,
  event: unknown,
  options: CheckEventOptions,
): EventFromLogic<TLogic> {
  const parsed = eventIn(machine, event, {
    actorId: options.actorId,
    schemas: options.schemas,
    maxBytes: options.maxEventBytes,
  }) as EventFromLogic<TLogic>;
  const snap = snapshot as AnyMachineSnapshot;
  if (snap.status !== 'active' || !snap.can(parsed)) {
    throw new InvalidTransitionError({
      machineId: machine.id,
      actorId: options.actorId,
      state: stateLabel(snap.value),
      eventType: parsed.type,
    });
  }
  return parsed;
}

export interface StrictActorOptions<TLogic extends AnyStateMachine> extends CheckEventOptions {
  /** Actor id (also used as the XState `systemId`-free actor id). */
  id?: string;
  input?: InputFrom<TLogic>;
  /** A persisted snapshot to restore from. */
  snapshot?: Snapshot<unknown>;
  /** Passed through to XState (e.g. the Stately inspector's `inspect`). */
  inspect?: ActorOptions<TLogic>['inspect'];
  clock?: ActorOptions<TLogic>['clock'];
  /** Called for every rejected event, before the error is thrown. */
  onRejected?: (error: InvalidEventError | InvalidTransitionError) => void;
}

/**
 * An XState actor whose `send` throws instead of silently ignoring events:
 * {@link InvalidEventError} for ill-formed events and
 * {@link InvalidTransitionError} for events the current state does not accept.
 * After either, the snapshot is unchanged.
 */
export class StrictActor<TLogic extends AnyStateMachine> {
  /** The underlying XState actor, for APIs that need one (`waitFor`, `toPromise`). */
  readonly ref: Actor<TLogic>;
  readonly machine: TLogic;
  readonly id: string;
  private readonly options: StrictActorOptions<TLogic>;
  /** What {@link send} checks events with (fixed at creation). */
  private readonly eventOptions: ValidateEventOptions;

  constructor(machine: TLogic, options: StrictActorOptions<TLogic> = {}) {
    this.machine = machine;
    this.options = options;
    this.eventOptions = {
      actorId: options.id,
      schemas: options.schemas,
      maxBytes: options.maxEventBytes,
    };
    const actorOptions: ActorOptions<TLogic> = {};
    if (options.id !== undefined) actorOptions.id = options.id;
    if (options.snapshot === undefined) validateInput(machine, options.input, options.id);
    if (options.input !== undefined) actorOptions.input = options.input;
    if (options.snapshot !== undefined) actorOptions.snapshot = options.snapshot;
    if (options.inspect !== undefined) actorOptions.inspect = options.inspect;
    if (options.clock !== undefined) actorOptions.clock = options.clock;
    this.ref = createActor(machine, actorOptions);
    this.id = options.id ?? this.ref.id;
  }

  /** Starts the actor (as XState's `actor.start()`); returns itself. */
  start(): this {
    this.ref.start();
    return this;
  }

  stop(): this {
    this.ref.stop();
    return this;
  }

  /**
   * Validates and checks the event, then sends it. Returns the new snapshot.
   *
   * @example
   * const task = createStrictActor(taskLifecycle.machine, { input: { taskId: 't1' } }).start();
   * task.send({ type: 'START' });
   * task.send({ type: 'RETRY' }); // throws InvalidTransitionError: `running` does not accept RETRY
   */
  send(event: EventFromLogic<TLogic>): SnapshotFrom<TLogic> {
    const before = this.ref.getSnapshot() as AnyMachineSnapshot;
    let parsed: EventFromLogic<TLogic>;
    try {
      parsed = eventIn(this.machine, event, this.eventOptions) as EventFromLogic<TLogic>;
      if (before.status !== 'active') throw this.illegal(before, parsed.type);
    } catch (error) {
      this.rejected(error);
      throw error;
    }
    this.ref.send(parsed);
    const after = this.ref.getSnapshot();
    // XState keeps the very same snapshot object when no transition is enabled, so one
    // transition computation usually both applies the event and tells whether it was
    // legal. A targetless transition whose actions leave context alone (an `emit`)
    // also keeps it; only then is the (pure) `can()` asked.
    if (after === before && !before.can(parsed)) {
      const error = this.illegal(before, parsed.type);
      this.rejected(error);
      throw error;
    }
    return after;
  }

  private illegal(snapshot: AnyMachineSnapshot, eventType: string): InvalidTransitionError {
    return new InvalidTransitionError({
      machineId: this.machine.id,
      actorId: this.options.id,
      state: stateLabel(snapshot.value),
      eventType,
    });
  }

  private rejected(error: unknown): void {
    if (error instanceof InvalidEventError || error instanceof InvalidTransitionError) {
      this.options.onRejected?.(error);
    }
  }

  /** Throws what {@link send} would throw for `event`, without sending it. */
  check(event: unknown): EventFromLogic<TLogic> {
    try {
      return checkedEvent(this.machine, this.ref.getSnapshot(), event, {
        actorId: this.options.id,
        schemas: this.options.schemas,
        maxEventBytes: this.options.maxEventBytes,
      });
    } catch (error) {
      if (error instanceof InvalidEventError || error instanceof InvalidTransitionError) {
        this.options.onRejected?.(error);
      }
      throw error;
    }
  }

  /** Whether {@link send} would accept `event` now. */
  can(event: unknown): boolean {
    try {
      checkedEvent(this.machine, this.ref.getSnapshot(), event, {
        schemas: this.options.schemas,
        maxEventBytes: this.options.maxEventBytes,
      });
      return true;
    } catch {
      return false;
    }
  }

  getSnapshot(): SnapshotFrom<TLogic> {
    return this.ref.getSnapshot();
  }

  getPersistedSnapshot(): Snapshot<unknown> {
    return this.ref.getPersistedSnapshot();
  }

  /** Called with each new snapshot: a function or an observer, as XState's `Subscribable`. */
  subscribe(
    listener: ((snapshot: SnapshotFrom<TLogic>) => void) | Observer<SnapshotFrom<TLogic>>,
  ): Subscription {
    return typeof listener === 'function'
      ? this.ref.subscribe(listener)
      : this.ref.subscribe(listener);
  }
}

/**
 * Creates an in-memory actor that rejects bad and illegal events with typed errors,
 * from a machine or its chart (whose event schemas and default input it takes).
 * Call `.start()` as with XState's `createActor`.
 *
 * @example
 * import { createStrictActor } from 'agentcharts';
 * import { taskLifecycle } from 'agentcharts/machines';
 *
 * const task = createStrictActor(taskLifecycle.machine, { id: 't1', input: { taskId: 't1' } }).start();
 * task.send({ type: 'START' });
 */
export function createStrictActor<TLogic extends AnyStateMachine>(
  machineOrChart: TLogic | ChartDefinition<TLogic>,
  options: StrictActorOptions<TLogic> = {},
): StrictActor<TLogic> {
  requireArg(
    'createStrictActor',
    'machine',
    isMachine(machineOrChart) || isChartDefinition(machineOrChart),
    EXPECTED.machineOrChart,
  );
  requireOptions('createStrictActor', options);
  // A chart's event schemas (also found from its machine) and default input.
  const { machine, chart } = chartAndMachine(machineOrChart);
  const input = options.input ?? chart?.defaultInput;
  const schemas = options.schemas ?? chartEvents(chart);
  return new StrictActor(machine, {
    ...options,
    ...(input !== undefined ? { input } : {}),
    ...(schemas !== undefined ? { schemas } : {}),
  });
}
