/**
 * The one mapping from what XState executed to what a durable actor must do:
 * every action of a transition (spawn, stop, `sendTo`/`sendParent`/`forwardTo`,
 * `raise` with or without delay, `cancel`, `emit`, the invoke starts and stops of
 * entering and leaving states, the stops of a macrostep that ends in a final
 * state) becomes, one to one and in order, a durable effect with XState's id:
 * a timer in the actor's ledger, a step begun, a message row, an emitted event or
 * a user action to run after the commit. Two reorderings, as XState's system
 * orders what they send: an event sent to a child before the action that spawns
 * it (an entry `sendTo` of the state that invokes it) goes right after the spawn,
 * since XState queues it in the child's mailbox, read once the child has started;
 * and an actor's first step spawns the children of its initial state before its
 * other messages, since XState starts them before it runs the step's actions.
 * Nothing is inferred from diffing
 * snapshots — a finished machine stops updating `snapshot.children`, so the
 * actions are the only record of what it stopped — except spawns made inside
 * `assign`, which XState runs without an action and which are read off the
 * children they add, each placed where it was made (the pure transition marks
 * where an actor was created: XState starts the child there).
 *
 * The send path, creation, recovery and `verify` all plan with this module, so a
 * replay of the log reproduces exactly what the live actor did.
 */
import type {
  AnyActorLogic,
  AnyActorRef,
  AnyMachineSnapshot,
  AnyStateMachine,
  EventObject,
} from 'xstate';
import { UnsupportedActorError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import type { OutgoingMessage } from '../store/types.ts';
import { actorKind, checkActor } from './actor-kinds.ts';
import { childActorId, invokeKey, receiverId } from './actor-ids.ts';
import {
  makeLedger,
  TO_ACTOR,
  TO_PARENT,
  TO_STOPPED,
  type Ledger,
  type PendingInvoke,
  type Rank,
} from './ledger.ts';
import { encodeSnapshot } from './codec.ts';
import { legacyOrder, type Early } from './legacy-order.ts';
import { CREATED, isPureSelf, NOWHERE, PARENT_REF, remoteActorOf } from './pure.ts';
import type { SpawnBody } from './spawn-body.ts';
import { TimerPlan, type ArmedTimer } from './timer-plan.ts';

/** A user action, run after its transition committed. */
export interface Effect {
  type: string;
  exec: ((info: unknown, params: unknown) => void) | undefined;
  info: unknown;
  params: unknown;
}

/** An invoked promise a transition starts: its step is begun in the same commit. */
export interface InvokeStart {
  id: string;
  key: string;
  logic: AnyActorLogic;
  input: unknown;
}

/** Everything a committed transition owes besides its snapshot. */
export interface Effects {
  /** What is pending after the transition. */
  ledger: Ledger;
  /** Timers the transition armed or moved (by key) and keys it removed: the wake-ups follow them. */
  timersSet: ArmedTimer[];
  timersCancel: string[];
  /**
   * Timers that lost their id to a later one with the same id (`[old key, new key]`):
   * still pending, armed as they were (their place among timers due at the same
   * instant is their original one, as in XState's scheduler).
   */
  timersRenamed: Array<[string, string]>;
  /**
   * Of the timers armed ({@link timersSet}), those the step armed after sending
   * messages: how many of {@link messages} went before each (by key). XState
   * delivers each message as its action runs, the receivers' own steps with it, so
   * what they arm is armed before such a timer, and goes first among timers due at
   * the same instant.
   */
  timerPlaces?: ReadonlyMap<string, number> | undefined;
  /** The step's place in the arm order (TransitionFacts.base): its messages' deliveries nest under it. */
  base?: Rank | undefined;
  /**
   * Whether the step armed a timer ranked from its base: its row records the base
   * (metadata `base`), from which a replay ranks the same timers.
   */
  ranked?: boolean | undefined;
  /** The actor finished: every wake-up goes. */
  cancelAllTimers: boolean;
  invokesStart: InvokeStart[];
  /** Step keys of running invokes whose state was left: aborted, their result never delivered. */
  invokesStop: string[];
  /** Messages to other actors (and to itself), in the order XState executed them. */
  messages: OutgoingMessage[];
  /**
   * The same messages in the order agentcharts 0.1.0 wrote them, when it differs:
   * it sent an event to a child the entering state invokes (an entry `sendTo` by
   * the child's id) before the child's spawn, so it was lost; and it spawned a
   * child made inside `assign` at the first send to it, or after the step's other
   * messages, not where it was made. `verify` accepts a delivery recorded in
   * either order.
   */
  legacyMessages?: OutgoingMessage[] | undefined;
  emitted: EventObject[];
  effects: Effect[];
}

/** One transition, as the planner needs it. */
export interface TransitionFacts {
  machine: AnyStateMachine;
  actorId: string;
  parentId: string | undefined;
  /** The version this transition commits (its transition row's `seq`). */
  seq: number;
  /** When it commits (ms): delays become absolute due times from here. */
  now: number;
  /** The snapshot before (undefined when the actor is created or starts over). */
  previous: AnyMachineSnapshot | undefined;
  next: AnyMachineSnapshot;
  /** The actions XState executed, in order. */
  actions: readonly unknown[];
  /** What was pending before, less what this transition consumes. */
  ledger: Ledger;
  /**
   * The step only passes on a delayed `sendTo` that fell due: XState's scheduler
   * delivers it to the receiver, the sender takes no event (and a synced child
   * sends its parent no snapshot).
   */
  relayed?: boolean | undefined;
  /**
   * A failed actor spawned again under its id: the child machines it left
   * running (XState's orphans, whose parent is gone). They are stopped first: a
   * durable child id is one actor, so their messages would reach the new actor,
   * and its own children of their ids would be refused while they run.
   */
  orphans?: readonly string[] | undefined;
  /** The lives of the actors of the tree it found by system id (StepFacts.lives). */
  lives?: ReadonlyMap<string, number> | undefined;
  /** Its place in the arm order (TimerFacts.base); absent in a replay. */
  base?: Rank | undefined;
}

const STOP_BODY = '{"type":"xstate.stop"}';

type ChildRef = AnyActorRef & {
  logic: AnyActorLogic;
  src: unknown;
  systemId?: string;
  options?: { input?: unknown };
};

interface Action {
  type?: string;
  params?: unknown;
}

interface SendParams {
  to?: unknown;
  event?: EventObject;
  delay?: unknown;
  id?: string;
}

/** Plans the effects of one transition (see the module comment). */
export function planEffects(t: TransitionFacts): Effects {
  const planner = new Planner(t);
  return planner.plan();
}

class Planner {
  private readonly timers: TimerPlan;
  private readonly invokes: PendingInvoke[];
  /** Ids held in `children` by a settled invoke (see {@link Ledger.settled}); made when needed. */
  private settled: Set<string> | undefined;
  private readonly messages: Array<Omit<OutgoingMessage, 'idx'>> = [];
  private readonly invokesStart: InvokeStart[] = [];
  private readonly invokesStop: string[] = [];
  private readonly emitted: EventObject[] = [];
  private readonly effects: Effect[] = [];
  // The four below are made on first use: most transitions have no children, and
  // a Map or Set per transition for nothing is garbage on every send.
  /** The children before the transition, by ref. */
  private before: Map<ChildRef, string> | undefined;
  /** Refs the transition stopped (a spawn of one of them is no spawn). */
  private stopped: Set<ChildRef> | undefined;
  /** Spawns made inside `assign` (no action), placed where they were made ({@link CREATED}). */
  private late: Map<ChildRef, string> | undefined;
  /** Refs spawned by this transition, by ref. */
  private spawned: Map<ChildRef, string> | undefined;
  /**
   * An actor's first step: the promises its initial snapshot holds in `children`,
   * in that order, and their starts once spawned (see {@link startFirst}).
   */
  private firstPromises: Map<ChildRef, InvokeStart | undefined> | undefined;
  /** Promises whose snapshot this step sent their parent (see promiseSnapshot). */
  private promiseSnapshots: Set<ChildRef> | undefined;
  /** Refs a `spawnChild` action of this transition spawns (an invoke, or the action). */
  private bySpawnAction: Set<ChildRef> | undefined;
  /**
   * Messages placed elsewhere than 0.1.0 placed them: spawns made before their
   * action (an actor's first step; a spawn inside `assign`) and events held until
   * their child's spawn. The message index each got, and how many preceded it in
   * 0.1.0's order.
   */
  private early: Early[] | undefined;
  /**
   * Events sent to a child this step spawns, before its spawn (an entry `sendTo` of
   * the state that invokes it): XState queues them in the child's mailbox, which it
   * reads once started, so they go right after the spawn; and how many messages
   * preceded each when it was sent.
   */
  private held:
    Map<ChildRef, Array<{ message: Omit<OutgoingMessage, 'idx'>; before: number }>> | undefined;

  constructor(private readonly t: TransitionFacts) {
    this.timers = new TimerPlan({
      actorId: t.actorId,
      parentId: t.parentId,
      seq: t.seq,
      now: t.now,
      armed: t.ledger.timers,
      lives: t.lives,
      base: t.base,
    });
    this.invokes = [...t.ledger.invokes];
    const settled = t.ledger.settled;
    if (settled !== undefined && settled.length > 0) this.settled = new Set(settled);
  }

  private stopping(ref: ChildRef): void {
    (this.stopped ??= new Set()).add(ref);
  }

  plan(): Effects {
    const { t } = this;
    for (const id of t.orphans ?? []) {
      this.messages.push({ to: childActorId(t.actorId, id), kind: 'stop', body: STOP_BODY });
    }
    const previous = (t.previous?.children ?? {}) as Record<string, ChildRef | undefined>;
    for (const id in previous) {
      const ref = previous[id];
      if (ref) (this.before ??= new Map()).set(ref, id);
    }
    const actions = t.actions;
    for (let i = 0; i < actions.length; i++) {
      const action = actions[i] as Action;
      if (action.type === 'xstate.stopChild' && action.params) {
        this.stopping(action.params as ChildRef);
      } else if (action.type === 'xstate.spawnChild') {
        const ref = (action.params as { actorRef?: ChildRef } | undefined)?.actorRef;
        if (ref) (this.bySpawnAction ??= new Set()).add(ref);
      }
    }
    const next = t.next.children as Record<string, ChildRef | undefined>;
    for (const id in next) {
      const ref = next[id];
      if (
        ref &&
        !this.before?.has(ref) &&
        !this.bySpawnAction?.has(ref) &&
        !this.stopped?.has(ref)
      ) {
        (this.late ??= new Map()).set(ref, id);
      }
    }

    if (t.previous === undefined && t.next.status === 'active') this.startFirst(next);
    for (let i = 0; i < actions.length; i++) this.action(actions[i] as Action, i);
    if (this.late) for (const [ref, id] of this.late) this.spawn(ref, id);
    if (this.early) {
      for (const e of this.early) if (e.late && e.before < 0) e.before = this.messages.length;
    }

    const finished = t.next.status !== 'active';
    if (finished) {
      // XState cancels every delayed event of an actor that stops, by id: one whose id
      // a later one took over escapes, and still reaches a receiver that runs on (see
      // TimerPlan.finished). No result can be taken any more.
      this.timers.finished(t.next.status);
      this.invokes.length = 0;
      this.completion();
    }
    if (finished) this.settled?.clear();
    const timers = this.timers;
    const ledger = makeLedger(
      timers.timers,
      this.invokes,
      this.settled === undefined ? undefined : [...this.settled],
      t.ledger.sync,
      t.ledger.orphaned,
      t.ledger.systemId,
      t.ledger.life,
    );
    if (t.ledger.sync === true && !finished && t.relayed !== true) this.snapshotToParent();
    const cancelAll = finished && timers.timers.length === 0;
    const { timersSet, timersCancel } = cancelAll
      ? { timersSet: [], timersCancel: [] }
      : timers.rows(ledger);
    return {
      ledger,
      timersSet,
      timersCancel,
      timersRenamed: cancelAll ? [] : timers.renamed,
      timerPlaces: cancelAll ? undefined : timers.places,
      cancelAllTimers: cancelAll,
      invokesStart: this.startOrder(),
      invokesStop: this.invokesStop,
      messages: this.messages.length === 0 ? [] : this.messages.map((m, idx) => ({ ...m, idx })),
      legacyMessages:
        this.early !== undefined
          ? legacyOrder(this.messages, this.early)
          : t.orphans !== undefined && t.orphans.length > 0
            ? // Earlier builds did not stop them: their logs verify as written.
              this.messages.slice(t.orphans.length).map((m, idx) => ({ ...m, idx }))
            : undefined,
      emitted: this.emitted,
      effects: this.effects,
      base: t.base,
      ranked: timers.ranked,
    };
  }

  /**
   * An actor's first step: XState starts the children its initial state made
   * (`logic.start`, in the order of `children`) before it runs any of the step's
   * other actions, so what they send on starting comes before the sends of the
   * initial entry. Their spawns go first; each is recorded as early, so 0.1.0's
   * order (each spawn at its action) is still known.
   */
  private startFirst(children: Record<string, ChildRef | undefined>): void {
    for (const id in children) {
      const ref = children[id];
      if (ref === undefined || this.stopped?.has(ref)) continue;
      if (actorKind(ref.logic) !== 'machine') {
        // A promise starts here too, before its own action, which still gives its
        // place among the ledger's invokes and its key; so does its snapshot.
        (this.firstPromises ??= new Map()).set(ref, undefined);
        if ((ref as { _syncSnapshot?: unknown })._syncSnapshot === true) {
          this.promiseSnapshot(ref, id);
        }
        continue;
      }
      const late = this.late?.has(ref) === true;
      const at = this.messages.length;
      this.spawn(ref, id);
      (this.early ??= []).push({ at, count: this.messages.length - at, before: -1, ref, late });
    }
  }

  private action(action: Action, idx: number): void {
    switch (action.type) {
      case 'xstate.spawnChild': {
        const ref = (action.params as { actorRef?: ChildRef } | undefined)?.actorRef;
        // Stopped in the same macrostep (an `always` left the invoking state): XState
        // never starts it, and neither does the durable runtime.
        if (!ref || this.stopped?.has(ref)) return;
        const early = this.early?.find((e) => e.ref === ref && !e.late && e.held === undefined);
        if (early !== undefined) {
          early.before = this.messages.length;
          return;
        }
        const held = this.held?.get(ref);
        this.spawn(
          ref,
          ref.id,
          held?.map((h) => h.before),
        );
        for (const { message, before } of held ?? []) {
          (this.early ??= []).push({
            at: this.messages.length,
            count: 1,
            before,
            ref,
            late: false,
            held: true,
          });
          this.messages.push(message);
        }
        return;
      }
      case 'xstate.stopChild': {
        const ref = action.params as ChildRef | undefined;
        const id = ref === undefined ? undefined : this.before?.get(ref);
        if (ref !== undefined && id !== undefined) this.stop(ref, id);
        return;
      }
      case 'xstate.sendTo':
        this.send(action.params as SendParams, idx);
        return;
      case 'xstate.raise': {
        const params = action.params as SendParams;
        if (typeof params.delay === 'number' && params.event) {
          this.timers.schedule(
            params.id,
            params.event,
            params.delay,
            undefined,
            idx,
            this.messages.length,
          );
        }
        return;
      }
      case 'xstate.cancel': {
        const sendId = (action.params as { sendId?: unknown }).sendId;
        this.timers.cancel(sendId);
        return;
      }
      case CREATED: {
        // A child spawned inside `assign` starts where it was made (XState defers its
        // start there), so what it sends on starting comes before later sends.
        const ref = action.params as ChildRef;
        const id = this.late?.get(ref);
        if (id === undefined) return;
        const at = this.messages.length;
        this.spawn(ref, id);
        const count = this.messages.length - at;
        (this.early ??= []).push({ at, count, before: -1, ref, late: true });
        return;
      }
      case 'xstate.emit': {
        const event = (action.params as { event?: EventObject } | undefined)?.event;
        if (event) this.emitted.push(event);
        return;
      }
      default:
        // Other built-ins (assign, log) are applied inside the pure transition; user
        // actions run after the commit.
        if (typeof action.type === 'string' && !action.type.startsWith('xstate.')) {
          this.effects.push(action as Effect);
        }
    }
  }

  /** Spawns `ref` as child `id`; `queued`: where the held events that follow were sent ({@link SpawnBody.queued}). */
  private spawn(ref: ChildRef, id: string, queued?: number[]): void {
    const { t } = this;
    this.late?.delete(ref);
    (this.spawned ??= new Map()).set(ref, id);
    const kind = checkActor(t.machine, stateLabel(t.next.value), id, ref.logic);
    const sync = (ref as { _syncSnapshot?: unknown })._syncSnapshot === true;
    const input = ref.options?.input;
    if (kind === 'promise') {
      if (sync) this.promiseSnapshot(ref, id);
      // Two invokes of one id entered together (a state and its child) both run, as
      // in XState: the second takes the id's place in `children`, the first still
      // delivers its result. Each has a key of its own.
      let key = invokeKey(t.actorId, id, t.seq);
      const twins = this.invokesStart.filter((i) => i.id === id).length;
      if (twins > 0) key = `${key}.${twins}`;
      this.settled?.delete(id); // the new invoke takes the id's place in `children`
      const pending: PendingInvoke = { id, key };
      if (typeof ref.src === 'string') pending.src = ref.src;
      if (input !== undefined) pending.input = input;
      this.invokes.push(pending);
      const start = { id, key, logic: ref.logic, input };
      this.invokesStart.push(start);
      if (this.firstPromises?.has(ref)) this.firstPromises.set(ref, start);
      return;
    }
    this.settled?.delete(id); // a new child under the id of one that finished
    // A machine spawned under the id of a running child it did not stop (a history
    // target that resolves to the source state enters it again without leaving it):
    // XState orphans the first child, still running, outside `children`; a durable
    // child is named by its parent and id, so the first is stopped for the second.
    if (this.before) {
      for (const [old, oldId] of this.before) {
        if (oldId === id && old !== ref && !this.stopped?.has(old)) {
          this.stopping(old);
          this.stop(old, id);
        }
      }
    }
    const body: SpawnBody = {
      parentMachine: t.machine.id,
      src: typeof ref.src === 'string' ? ref.src : id,
      childId: id,
      systemId: ref.systemId,
      input,
    };
    if (sync) body.sync = true;
    if (queued !== undefined && queued.length > 0) body.queued = queued;
    this.messages.push({
      to: childActorId(t.actorId, id),
      kind: 'spawn',
      body: JSON.stringify(body),
    });
  }

  /**
   * A promise whose parent asked for its snapshots (`onSnapshot`, `syncSnapshot`):
   * XState's promise tells the parent its one active snapshot as it starts (its
   * result comes as `xstate.done.actor.<id>`), an event the parent takes after the
   * step, in the place the step started it. The actor sends it to itself there,
   * once per start ({@link startFirst} may have sent it); its outcome, however
   * soon, is delivered after it (Courier.settled).
   */
  private promiseSnapshot(ref: ChildRef, id: string): void {
    if (this.promiseSnapshots?.has(ref)) return;
    (this.promiseSnapshots ??= new Set()).add(ref);
    const input = ref.options?.input;
    this.messages.push({
      to: this.t.actorId,
      kind: 'event',
      body: JSON.stringify({
        type: `xstate.snapshot.${id}`,
        snapshot: input === undefined ? { status: 'active' } : { status: 'active', input },
      }),
    });
  }

  private stop(ref: ChildRef, id: string): void {
    if (actorKind(ref.logic) === 'promise') {
      // The one `children` holds under that id: a settled one (nothing to stop), or
      // else the last of that id to start.
      if (this.settled?.delete(id)) return;
      const i = this.invokes.findLastIndex((invoke) => invoke.id === id);
      if (i >= 0) {
        this.invokesStop.push((this.invokes[i] as PendingInvoke).key);
        this.invokes.splice(i, 1);
      }
      return;
    }
    this.settled?.delete(id);
    this.messages.push({ to: childActorId(this.t.actorId, id), kind: 'stop', body: STOP_BODY });
    this.timers.receiverStopped(id);
  }

  /** `sendTo`/`sendParent`/`forwardTo`: a message now, or a timer when delayed. */
  private send(params: SendParams, idx: number): void {
    const event = params.event ?? { type: 'unknown' };
    const to = this.receiver(params.to);
    if (to === null) {
      // Nothing receives it, as in XState; a delayed one is still scheduled there,
      // holding its id until it fires (to no one) or is cancelled.
      if (typeof params.delay === 'number' && params.id !== undefined) {
        this.timers.schedule(params.id, event, params.delay, TO_STOPPED, idx, this.messages.length);
      }
      return;
    }
    if (typeof params.delay === 'number') {
      this.timers.schedule(
        params.id,
        event,
        params.delay,
        to ?? undefined,
        idx,
        this.messages.length,
      );
      return;
    }
    const message: Omit<OutgoingMessage, 'idx'> = {
      to: this.actorIdOf(to),
      kind: 'event',
      body: JSON.stringify(event),
      ...(remoteActorOf(params.to) === undefined ? {} : { bySystemId: true }),
    };
    const child = this.unspawned(params.to, to);
    if (child === undefined) this.messages.push(message);
    else {
      const held = (this.held ??= new Map()).get(child);
      const entry = { message, before: this.messages.length };
      if (held === undefined) this.held.set(child, [entry]);
      else held.push(entry);
    }
  }

  /**
   * The child a send's `target` is (an id named before its child existed, or the
   * ref XState resolved), when this step spawns it by an action not run yet.
   */
  private unspawned(target: unknown, to: string | undefined): ChildRef | undefined {
    if (to === undefined || to === TO_PARENT || to.startsWith(TO_ACTOR)) return undefined;
    const ref =
      typeof target === 'string'
        ? (this.t.next.children as Record<string, ChildRef | undefined>)[to]
        : (target as ChildRef);
    if (ref === undefined || !this.bySpawnAction?.has(ref)) return undefined;
    return this.spawned?.has(ref) === true || this.stopped?.has(ref) === true ? undefined : ref;
  }

  /**
   * Who a send goes to: `undefined` for the actor itself, `TO_PARENT`, or a child
   * id; null when nothing receives it (a promise actor, or a child that never
   * starts). Refuses anything else.
   */
  private receiver(target: unknown): string | undefined | null {
    const { t } = this;
    if (target === PARENT_REF) {
      if (t.parentId === undefined) {
        throw this.refuse(
          '#_parent',
          'sendParent',
          'this actor has no parent: it was not spawned by a durable actor',
        );
      }
      return TO_PARENT;
    }
    if (isPureSelf(target)) return undefined;
    const elsewhere = remoteActorOf(target);
    if (elsewhere !== undefined) {
      // An actor of the tree found by its system id (pure.ts, remoteRef).
      if (elsewhere === NOWHERE) return null;
      if (elsewhere === t.actorId) return undefined;
      if (elsewhere === t.parentId) return TO_PARENT;
      return `${TO_ACTOR}${elsewhere}`;
    }
    const children = t.next.children as Record<string, ChildRef | undefined>;
    let ref: ChildRef | undefined;
    let id: string | undefined;
    if (typeof target === 'string') {
      // A child spawned in this same step (XState resolves it after the entry actions).
      id = target;
      ref = children[target];
    } else if (target !== null && typeof target === 'object') {
      ref = target as ChildRef;
      id = this.spawned?.get(ref) ?? this.late?.get(ref) ?? this.before?.get(ref);
      if (id === undefined) {
        for (const key in children) if (children[key] === ref) id = key;
      }
    }
    // A child spawned and stopped in this same step (an `always` left the state that
    // invokes it): XState stops it before it ever starts, and what was sent to it is
    // lost with it.
    if (ref !== undefined && this.stopped?.has(ref) && !this.before?.has(ref)) return null;
    if (ref === undefined || id === undefined) {
      const name = (target as { id?: unknown } | undefined)?.id;
      throw this.refuse(
        typeof name === 'string' ? name : typeof target === 'string' ? target : 'actor',
        'sendTo',
        'a durable actor sends only to itself, its child machines and its parent; other actors get events through the store',
      );
    }
    const kind = actorKind(ref.logic);
    if (kind === 'promise') return null;
    if (kind !== 'machine') {
      throw this.refuse(id, 'sendTo', 'a durable actor sends only to child machines');
    }
    // A child spawned inside `assign` in this transition: its spawn goes first.
    const made = this.early?.find((e) => e.ref === ref && e.late && e.before < 0);
    if (made !== undefined) made.before = this.messages.length; // 0.1.0 spawned it here
    if (this.late?.has(ref)) this.spawn(ref, id);
    return id;
  }

  /**
   * The order the invoked promises are called in: their spawns' order, but on an
   * actor's first step those its initial snapshot holds in `children` come first,
   * in that order, as XState's `logic.start` starts them before the step's own
   * actions (a second invoke of one id, which took the first's place there, is
   * called before it: with promises that settle at once, its result comes first).
   */
  private startOrder(): InvokeStart[] {
    const first = this.firstPromises;
    if (first === undefined) return this.invokesStart;
    const front = [...first.values()].filter((s): s is InvokeStart => s !== undefined);
    if (front.length === 0) return this.invokesStart;
    return [...front, ...this.invokesStart.filter((s) => !front.includes(s))];
  }

  private actorIdOf(to: string | undefined): string {
    return receiverId(this.t.actorId, this.t.parentId, to) as string;
  }

  /** A child that finished tells its parent, with its output or its error. */
  private completion(): void {
    const { t } = this;
    if (t.parentId === undefined || t.next.status === 'stopped') return;
    if (t.previous !== undefined && t.previous.status !== 'active') return;
    const childId = t.actorId.slice(t.parentId.length + 1);
    const event =
      t.next.status === 'done'
        ? { type: `xstate.done.actor.${childId}`, output: t.next.output, actorId: childId }
        : { type: `xstate.error.actor.${childId}`, error: t.next.error, actorId: childId };
    this.messages.push({ to: t.parentId, kind: 'event', body: JSON.stringify(event) });
  }

  /**
   * A synced child (see Ledger.sync) sends its parent its snapshot after every event
   * it takes while it stays active, its creation included, after the messages the
   * step sent: XState's child tells its observers, the parent's relay among them,
   * once the step's actions have run (`Actor.update`). The body holds the snapshot
   * in its persisted form; the parent revives it for its transition (advance.ts).
   */
  private snapshotToParent(): void {
    const { t } = this;
    if (t.parentId === undefined) return;
    const type = `xstate.snapshot.${t.actorId.slice(t.parentId.length + 1)}`;
    this.messages.push({
      to: t.parentId,
      kind: 'event',
      body: `{"type":${JSON.stringify(type)},"snapshot":${encodeSnapshot(t.machine, t.next)}}`,
    });
  }

  private refuse(target: string, kind: string, hint: string): UnsupportedActorError {
    const { t } = this;
    return new UnsupportedActorError({
      machineId: t.machine.id,
      state: stateLabel(t.next.value),
      actorId: target,
      kind,
      hint,
    });
  }
}
