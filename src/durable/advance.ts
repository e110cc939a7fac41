/**
 * One step of a durable actor, decided the same way live and in replay: the send
 * path commits what this returns, and `verify` and time travel rebuild the log
 * with it. Given the snapshot, the ledger and an event with its source:
 *
 * - a caller's event (`send`, `recover`) the state does not take is refused, and a
 *   transition that throws on one is rethrown: the caller hears of it, nothing is
 *   written;
 * - an effect (a timer, a message, an invoke's result) is consumed exactly once
 *   whatever the receiver does with it: taken (a transition), not taken (dropped,
 *   as XState drops it, and recorded as such), or failing the actor when its
 *   transition throws (status `error`, as in XState); a timer or invoke result no
 *   longer pending (cancelled, or of an earlier entry of the state) is `gone`;
 * - a delayed `sendTo` that falls due is relayed: a message to its receiver, the
 *   sender's state unchanged.
 */
import type { AnyActorLogic, AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import { UnpersistableValueError } from '../core/errors.ts';
import { walkJson } from '../core/json.ts';
import { stateLabel } from '../core/state.ts';
import { actorKind } from './actor-kinds.ts';
import { receiverId } from './actor-ids.ts';
import { planEffects, type Effects } from './effects.ts';
import {
  EMPTY_LEDGER,
  SYNCED_LEDGER,
  TO_ACTOR,
  TO_PARENT,
  pendingInvoke,
  pendingTimer,
  withoutFired,
  withoutSettled,
  type Ledger,
  type PendingTimer,
  type Rank,
} from './ledger.ts';
import type { EventSource } from './notices.ts';
import {
  errorValue,
  orphanedBy,
  pureInitial,
  pureRestore,
  pureTransition,
  type SystemLookup,
  type TreeSystemIds,
} from './pure.ts';

/** Context and output may hold XState actor refs (XState persists them as references). */
const JSON_CHECK = { actorRefs: true } as const;

/** Where the event comes from, and what pending effect it consumes. */
export type Delivery =
  | { source: 'send' | 'recover' }
  | { source: 'timer'; key: string }
  | { source: 'invoke'; key: string }
  | { source: 'message' }
  /**
   * Creation, or a finished child spawned again (`xstate.init` with its input);
   * `sync`: its parent asked for its snapshots (Ledger.sync).
   */
  | { source: 'create' | 'spawn'; sync?: boolean | undefined; systemId?: string | undefined };

export interface StepFacts {
  machine: AnyStateMachine;
  actorId: string;
  parentId: string | undefined;
  /** The version this step would commit. */
  seq: number;
  now: number;
  /** Undefined on creation. */
  snapshot: AnyMachineSnapshot | undefined;
  ledger: Ledger;
  event: EventObject;
  delivery: Delivery;
  /**
   * What `system.get` finds elsewhere in the actor's tree (pure.ts,
   * TreeSystemIds): looked up by the send path, read back from the row by replay.
   */
  system?: TreeSystemIds | undefined;
  /**
   * Which life (Ledger.life) the actors of the tree the step sends to by system
   * id are in, by durable actor id (absent: their first): looked up by the send
   * path, read back from the row by replay. A delayed send made in one life of its
   * receiver and falling due in another reaches no one (PendingTimer.life).
   */
  lives?: ReadonlyMap<string, number> | undefined;
  /**
   * The step's place in the arm order (a Rank, ./ledger.ts): given by the send
   * path; absent in a replay, which cannot know it.
   */
  base?: Rank | undefined;
}

/** How a committed step came about. */
export type StepOutcome = 'transition' | 'dropped' | 'failed' | 'relayed';

export type Step =
  | { kind: 'gone'; reason: string }
  | { kind: 'refused' }
  | {
      kind: 'commit';
      outcome: StepOutcome;
      /** The event as the log records it (a timer's event comes from the ledger). */
      event: EventObject;
      next: AnyMachineSnapshot;
      effects: Effects;
      /** A relayed delayed send: its receiver. */
      relayedTo?: string | undefined;
      /** The system ids the step found elsewhere in its tree, and the actors holding them. */
      systemIds?: Record<string, string> | undefined;
      /** The lives of the actors it sends to by system id (StepFacts.lives), when it looked them up. */
      lives?: Record<string, number> | undefined;
    };

/**
 * The step asked for system ids its facts do not answer ({@link advanceOrLookUp}):
 * `otherwise` is the step with none of them found.
 */
export interface LookUp {
  kind: 'lookup';
  ids: string[];
  /** Durable actors whose life (StepFacts.lives) the step asks for. */
  lives?: string[] | undefined;
  otherwise: Step;
}

/** What a step asked for beyond its facts: system ids, and lives of actors (StepFacts.lives). */
interface Asked extends SystemLookup {
  lives?: Set<string> | undefined;
}

/** Whether an event comes from a caller (refused when not taken) rather than an effect. */
export function fromCaller(source: EventSource | 'create'): boolean {
  return source === 'send' || source === 'recover';
}

/**
 * Decides one step (see the module comment); a system id `f.system` does not
 * answer is not found.
 */
export function advance(f: StepFacts): Step {
  const lookup: Asked = { system: f.system, asked: undefined };
  return withSystemIds(f, lookup, decide(f, lookup));
}

/**
 * As {@link advance}, but a step that asks for a system id `f.system` does not
 * answer is a {@link LookUp}: the send path looks its tree up and decides again.
 */
export function advanceOrLookUp(f: StepFacts): Step | LookUp {
  const lookup: Asked = { system: f.system, asked: undefined };
  const step = decide(f, lookup);
  if (lookup.asked === undefined && lookup.lives === undefined) return step;
  const ids = [...(lookup.asked ?? [])].filter((id) => !(f.system?.has(id) ?? false));
  const lives = [...(lookup.lives ?? [])].filter((id) => !(f.lives?.has(id) ?? false));
  if (ids.length > 0 || lives.length > 0) {
    return {
      kind: 'lookup',
      ids,
      ...(lives.length > 0 ? { lives } : {}),
      otherwise: withSystemIds(f, lookup, step),
    };
  }
  return withSystemIds(f, lookup, step);
}

/**
 * `step`, noting the system ids it found elsewhere in the tree (Step.systemIds)
 * and the lives it read (Step.lives).
 */
function withSystemIds(f: StepFacts, lookup: Asked, step: Step): Step {
  // Most steps ask for nothing: nothing to note, nothing made.
  if (step.kind !== 'commit' || (lookup.asked === undefined && lookup.lives === undefined)) {
    return step;
  }
  if (lookup.asked !== undefined) {
    let found: Record<string, string> | undefined;
    for (const id of lookup.asked) {
      const actorId = f.system?.get(id);
      if (typeof actorId === 'string') (found ??= {})[id] = actorId;
    }
    if (found !== undefined) step.systemIds = found;
  }
  // The lives of the actors it found, as the delayed sends it made hold them, and
  // those of the receivers of a delayed send it relays.
  let lives: Record<string, number> | undefined;
  for (const actorId of [...Object.values(step.systemIds ?? {}), ...(lookup.lives ?? [])]) {
    const life = f.lives?.get(actorId);
    if (life !== undefined && (life > 1 || lookup.lives?.has(actorId) === true)) {
      (lives ??= {})[actorId] = life;
    }
  }
  if (lives !== undefined) step.lives = lives;
  return step;
}

function decide(f: StepFacts, lookup: Asked): Step {
  const { delivery } = f;
  if (delivery.source === 'spawn' && isActive(f.snapshot)) {
    return { kind: 'gone', reason: 'the child is still running' };
  }
  if (delivery.source === 'create' || delivery.source === 'spawn') {
    const [next, actions] = pureInitial(f.machine, (f.event as { input?: unknown }).input, lookup);
    checkValues(f, next, undefined, true);
    let ledger = delivery.sync === true ? SYNCED_LEDGER : EMPTY_LEDGER;
    if (delivery.systemId !== undefined) ledger = { ...ledger, systemId: delivery.systemId };
    if (f.snapshot !== undefined) {
      // Spawned again under its id: its next life (Ledger.life). The delayed sends
      // its stopped life still held fall due all the same, as XState's scheduler
      // keeps them (carriedRelays).
      ledger = { ...ledger, life: (f.ledger.life ?? 1) + 1 };
      const relays = carriedRelays(f.ledger);
      if (relays.length > 0) ledger = { ...ledger, timers: relays };
    }
    return commit(f, 'transition', f.event, next, actions, ledger, orphansOf(f.snapshot));
  }
  const caller = fromCaller(delivery.source);
  const snapshot = f.snapshot;
  if (snapshot && snapshot.status !== 'active' && delivery.source === 'timer') {
    // A delayed send that outlived its sender's stop (see effects.ts) is relayed.
    const timer = pendingTimer(f.ledger, delivery.key);
    if (timer?.to !== undefined) {
      return relay(f, lookup, snapshot, withoutFired(f.ledger, timer), timer);
    }
  }
  if (!snapshot || snapshot.status !== 'active') {
    return caller ? { kind: 'refused' } : { kind: 'gone', reason: 'the actor has finished' };
  }
  let ledger = f.ledger;
  let event = f.event;
  if (delivery.source === 'timer') {
    const timer = pendingTimer(ledger, delivery.key);
    if (!timer) return { kind: 'gone', reason: 'the timer is not pending' };
    ledger = withoutFired(ledger, timer);
    event = timer.event;
    if (timer.to !== undefined) return relay(f, lookup, snapshot, ledger, timer);
  } else if (delivery.source === 'invoke') {
    const invoke = pendingInvoke(ledger, delivery.key);
    if (!invoke) return { kind: 'gone', reason: 'the invoke is not awaited in this entry' };
    ledger = withoutSettled(ledger, invoke);
  }

  // A child machine that finished tells its parent so: its system id is forgotten
  // from then on, as XState forgets it when the child stops.
  const finishing = delivery.source === 'message' ? finishedChild(snapshot, event) : undefined;
  if (finishing !== undefined) {
    const settled = ledger.settled ?? [];
    if (!settled.includes(finishing)) ledger = { ...ledger, settled: [...settled, finishing] };
  }
  let next: AnyMachineSnapshot;
  let actions: unknown[];
  const live = delivery.source === 'message' ? liveEvent(snapshot, event) : event;
  try {
    [next, actions] = pureTransition(f.machine, snapshot, live, ledger.settled, lookup);
    checkValues(f, next, snapshot, caller);
  } catch (error) {
    if (caller) throw error;
    return fail(f, snapshot, ledger, event, error);
  }
  if (next === snapshot && actions.length === 0 && !snapshot.can(live)) {
    if (caller) return { kind: 'refused' };
    return commit(f, 'dropped', event, snapshot, [], ledger);
  }
  try {
    return commit(f, 'transition', event, next, actions, ledger);
  } catch (error) {
    // A spawn the runtime cannot persist, seen only now (inside `assign`).
    if (caller) throw error;
    return fail(f, snapshot, ledger, event, error);
  }
}

const DONE_PREFIX = 'xstate.done.actor.';
const ERROR_PREFIX = 'xstate.error.actor.';

/** The id of the child machine whose completion `event` reports, when it is one of `snapshot`'s. */
function finishedChild(snapshot: AnyMachineSnapshot, event: EventObject): string | undefined {
  const { type } = event;
  const id = type.startsWith(DONE_PREFIX)
    ? type.slice(DONE_PREFIX.length)
    : type.startsWith(ERROR_PREFIX)
      ? type.slice(ERROR_PREFIX.length)
      : undefined;
  if (id === undefined) return undefined;
  const child = (snapshot.children as Record<string, { logic?: unknown } | undefined>)[id];
  return child !== undefined && actorKind(child.logic as AnyActorLogic) === 'machine'
    ? id
    : undefined;
}

const SNAPSHOT_PREFIX = 'xstate.snapshot.';

/**
 * A synced child's snapshot event as XState hands it to the parent: its `snapshot`
 * a live snapshot of the child's machine (`.matches`, `.hasTag`, `.can`), revived
 * from the persisted form its message carries. The log keeps the persisted form.
 * Any other event, or one whose child is not among the parent's children, as it is.
 */
function liveEvent(snapshot: AnyMachineSnapshot, event: EventObject): EventObject {
  if (!event.type.startsWith(SNAPSHOT_PREFIX)) return event;
  const persisted = (event as { snapshot?: unknown }).snapshot;
  const child = (snapshot.children as Record<string, { logic?: unknown } | undefined>)[
    event.type.slice(SNAPSHOT_PREFIX.length)
  ];
  if (
    child === undefined ||
    persisted === null ||
    typeof persisted !== 'object' ||
    actorKind(child.logic as AnyActorLogic) !== 'machine'
  ) {
    return event;
  }
  try {
    const revived = pureRestore(child.logic as AnyStateMachine, persisted);
    return { ...event, snapshot: revived } as EventObject;
  } catch {
    return event; // not a snapshot of that machine: the parent's transition sees it as sent
  }
}

/**
 * The delayed `sendTo`s an actor that stopped or finished still holds (they
 * escaped its stop: TimerPlan.escapesStop), carried into its next life when it is
 * spawned again under its id. XState's scheduler keeps them under the stopped
 * actor's session, so they still fall due, and the new actor's sends and cancels,
 * under a session of its own, never touch them.
 */
function carriedRelays(ledger: Ledger): PendingTimer[] {
  const life = ledger.life ?? 1;
  const relays: PendingTimer[] = [];
  for (const timer of ledger.timers) {
    // Those it still holds are sends that escaped its stop; one to a child of its
    // own went with that child (the new life's children are others).
    if (timer.to === TO_PARENT || timer.to?.startsWith(TO_ACTOR) === true) {
      relays.push(timer.sentIn === undefined ? { ...timer, sentIn: life } : timer);
    }
  }
  return relays;
}

function isActive(snapshot: AnyMachineSnapshot | undefined): boolean {
  return snapshot !== undefined && snapshot.status === 'active';
}

/**
 * The child machines a failed actor left running (XState's orphans), stopped as
 * it starts over under its id (TransitionFacts.orphans).
 */
function orphansOf(previous: AnyMachineSnapshot | undefined): string[] | undefined {
  if (previous?.status !== 'error') return undefined;
  const children = previous.children as Record<string, { logic?: unknown } | undefined>;
  const ids = Object.keys(children).filter(
    (id) => actorKind(children[id]?.logic as AnyActorLogic) === 'machine',
  );
  return ids.length > 0 ? ids : undefined;
}

function commit(
  f: StepFacts,
  outcome: StepOutcome,
  event: EventObject,
  next: AnyMachineSnapshot,
  actions: readonly unknown[],
  ledger: Ledger,
  orphans?: readonly string[],
): Step {
  const effects = planEffects({
    machine: f.machine,
    actorId: f.actorId,
    parentId: f.parentId,
    seq: f.seq,
    now: f.now,
    previous:
      f.delivery.source === 'create' || f.delivery.source === 'spawn' ? undefined : f.snapshot,
    next,
    actions,
    ledger,
    relayed: outcome === 'relayed',
    orphans,
    lives: f.lives,
    base: f.base,
  });
  return { kind: 'commit', outcome, event, next, effects };
}

/** The actor fails as XState's does: same state, status `error`, the error as JSON. */
function fail(
  f: StepFacts,
  snapshot: AnyMachineSnapshot,
  ledger: Ledger,
  event: EventObject,
  error: unknown,
): Step {
  const next = { ...snapshot, status: 'error', error: errorValue(error) } as AnyMachineSnapshot;
  const orphaned = orphanedBy(error);
  return commit(f, 'failed', event, next, [], orphaned ? { ...ledger, orphaned } : ledger);
}

/** A delayed `sendTo` falls due: its event goes to the receiver; the sender does not move. */
function relay(
  f: StepFacts,
  lookup: Asked,
  snapshot: AnyMachineSnapshot,
  ledger: Ledger,
  timer: PendingTimer,
): Step {
  const { event, to } = timer;
  const step = commit(f, 'relayed', event, snapshot, [], ledger);
  if (step.kind !== 'commit' || to === undefined) return step;
  let receiver = receiverId(f.actorId, f.parentId, to);
  if (receiver !== undefined && to.startsWith(TO_ACTOR)) {
    // Found by system id: XState's scheduler holds that actor. One stopped and
    // spawned again under its id since is another life, and the send reaches the
    // stopped one, which ignores it. (A row without the life, written before it
    // was looked up, is replayed as it was delivered.)
    (lookup.lives ??= new Set()).add(receiver);
    const life = f.lives?.get(receiver);
    if (life !== undefined && life !== (timer.life ?? 1)) receiver = undefined;
  }
  if (receiver !== undefined) {
    step.effects.messages.push({
      to: receiver,
      kind: 'event',
      body: JSON.stringify(event),
      idx: 0,
    });
  }
  step.relayedTo = receiver;
  return step;
}

/**
 * The context (when the transition made a new one) and the output must be JSON
 * that reads back the same. Throws UnpersistableValueError naming the path.
 */
function checkValues(
  f: StepFacts,
  next: AnyMachineSnapshot,
  previous: AnyMachineSnapshot | undefined,
  always: boolean,
): void {
  if (always || next.context !== previous?.context)
    checkValue(f, previous, 'context', next.context);
  if (next.output !== undefined && next.output !== previous?.output) {
    checkValue(f, previous, 'output', next.output);
  }
}

/** One value of {@link checkValues} (a function, not a closure: it runs on every transition). */
function checkValue(
  f: StepFacts,
  previous: AnyMachineSnapshot | undefined,
  where: 'context' | 'output',
  value: unknown,
): void {
  const walked = walkJson(value, JSON_CHECK);
  if (walked.ok) return;
  throw new UnpersistableValueError({
    machineId: f.machine.id,
    actorId: f.actorId,
    state: previous ? stateLabel(previous.value) : '(new)',
    eventType: f.event.type,
    where,
    path: walked.problem.path.join('.'),
    detail: walked.problem.detail ?? 'not plain JSON data',
  });
}
