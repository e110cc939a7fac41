/**
 * XState's pure functions (`transition`, `initialTransition`, snapshot restore)
 * over one inert actor scope per machine. XState builds a scope per call with
 * `createActor(machine)`, which eagerly computes an initial snapshot — running the
 * chart's context factory and its input validation, which throws (with a stack
 * trace) for want of input — on every event. The durable runtime and `verify` call
 * these for every event, so the scope is built once per machine. Actions are
 * collected, never run.
 */
import {
  createActor,
  type ActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';

type Scope = ActorScope<AnyMachineSnapshot, EventObject>;

const scopes = new WeakMap<AnyStateMachine, Scope>();
const ignore = (): void => {};

/**
 * The parent every pure transition sees (`sendParent` resolves to it): the send
 * path turns events sent to it into messages to the actor's durable parent.
 */
export const PARENT_REF = Object.freeze({ id: '#_parent', sessionId: '#_parent' });

function scopeOf(machine: AnyStateMachine): Scope {
  let scope = scopes.get(machine);
  if (!scope) {
    const self = createActor(machine);
    (self as unknown as { _parent: unknown })._parent = PARENT_REF;
    scope = {
      self,
      defer: ignore,
      id: '',
      logger: ignore,
      sessionId: '',
      stopChild: ignore,
      system: self.system,
      emit: ignore,
      actionExecutor: ignore,
    };
    scopes.set(machine, scope);
  }
  return scope;
}

/** Runs `step` with the scope's action executor collecting into a fresh list. */
function collecting<T>(machine: AnyStateMachine, step: (scope: Scope) => T): [T, unknown[]] {
  const scope = scopeOf(machine);
  const actions: unknown[] = [];
  scope.actionExecutor = (action) => {
    actions.push(action);
  };
  try {
    const result = step(scope);
    forget(scope, result);
    return [result, actions];
  } finally {
    scope.actionExecutor = ignore;
  }
}

/**
 * Child actor refs a pure call created register in the shared scope's system (by
 * session id, and by system id when they have one); they are taken out again so
 * the system holds nothing across calls and a system id is never taken twice.
 */
function forget(scope: Scope, snapshot: unknown): void {
  const children = (snapshot as { children?: Record<string, unknown> }).children;
  for (const id in children) {
    (scope.system as unknown as { _unregister(ref: unknown): void })._unregister(children[id]);
  }
}

/** `transition(machine, snapshot, event)`: the next snapshot and the actions to run. */
export function pureTransition(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: EventObject,
): [AnyMachineSnapshot, unknown[]] {
  return collecting(
    machine,
    (scope) => machine.transition(snapshot, event, scope) as AnyMachineSnapshot,
  );
}

/** `initialTransition(machine, input)`: the initial snapshot and its entry actions. */
export function pureInitial(
  machine: AnyStateMachine,
  input: unknown,
): [AnyMachineSnapshot, unknown[]] {
  return collecting(
    machine,
    (scope) => machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot,
  );
}

/** A live snapshot from its persisted (JSON) form, without starting anything. */
export function pureRestore(machine: AnyStateMachine, persisted: unknown): AnyMachineSnapshot {
  const scope = scopeOf(machine);
  const snapshot = machine.restoreSnapshot(persisted as never, scope) as AnyMachineSnapshot;
  forget(scope, snapshot);
  return snapshot;
}

/** A JSON-safe form of what was thrown (or a promise rejected with). */
export function errorValue(error: unknown): unknown {
  if (error instanceof Error) return { name: error.name, message: error.message };
  try {
    const text = JSON.stringify(error);
    return text === undefined ? String(error) : (JSON.parse(text) as unknown);
  } catch {
    return String(error);
  }
}

/**
 * Runs a pure transition. When it throws, a send with a caller rethrows (it is
 * refused, nothing written); a message or a timer has no caller, so the actor
 * fails as XState's does: the same state, status `error`, the error as JSON.
 * The send path commits that snapshot and `verify` replays it the same way.
 * `sourceOf` is asked only when the transition threw.
 */
export function transitionOrFail(
  previous: AnyMachineSnapshot,
  sourceOf: () => unknown,
  step: () => [AnyMachineSnapshot, unknown[]],
): { next: AnyMachineSnapshot; actions: unknown[]; failed: boolean } {
  try {
    const [next, actions] = step();
    return { next, actions, failed: false };
  } catch (error) {
    const source = sourceOf();
    if (source !== 'message' && source !== 'timer') throw error;
    const next = { ...previous, status: 'error', error: errorValue(error) } as AnyMachineSnapshot;
    return { next, actions: [], failed: true };
  }
}
