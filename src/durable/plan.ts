/**
 * What a transition asks for besides its snapshot, read off the actions XState's
 * pure `transition()` returned: durable timer changes (delayed raises and their
 * cancels), emitted events, and user effects that run after the commit.
 */
import type { AnyActorLogic, AnyActorRef, EventObject } from 'xstate';
import type { TimerRow } from '../store/types.ts';

/** A user action, run after its transition committed. */
export interface Effect {
  type: string;
  exec: ((info: unknown, params: unknown) => void) | undefined;
  info: unknown;
  params: unknown;
}

/** A child actor the transition spawned (an invoke entered, or `spawnChild`). */
export interface Spawn {
  id: string;
  /** The child's logic (XState's actor ref carries it) and its input. */
  logic: AnyActorLogic;
  input: unknown;
}

export interface Plan {
  timersSet: TimerRow[];
  timersCancel: string[];
  emitted: EventObject[];
  effects: Effect[];
  spawned: Spawn[];
  /** Ids of child actors the transition stopped (their state was left). */
  stopped: string[];
}

interface RaiseParams {
  delay?: number;
  id?: string;
  event?: EventObject;
  sendId?: string;
}

/**
 * Splits the actions of one transition. Timers get absolute due times from `now`;
 * a timer set and cancelled in the same transition ends as whichever came last.
 */
export function planActions(actorId: string, now: number, actions: readonly unknown[]): Plan {
  const plan: Plan = {
    timersSet: [],
    timersCancel: [],
    emitted: [],
    effects: [],
    spawned: [],
    stopped: [],
  };
  for (const raw of actions) {
    const action = raw as Effect & { params?: RaiseParams };
    const params: RaiseParams = action.params ?? {};
    switch (action.type) {
      case 'xstate.raise':
        if (typeof params.delay === 'number' && params.event) {
          const timerId = params.id ?? `raise:${params.event.type}`;
          plan.timersSet.push({
            actorId,
            timerId,
            event: JSON.stringify(params.event),
            dueAt: now + params.delay,
          });
          if (plan.timersCancel.length > 0) {
            plan.timersCancel = plan.timersCancel.filter((t) => t !== timerId);
          }
        }
        break;
      case 'xstate.cancel':
        if (typeof params.sendId === 'string') {
          const id = params.sendId;
          if (plan.timersSet.length > 0)
            plan.timersSet = plan.timersSet.filter((t) => t.timerId !== id);
          plan.timersCancel.push(id);
        }
        break;
      case 'xstate.emit':
        if (params.event) plan.emitted.push(params.event);
        break;

      default:
        // Other built-ins (assign, log) are applied inside the pure transition; user
        // actions run after commit.
        if (!action.type.startsWith('xstate.')) plan.effects.push(action);
    }
  }
  return plan;
}

type Children = Record<string, AnyActorRef | undefined>;

/**
 * The child actors a transition started and stopped, from the snapshots' children
 * (a spawn inside `assign` leaves no action to read): a child is new when its id
 * is new or holds another actor ref (its state was re-entered).
 */
export function planChildren(
  plan: Plan,
  previous: { children: unknown } | undefined,
  next: { children: unknown },
): void {
  const before = (previous?.children ?? {}) as Children;
  const after = next.children as Children;
  for (const id in before) {
    if (after[id] !== before[id]) plan.stopped.push(id);
  }
  for (const id in after) {
    const child = after[id];
    if (child === undefined || child === before[id]) continue;
    const logic = (child as unknown as { logic: AnyActorLogic }).logic;
    const input = (child.getSnapshot() as { input?: unknown } | undefined)?.input;
    plan.spawned.push({ id, logic, input });
  }
}
