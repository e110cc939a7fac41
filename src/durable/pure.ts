import {
  createActor,
  type ActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';

const scopes = new WeakMap<AnyStateMachine, ActorScope<AnyMachineSnapshot, EventObject>>();

/**
 * XState's pure `transition()`, with one inert actor scope per machine instead of
 * one per call. `transition()` builds its scope with `createActor(machine)`, which
 * eagerly computes an initial snapshot, running the chart's context factory (and
 * its input validation) on every event; the durable send path and `verify` call it
 * for every event, so the scope is built once. Actions are collected, never run.
 */
export function pureTransition(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: EventObject,
): [AnyMachineSnapshot, unknown[]] {
  let scope = scopes.get(machine);
  if (!scope) {
    const self = createActor(machine);
    scope = {
      self,
      defer: () => {},
      id: '',
      logger: () => {},
      sessionId: '',
      stopChild: () => {},
      system: self.system,
      emit: () => {},
      actionExecutor: () => {},
    };
    scopes.set(machine, scope);
  }
  const actions: unknown[] = [];
  scope.actionExecutor = (action) => {
    actions.push(action);
  };
  const next = machine.transition(snapshot, event, scope) as AnyMachineSnapshot;
  scope.actionExecutor = () => {};
  return [next, actions];
}
