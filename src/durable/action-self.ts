/**
 * The `self` a user action runs with. XState computes a durable actor's step
 * with its pure `transition()`, whose `self` is an inert stand-in, and runs the
 * step's user actions after the commit; an action that calls `self.send(...)`
 * (a common way to feed an action's own async work back in) or reads
 * `self.getSnapshot()` would reach the stand-in and be lost. This `self` is the
 * durable actor's:
 *
 * - `send` during the step's actions is taken right after the step, in order and
 *   before anything else the actor has queued, as XState's mailbox takes an event
 *   an action sends while its step runs; later (from a callback, after an await)
 *   it is sent as a caller's event is. Either way the event is checked as a
 *   caller's event is (schemas, JSON), and one its state does not take is logged
 *   and dropped, as XState ignores it. It is not durable until its own step
 *   commits: like every user action, it runs after the commit that made it, at
 *   most once across a crash (`raise` and `sendTo(self)` are part of the commit).
 * - `getSnapshot` during the step's actions is the snapshot before the step (XState
 *   runs an action while its step is computed), and the current one after them.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import type { ActorCore } from './actor-core.ts';

/** Metadata of a step an action's `self.send` made (its transition row's, with `source: 'send'`). */
export const ACTION_SEND_METADATA = Object.freeze({ by: 'self' });

/** The `self` user actions of a durable actor see. */
export interface ActionSelf {
  readonly id: string;
  readonly sessionId: string;
  send(event: EventObject): void;
  getSnapshot(): AnyMachineSnapshot;
  /** As XState serialises an actor ref. */
  toJSON(): { xstate$$type: 1; id: string };
}

/** While a step's actions run: the snapshot they see and the events they send. */
interface Running {
  before: AnyMachineSnapshot;
  sent: EventObject[];
}

const running = new WeakMap<ActorCore, Running>();
const selves = new WeakMap<ActorCore, ActionSelf>();

/** The durable actor's `self` for its user actions (one object per actor). */
export function actionSelf(core: ActorCore): ActionSelf {
  let self = selves.get(core);
  if (self === undefined) {
    self = Object.freeze({
      id: core.id,
      sessionId: `#durable:${core.id}`,
      send(event: EventObject): void {
        const now = running.get(core);
        if (now !== undefined) now.sent.push(event);
        else core.handle?.sendFromAction(event);
      },
      getSnapshot(): AnyMachineSnapshot {
        return running.get(core)?.before ?? core.snapshot;
      },
      toJSON: () => ({ xstate$$type: 1 as const, id: core.id }),
    });
    selves.set(core, self);
  }
  return self;
}

/**
 * Runs a step's user actions (`run`) with {@link actionSelf} seeing `before`;
 * returns the events they sent to the actor itself, in order (undefined: none).
 */
export function runningActions(
  core: ActorCore,
  before: AnyMachineSnapshot,
  run: () => void,
): EventObject[] | undefined {
  const now: Running = { before, sent: [] };
  running.set(core, now);
  try {
    run();
  } finally {
    running.delete(core);
  }
  return now.sent.length > 0 ? now.sent : undefined;
}

/** The action's arguments with the durable actor's `self` in place of the stand-in. */
export function withActionSelf(info: unknown, self: ActionSelf): unknown {
  return typeof info === 'object' && info !== null ? { ...info, self } : info;
}
