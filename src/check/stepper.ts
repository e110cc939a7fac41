/**
 * XState's pure transition, seen microstep by microstep: the snapshot each
 * microstep of a macrostep rests in (a final child whose `onDone` fires at once, a
 * state left by an eventless transition) and the events the chart raised inside
 * it (a timer raising RETRY). The check needs both: a state reached only in
 * passing is still reached, and a timer's raised event is the event that moved
 * the machine. One inert actor scope per machine, listening to XState's own
 * `@xstate.microstep` inspection events; actions are collected, never run.
 */
import {
  createActor,
  createMachine,
  getInitialMicrosteps,
  type ActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';

/**
 * An empty machine: its actor is the scope's `self`, so that making the scope runs
 * nothing of the chart (its context factory, its initial entry, a spawn's system id).
 */
const INERT = createMachine({ id: 'agentcharts.check' });

/** The parent a pure transition's `sendParent` resolves to: what the chart tells its parent. */
const PARENT = Object.freeze({ id: '#_parent', sessionId: '#_parent' });

/** One macrostep: where it ends, what it passed through, what it raised and sent. */
export interface Step {
  snapshot: AnyMachineSnapshot;
  /** Snapshots of the microsteps before the last (empty when there was one). */
  passing: AnyMachineSnapshot[];
  /** Events the chart raised and took inside the macrostep (not `xstate.*`). */
  raised: EventObject[];
  /** Types of the events the chart sent to its parent (`sendParent`). */
  toParent: string[];
}

export interface Stepper {
  initial(input: unknown): Step;
  next(snapshot: AnyMachineSnapshot, event: EventObject): Step;
}

type Scope = ActorScope<AnyMachineSnapshot, EventObject>;
const ignore = (): void => {};

/** A stepper over `machine` (one scope, reused for every transition). */
export function stepperFor(machine: AnyStateMachine): Stepper {
  const microsteps: Array<{ event: EventObject; snapshot: AnyMachineSnapshot }> = [];
  const self = createActor(INERT, {
    id: machine.id,
    inspect: (ev) => {
      if (ev.type === '@xstate.microstep') {
        const { event, snapshot } = ev as unknown as {
          event: EventObject;
          snapshot: AnyMachineSnapshot;
        };
        microsteps.push({ event, snapshot });
      }
    },
  });
  (self as unknown as { _parent: unknown })._parent = PARENT;
  const actions: unknown[] = [];
  const scope: Scope = {
    self,
    defer: ignore,
    id: '',
    logger: ignore,
    sessionId: '',
    stopChild: ignore,
    system: self.system,
    emit: ignore,
    actionExecutor: (action) => {
      actions.push(action);
    },
  };

  /** Child refs a pure call registered in the system are taken out again (as src/durable/pure.ts). */
  const forget = (snapshot: AnyMachineSnapshot): void => {
    const children = snapshot.children as Record<string, unknown>;
    for (const id in children) {
      (scope.system as unknown as { _unregister(ref: unknown): void })._unregister(children[id]);
    }
  };

  const finish = (snapshot: AnyMachineSnapshot, first: EventObject | undefined): Step => {
    forget(snapshot);
    const passing = microsteps.slice(0, -1).map((m) => m.snapshot);
    const raised: EventObject[] = [];
    for (const m of microsteps) {
      if (m.event === first || m.event.type.startsWith('xstate.') || raised.includes(m.event)) {
        continue;
      }
      raised.push(m.event);
    }
    const toParent: string[] = [];
    for (const raw of actions) {
      const action = raw as { type?: string; params?: { to?: unknown; event?: EventObject } };
      if (action.type === 'xstate.sendTo' && action.params?.to === PARENT && action.params.event) {
        toParent.push(action.params.event.type);
      }
    }
    microsteps.length = 0;
    actions.length = 0;
    return { snapshot, passing, raised, toParent };
  };

  return {
    initial(input) {
      microsteps.length = 0;
      actions.length = 0;
      const snapshot = machine.getInitialSnapshot(scope, input) as AnyMachineSnapshot;
      // The initial macrostep is not inspected; XState's own microsteps of it are.
      const steps = getInitialMicrosteps(machine, input as never) as Array<
        [AnyMachineSnapshot, unknown]
      >;
      microsteps.length = 0;
      for (const [s] of steps) microsteps.push({ event: { type: 'xstate.init' }, snapshot: s });
      return finish(snapshot, undefined);
    },
    next(snapshot, event) {
      microsteps.length = 0;
      actions.length = 0;
      const next = machine.transition(snapshot, event, scope) as AnyMachineSnapshot;
      return finish(next, event);
    },
  };
}
