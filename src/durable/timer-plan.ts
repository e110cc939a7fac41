/**
 * The timers side of planning a transition (./effects.ts): the actor's pending
 * delayed events as XState's scheduler keeps them, changed action by action
 * (scheduled, cancelled, their receiver stopped, the sender finished), and what
 * the in-process wake-ups must do about it afterwards: arm, move, rename or
 * clear, each timer keeping its place among those due at the same instant.
 */
import type { EventObject } from 'xstate';
import type { TimerRow } from '../store/types.ts';
import {
  TO_ACTOR,
  TO_PARENT,
  TO_STOPPED,
  type Ledger,
  type PendingTimer,
  type Rank,
} from './ledger.ts';

/** What the plan of the timers needs to know of its transition. */
export interface TimerFacts {
  actorId: string;
  parentId: string | undefined;
  /** The version the transition commits: keys of timers without an id are made from it. */
  seq: number;
  /** When it commits (ms): delays become due times from here, and it is their arm time. */
  now: number;
  /** The timers pending before the transition (the ledger's, armed in this process). */
  armed: readonly PendingTimer[];
  /** The lives of the actors of the tree found by system id (PendingTimer.life). */
  lives?: ReadonlyMap<string, number> | undefined;
  /**
   * The step's place in the arm order (a {@link Rank}): its timers' ranks extend
   * it. Absent in a replay (`verify`), which cannot know it.
   */
  base?: Rank | undefined;
}

/** A timer a transition armed or moved, for its in-process wake-up (TimerWake). */
export type ArmedTimer = TimerRow & { rank?: Rank | undefined };

/** A transition's timers, action by action; made per transition. */
export class TimerPlan {
  /** The pending timers, in the order XState armed them. */
  readonly timers: PendingTimer[];
  /** Timers that lost their id to a later one (Effects.timersRenamed). */
  readonly renamed: Array<[string, string]> = [];
  /** Timers armed after messages, by key: how many messages preceded each (Effects.timerPlaces). */
  places: Map<string, number> | undefined;
  /** How many timers the step armed after each count of its messages ({@link Rank}). */
  private readonly armedAfter: number[] = [];

  /** Whether the step armed a timer, ranked from its base (then its row records the base). */
  get ranked(): boolean {
    return this.armedAfter.length > 0;
  }
  /**
   * Timers armed before the transition that it changed without moving their
   * wake-up (a receiver stopped, an id taken over): each copy to the timer it was.
   */
  private carried: Map<PendingTimer, PendingTimer> | undefined;

  constructor(private readonly f: TimerFacts) {
    this.timers = [...f.armed];
  }

  /**
   * A delayed event, as XState's scheduler keeps it: a new one with an id another
   * pending one holds takes the id over (the earlier one still fires, under a key of
   * its own, but `cancel` no longer finds it); one without an id is never cancelled.
   * `sent`: how many messages the step sent before it.
   */
  schedule(
    sendId: string | undefined,
    event: EventObject,
    delay: number,
    to: string | undefined,
    idx: number,
    sent: number,
  ): void {
    const { seq, now } = this.f;
    let key = `xstate.delay.${seq}.${idx}`;
    if (sendId !== undefined) {
      for (const [i, timer] of this.timers.entries()) {
        if (timer.sendId === sendId || timer.key === sendId) {
          const kept: PendingTimer = { ...timer, sendId: undefined };
          if (timer.key === sendId) {
            kept.key = `${timer.key}@${seq}.${idx}`;
            // Armed before this transition: its wake-up moves to the new key. One this
            // transition made is not armed yet; it is armed under its new key.
            const armed = this.carried?.get(timer) ?? timer;
            if (this.f.armed.includes(armed)) this.renamed.push([timer.key, kept.key]);
            const place = this.places?.get(timer.key);
            if (place !== undefined) this.places?.set(kept.key, place);
          }
          this.carry(i, kept);
        }
      }
      key = sendId;
    }
    const timer: PendingTimer = { key, event, due: now + delay, at: now };
    if (sendId !== undefined) {
      timer.id = sendId;
      timer.sendId = sendId;
    }
    if (to !== undefined) timer.to = to;
    const base = this.f.base;
    if (base !== undefined) {
      const i = this.armedAfter[sent] ?? 0;
      this.armedAfter[sent] = i + 1;
      timer.rank = [...base, 2 * sent, i];
    }
    // Found by system id: the life of the actor it holds (PendingTimer.life).
    const life =
      to?.startsWith(TO_ACTOR) === true ? this.f.lives?.get(to.slice(TO_ACTOR.length)) : undefined;
    if (life !== undefined && life > 1) timer.life = life;
    this.timers.push(timer);
    if (sent > 0) (this.places ??= new Map()).set(key, sent);
    else this.places?.delete(key);
  }

  /** `cancel(sendId)`: the timer holding the id goes. */
  cancel(sendId: unknown): void {
    const i = this.timers.findIndex((timer) => timer.sendId === sendId);
    if (i >= 0) this.timers.splice(i, 1);
  }

  /**
   * Child `id` stopped. A delayed `sendTo` holds the child it was sent to: XState
   * delivers it to that stopped actor, which ignores it, never to a child spawned
   * again under its id. One with an id still fires, releasing the id (a later send
   * may hold it).
   */
  receiverStopped(id: string): void {
    for (let i = this.timers.length - 1; i >= 0; i--) {
      const timer = this.timers[i] as PendingTimer;
      if (timer.to !== id) continue;
      if (timer.id === undefined) this.timers.splice(i, 1);
      else this.carry(i, { ...timer, to: TO_STOPPED });
    }
  }

  /**
   * The sender finished (`status`): XState cancels every delayed event of an actor
   * that stops, by id, and those that escape it are kept ({@link escapesStop}).
   */
  finished(status: string): void {
    const kept = this.timers.filter((timer) => this.escapesStop(timer, status));
    this.timers.length = 0;
    this.timers.push(...kept);
  }

  /** What the transition armed or moved, and what it removed (for the in-process wake-ups). */
  rows(ledger: Ledger): { timersSet: ArmedTimer[]; timersCancel: string[] } {
    const { actorId, armed } = this.f;
    const timersSet: ArmedTimer[] = [];
    if (armed.length === 0 && ledger.timers.length === 0) return { timersSet, timersCancel: [] };
    const before = new Map(armed.map((timer) => [timer.key, timer]));
    for (const timer of ledger.timers) {
      const was = before.get(timer.key);
      before.delete(timer.key);
      // The same entry, or a copy of it (carry): untouched. A new one under a key the
      // transition cancelled and set again (a state left and entered) is armed anew,
      // as XState schedules it.
      if (was !== undefined && (was === timer || this.carried?.get(timer) === was)) continue;
      timersSet.push({
        actorId,
        timerId: timer.key,
        event: JSON.stringify(timer.event),
        dueAt: timer.due,
        rank: timer.rank,
      });
    }
    return { timersSet, timersCancel: [...before.keys()] };
  }

  /**
   * Replaces the timer at `i` with `copy`, the same timer to XState's scheduler:
   * its wake-up stays armed where it was among timers due at the same instant
   * (re-armed, it would go after those armed since, where XState's does not).
   */
  private carry(i: number, copy: PendingTimer): void {
    const timer = this.timers[i] as PendingTimer;
    (this.carried ??= new Map()).set(copy, this.carried.get(timer) ?? timer);
    this.timers[i] = copy;
  }

  /**
   * Whether a delayed send outlives its sender's stop, as in XState: its scheduler
   * cancels a stopping actor's events by id, so one whose id a later send took over
   * (kept under a key of its own, {@link schedule}) is missed and fires. It reaches
   * a parent, which runs on; a child only when the sender failed (a sender that is
   * done or stopped stops its children; a failed one leaves them running). A raise
   * goes to the stopped sender itself: gone.
   */
  private escapesStop(timer: PendingTimer, status: string): boolean {
    if (timer.id === undefined || timer.sendId !== undefined || timer.to === undefined) {
      return false;
    }
    if (timer.to === TO_PARENT) return this.f.parentId !== undefined;
    // An actor of the tree outside the sender's own subtree runs on without it.
    if (timer.to.startsWith(TO_ACTOR) && !timer.to.startsWith(`${TO_ACTOR}${this.f.actorId}/`)) {
      return true;
    }
    return status === 'error' && timer.to !== TO_STOPPED;
  }
}
