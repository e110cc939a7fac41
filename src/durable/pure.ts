/**
 * XState's pure functions (`transition`, `initialTransition`, snapshot restore)
 * over one inert actor scope per machine. XState builds a scope per call with
 * `createActor(machine)`, which eagerly computes an initial snapshot — running the
 * chart's context factory, its input validation and its initial entry actions
 * (a `spawnChild` with a `systemId` there takes that id in the scope's system) —
 * on every event. The durable runtime and `verify` call these for every event, so
 * the scope is built once per machine, around an actor of an empty machine that
 * has no entry of its own. Actions are collected, never run.
 */
import {
  createActor,
  createMachine,
  type ActorScope,
  type AnyActorRef,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';
import { LEDGER_KEY } from './ledger.ts';
import { applyAtomicOrder, recordedOrder } from './node-order.ts';

type Scope = ActorScope<AnyMachineSnapshot, EventObject>;

/** The parts of XState's actor system a pure call touches (internal, but stable across v5). */
interface SystemInternals {
  _set(systemId: string, ref: AnyActorRef): void;
  _unregister(ref: AnyActorRef): void;
  get(systemId: string): AnyActorRef | undefined;
  _sendInspectionEvent(event: { type: string; actorRef?: AnyActorRef }): void;
}

/**
 * The mark a pure call puts among the actions it collects where an actor was
 * created: XState starts a child spawned inside `assign` (which is no action) at
 * that point of the step, so its spawn goes there among the step's effects.
 */
export const CREATED = 'agentcharts.created';

type SystemRef = AnyActorRef & { systemId?: string };

/**
 * The system ids an actor's step may find elsewhere in its tree (XState's system
 * is shared by a root and all its descendants): each id to the durable actor that
 * holds it, or null where none does. Ids the actor's own children hold are found
 * in its snapshot instead.
 */
export type TreeSystemIds = ReadonlyMap<string, string | null>;

/** What a pure call looked up by system id beyond its own children, and what it found. */
export interface SystemLookup {
  /** The answers to give (see {@link TreeSystemIds}); ids not in it are not found. */
  readonly system?: TreeSystemIds | undefined;
  /** Every system id the call asked for that its own children do not hold (made when needed). */
  asked: Set<string> | undefined;
}

/**
 * The receiver of a send to an actor of the tree found by its system id: the
 * durable actor's id, or {@link NOWHERE} for an actor that takes no events (a
 * promise).
 */
export const NOWHERE = '#nowhere';
const REMOTE = Symbol('agentcharts.remote');
type RemoteRef = AnyActorRef & { [REMOTE]: string };
const remoteRefs = new Map<string, RemoteRef>();

/** The stand-in `system.get` returns for an actor of the tree (one object per actor and id). */
function remoteRef(actorId: string, systemId: string): AnyActorRef {
  const key = `${systemId}\u0000${actorId}`;
  let ref = remoteRefs.get(key);
  if (ref === undefined) {
    ref = Object.freeze({
      id: systemId,
      sessionId: `#remote:${actorId}`,
      systemId,
      [REMOTE]: actorId,
    }) as unknown as RemoteRef;
    if (remoteRefs.size > 10_000) remoteRefs.clear();
    remoteRefs.set(key, ref);
  }
  return ref;
}

/** The durable actor a ref `system.get` returned stands for (see {@link remoteRef}). */
export function remoteActorOf(ref: unknown): string | undefined {
  return typeof ref === 'object' && ref !== null && REMOTE in ref
    ? (ref as RemoteRef)[REMOTE]
    : undefined;
}

/** What a call that threw had run before it threw, by the error it threw. */
const runBeforeThrow = new WeakMap<object, unknown[]>();

/**
 * The system ids a step that threw had already moved (Ledger.orphaned): XState
 * runs each action as it resolves, so a stop before the throw took the child's
 * id off the system (its stop itself is deferred, and never runs), and a spawn
 * gave its id to an actor that never starts. Undefined when it moved none.
 */
export function orphanedBy(error: unknown): Record<string, 'released' | 'lost'> | undefined {
  const actions =
    typeof error === 'object' && error !== null ? runBeforeThrow.get(error) : undefined;
  let orphaned: Record<string, 'released' | 'lost'> | undefined;
  for (const action of (actions ?? []) as Array<{ type?: unknown; params?: unknown }>) {
    let ref: unknown;
    let kind: 'released' | 'lost';
    if (action.type === 'xstate.stopChild') [ref, kind] = [action.params, 'released'];
    else if (action.type === 'xstate.spawnChild') {
      [ref, kind] = [(action.params as { actorRef?: unknown } | undefined)?.actorRef, 'lost'];
    } else if (action.type === CREATED) [ref, kind] = [action.params, 'lost'];
    else continue;
    const systemId = (ref as { systemId?: unknown } | undefined)?.systemId;
    if (typeof systemId === 'string') (orphaned ??= {})[systemId] = kind;
  }
  return orphaned;
}

/**
 * Whether `systemId`, which `ref` takes, is held by another actor: a child of the
 * snapshot the call starts from that runs on (not finished, not stopped by the
 * call), or an actor elsewhere in the tree (the call's lookup; asked for, so the
 * send path looks it up). Only calls that make lookups check (a step, not a
 * restore).
 */
function takenElsewhere(pure: PureScope, systemId: string, ref: AnyActorRef): boolean {
  const children = pure.before;
  for (const id in children) {
    const child = children[id];
    if (child === undefined || child === ref || child.systemId !== systemId) continue;
    if (pure.finished?.includes(id) || pure.stopped.includes(child)) continue;
    return true;
  }
  const lookup = pure.lookup as SystemLookup;
  (lookup.asked ??= new Set()).add(systemId);
  return typeof lookup.system?.get(systemId) === 'string';
}

interface PureScope {
  scope: Scope;
  /** The current call's lookups beyond its own children, when it makes them. */
  lookup: SystemLookup | undefined;
  /** Child refs given a system id during the current call (taken out again after it). */
  keyed: AnyActorRef[];
  /** The children of the snapshot the current call starts from. */
  before: Record<string, SystemRef | undefined> | undefined;
  /** Ids of `before` children that have finished (XState forgot their system ids). */
  finished: readonly string[] | undefined;
  /** Children the current call stopped (their system ids are free at once). */
  stopped: AnyActorRef[];
  /** Where the current call collects its actions ({@link CREATED} marks too). */
  actions: unknown[] | undefined;
  /**
   * During a call, what `self.getSnapshot()` gives: the snapshot it starts from
   * (undefined for an initial one), as a live XState actor's `self` gives its
   * snapshot before the step to a guard or an `assign` computing it.
   */
  current: AnyMachineSnapshot | undefined;
  /** Whether a call is under way (outside one, `self` is the inert actor it is). */
  calling: boolean;
}

const scopes = new WeakMap<AnyStateMachine, PureScope>();
/** The `self` of every pure scope (a `sendTo` to it is a send to the actor itself). */
const selves = new WeakSet<object>();
const ignore = (): void => {};

/**
 * The parent every pure transition sees (`sendParent` resolves to it): the send
 * path turns events sent to it into messages to the actor's durable parent.
 */
export const PARENT_REF = Object.freeze({ id: '#_parent', sessionId: '#_parent' });

/** Whether `ref` is the `self` of a pure transition (`sendTo(self)`, `sendTo('#_internal')`). */
export function isPureSelf(ref: unknown): boolean {
  return typeof ref === 'object' && ref !== null && selves.has(ref);
}

/** An empty machine: its actor is the scope's `self` without running the chart's initial state. */
const INERT = createMachine({ id: 'agentcharts.pure' });

function scopeOf(machine: AnyStateMachine): PureScope {
  let pure = scopes.get(machine);
  if (!pure) {
    const self = createActor(INERT, { id: machine.id });
    selves.add(self);
    const inertSnapshot = self.getSnapshot.bind(self);
    (self as { getSnapshot: () => unknown }).getSnapshot = () =>
      pure?.calling === true ? pure.current : inertSnapshot();
    (self as unknown as { _parent: unknown })._parent = PARENT_REF;
    const keyed: AnyActorRef[] = [];
    // Every system id taken during a call is recorded, so the system holds none
    // across calls and a system id is never taken twice.
    const system = self.system as unknown as SystemInternals;
    const set = system._set.bind(system);
    system._set = (systemId, ref) => {
      // A spawn's system id held elsewhere in the tree, or by a running child of
      // this actor's own: XState's system refuses it, and the step throws.
      if (pure?.lookup !== undefined && takenElsewhere(pure, systemId, ref)) {
        throw new Error(`Actor with system ID '${systemId}' already exists.`);
      }
      keyed.push(ref);
      set(systemId, ref);
    };
    // `system.get(id)` finds the children the snapshot had too, as in a live actor
    // (they are not registered: a child stopped and spawned again with its system id
    // in one transition must not collide with itself) — but not one that has
    // finished, nor one this call stopped: XState forgets the system id of an actor
    // that stops or finishes, and a `sendTo` that finds no actor goes to the sender.
    // Every actor made during a call is marked among its actions, in order.
    const inspect = system._sendInspectionEvent.bind(system);
    system._sendInspectionEvent = (event) => {
      if (event.type === '@xstate.actor' && event.actorRef !== self) {
        pure?.actions?.push({ type: CREATED, params: event.actorRef });
      }
      inspect(event);
    };
    const get = system.get.bind(system);
    system.get = (systemId) => {
      const found = get(systemId);
      if (found !== undefined) return found;
      const children = pure?.before;
      for (const id in children) {
        const child = children[id];
        if (child?.systemId !== systemId) continue;
        if (pure?.finished?.includes(id) || pure?.stopped.includes(child)) continue;
        return child;
      }
      const lookup = pure?.lookup;
      if (lookup === undefined) return undefined;
      (lookup.asked ??= new Set()).add(systemId);
      const elsewhere = lookup.system?.get(systemId);
      return typeof elsewhere === 'string' ? remoteRef(elsewhere, systemId) : undefined;
    };
    const scope: Scope = {
      self,
      defer: ignore,
      id: machine.id,
      logger: ignore,
      sessionId: '',
      stopChild: ignore,
      system: self.system,
      emit: ignore,
      actionExecutor: ignore,
    };
    pure = {
      scope,
      lookup: undefined,
      keyed,
      before: undefined,
      finished: undefined,
      stopped: [],
      actions: undefined,
      current: undefined,
      calling: false,
    };
    scopes.set(machine, pure);
  }
  return pure;
}

/**
 * Runs `step` with the scope's action executor collecting into a fresh list, the
 * children of `before` visible to `system.get` (but those in `finished`); every
 * system id taken is released after it.
 */
function collecting<T>(
  machine: AnyStateMachine,
  before: AnyMachineSnapshot | undefined,
  step: (scope: Scope) => T,
  finished?: readonly string[],
  lookup?: SystemLookup,
): [T, unknown[]] {
  const pure = scopeOf(machine);
  const { scope, keyed } = pure;
  const actions: unknown[] = [];
  const system = scope.system as unknown as SystemInternals;
  scope.actionExecutor = (action) => {
    actions.push(action);
    // A stop frees the child's system id at once, as XState's stop does: a spawn
    // with that id later in the same step takes it.
    if (action.type === 'xstate.stopChild' && action.params) {
      system._unregister(action.params as AnyActorRef);
      pure.stopped.push(action.params as AnyActorRef);
    }
  };
  pure.before = before?.children as PureScope['before'];
  pure.finished = finished;
  pure.actions = actions;
  pure.lookup = lookup;
  pure.current = before;
  pure.calling = true;
  try {
    return [step(scope), actions];
  } catch (error) {
    if (typeof error === 'object' && error !== null) runBeforeThrow.set(error, actions);
    throw error;
  } finally {
    scope.actionExecutor = ignore;
    pure.before = undefined;
    pure.finished = undefined;
    pure.lookup = undefined;
    pure.stopped.length = 0;
    pure.actions = undefined;
    pure.current = undefined;
    pure.calling = false;
    if (keyed.length > 0) {
      for (const ref of keyed) system._unregister(ref);
      keyed.length = 0;
    }
  }
}

/**
 * `transition(machine, snapshot, event)`: the next snapshot and the actions XState
 * executed. `finished`: ids of the snapshot's children that have finished (a live
 * XState actor has forgotten their system ids). `lookup`: what `system.get` finds
 * beyond the actor's own children, and where it notes what it asked for.
 */
export function pureTransition(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: EventObject,
  finished?: readonly string[],
  lookup?: SystemLookup,
): [AnyMachineSnapshot, unknown[]] {
  return collecting(
    machine,
    snapshot,
    (scope) => machine.transition(snapshot, event, scope) as AnyMachineSnapshot,
    finished,
    lookup,
  );
}

/** `initialTransition(machine, input)`: the initial snapshot and its entry actions. */
export function pureInitial(
  machine: AnyStateMachine,
  input: unknown,
  lookup?: SystemLookup,
): [AnyMachineSnapshot, unknown[]] {
  return collecting(
    machine,
    undefined,
    (scope) => machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot,
    undefined,
    lookup,
  );
}

/** A live snapshot from its persisted (JSON) form, without starting anything. */
export function pureRestore(machine: AnyStateMachine, persisted: unknown): AnyMachineSnapshot {
  const snapshot = collecting(
    machine,
    undefined,
    (scope) => machine.restoreSnapshot(persisted as never, scope) as AnyMachineSnapshot,
  )[0];
  // The order its active atomic states were entered in, when it is not the state
  // value's (./node-order.ts).
  const order = recordedOrder(persisted, LEDGER_KEY);
  if (order !== undefined) applyAtomicOrder(snapshot, order);
  return snapshot;
}

/** How deep an error's `cause` chain is kept. */
const MAX_CAUSES = 4;
/** How many of an error's own fields are kept. */
const MAX_ERROR_FIELDS = 16;

/**
 * A JSON-safe form of what was thrown (or a promise rejected with), as the actor
 * and its log keep it. An `Error` becomes `{ name, message }` with its own fields
 * whose values are strings, numbers, booleans or null (an HTTP error's `code` or
 * `status`, which an `onError` guard reads), and its `cause` in the same form;
 * objects on it are left out (a client's request config may hold credentials,
 * and a response may be any size). `undefined` stays undefined; anything else
 * is what JSON carries of it, or its string where JSON cannot.
 */
export function errorValue(error: unknown, depth = 0): unknown {
  if (error === undefined) return undefined;
  if (error instanceof Error) {
    const value: Record<string, unknown> = { name: error.name, message: error.message };
    let fields = 0;
    for (const key of Object.keys(error)) {
      if (fields >= MAX_ERROR_FIELDS) break;
      if (key in value || key === 'cause' || key === 'stack' || key === '__proto__') continue;
      const field = (error as unknown as Record<string, unknown>)[key];
      const kind = typeof field;
      if (field === null || kind === 'string' || kind === 'boolean') value[key] = field;
      else if (kind === 'number') value[key] = Number.isFinite(field) ? field : null;
      else continue;
      fields++;
    }
    const cause = (error as { cause?: unknown }).cause;
    if (cause !== undefined && depth < MAX_CAUSES) value['cause'] = errorValue(cause, depth + 1);
    return value;
  }
  return jsonOrText(error);
}

/** What JSON carries of `value`, or its string where JSON cannot (a function, a BigInt, a cycle). */
function jsonOrText(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : (JSON.parse(text) as unknown);
  } catch {
    return String(value);
  }
}
