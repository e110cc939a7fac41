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
import { isPureSelf } from './pure.ts';

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
        else void core.handle?.sendFromAction(event);
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

/** How deep {@link withLiveSelf} looks into an input for the actor's `self`. */
const INPUT_DEPTH = 32;

/** What promises sent an actor through their input's `self`, not taken yet (in the order sent). */
interface PromiseSends {
  queue: Array<{ event: EventObject; from: PromiseSelf }>;
  /** A take of the queue is scheduled. */
  pumping: boolean;
}

const promiseSends = new WeakMap<ActorCore, PromiseSends>();

/**
 * The `self` a promise's input holds during one run of it. Its sends join one
 * queue per actor, shared by every promise the actor runs, in the order they are
 * made: the queue is taken in the actor's turn, and before any promise outcome
 * is delivered ({@link takePromiseSends}), so the sends promises make before an
 * outcome reach the actor before it, as XState's mailbox takes a `parent.send`
 * ahead of the outcome of a promise that settled after it (of this promise or
 * another). A send made once the runtime is closed is lost; the run is then
 * {@link PromiseSelf.lost}, and its outcome is not recorded (recovery settles the
 * step), so the log never shows the outcome without the sends before it.
 */
export class PromiseSelf implements ActionSelf {
  readonly id: string;
  readonly sessionId: string;
  /** A send of this run could not be taken (the runtime closed). */
  lost = false;

  constructor(private readonly core: ActorCore) {
    this.id = core.id;
    this.sessionId = `#durable:${core.id}`;
  }

  send(event: EventObject): void {
    const core = this.core;
    if (core.runtime.isClosed || core.handle === undefined) {
      this.lost = true;
      return;
    }
    let sends = promiseSends.get(core);
    if (sends === undefined) promiseSends.set(core, (sends = { queue: [], pumping: false }));
    sends.queue.push({ event, from: this });
    if (sends.pumping) return;
    sends.pumping = true;
    const pumped = sends;
    const take = (): Promise<void> => {
      pumped.pumping = false;
      return takePromiseSends(core);
    };
    const turn = core.runtime.turnFor(core.id);
    void (turn === undefined ? take() : turn.then(take));
  }

  getSnapshot(): AnyMachineSnapshot {
    return this.core.snapshot;
  }

  toJSON(): { xstate$$type: 1; id: string } {
    return { xstate$$type: 1, id: this.core.id };
  }
}

/**
 * Takes what promises sent `core` through their input's `self` and is not taken
 * yet ({@link PromiseSelf}); a take that fails marks the runs they came from lost.
 */
export async function takePromiseSends(core: ActorCore): Promise<void> {
  const sends = promiseSends.get(core);
  if (sends === undefined || sends.queue.length === 0) return;
  const taken = sends.queue.splice(0);
  try {
    await core.handle?.takeActionSends(taken.map((s) => s.event));
  } catch {
    for (const { from } of taken) from.lost = true;
  }
}

/**
 * A promise's input with the invoking actor's `self` in it made live again
 * (`input: ({ self }) => ({ parent: self })`, then `input.parent.send(…)` to report
 * progress, as with XState): the step's input was computed by a pure transition
 * with its inert `self`, and after a restart it comes from the ledger as the JSON
 * XState writes for a ref (`{ xstate$$type: 1, id: <machine id> }`). Either is
 * replaced by `self`. Other refs stay as they are (a child's ref is persisted as
 * its id).
 */
export function withLiveSelf(core: ActorCore, input: unknown, self: ActionSelf): unknown {
  return revive(core, input, self, 0);
}

function revive(core: ActorCore, value: unknown, self: ActionSelf, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > INPUT_DEPTH) return value;
  if (isPureSelf(value) || isSelfJson(core, value)) return self;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const next = revive(core, item, self, depth + 1);
      if (next !== item) (copy ??= [...value])[i] = next;
    });
    return copy ?? value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const next = revive(core, item, self, depth + 1);
    if (next !== item) (copy ??= { ...value })[key] = next;
  }
  return copy ?? value;
}

/** The JSON XState persists for the pure transition's `self`: exactly `{ xstate$$type: 1, id }`. */
function isSelfJson(core: ActorCore, value: object): boolean {
  const ref = value as { xstate$$type?: unknown; id?: unknown };
  return ref.xstate$$type === 1 && ref.id === core.machine.id && Object.keys(value).length === 2;
}
