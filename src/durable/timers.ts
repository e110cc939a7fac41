/**
 * Durable timers in process. Timer rows are written in the commit of the
 * transition that sets them (absolute due times); this schedules an in-process
 * wake-up per pending timer of the actors this process runs, and fires due timers
 * through the actor's normal send path, which consumes the row in the same commit
 * (exactly once across processes). Timers of other processes, or whose process
 * died, are found by polling the store (`startPolling`) or by `recover`.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Store, TimerRow } from '../store/types.ts';
import { compareRanks, type Rank } from './ledger.ts';

/**
 * Fires one timer of one actor; resolves true when this call fired it. `current`,
 * for a wake-up's firing: false once the timer it fires was armed again or cleared
 * since (TimerScheduler.supersede), when the firing must deliver nothing.
 */
export type FireTimer = (
  actorId: string,
  timerId: string,
  current?: () => boolean,
  /** For a wake-up: the clock's time when it fired, the instant its step is taken at. */
  firedAt?: number,
) => Promise<boolean>;

/** A wake-up's firing under way: superseded when its timer is armed again or cleared. */
interface Firing {
  superseded: boolean;
}

/** A timer to arm: its actor, key and due time, and when it was armed (PendingTimer.at). */
export type TimerWake = Pick<TimerRow, 'actorId' | 'timerId' | 'dueAt'> & {
  armedAt?: number | undefined;
  /**
   * Armed by a step taken at an instant the clock has since passed (an invoke's
   * outcome that settled at once, taken when its state was entered): its time.
   * A timer already due by now fires at once, as XState's, armed at that instant,
   * fired when its clock moved past it.
   */
  takenAt?: number | undefined;
  /** Its place in the arm order (PendingTimer.rank), when recorded. */
  rank?: Rank | undefined;
};

/** The handle of a wake-up that fires at once (an overdue one), not through the clock. */
class AtOnce {
  cancelled = false;
}

/** One armed wake-up: the clock's handle, and the timer it fires (which may change, see {@link TimerScheduler.wakeUp}). */
interface Wake {
  handle: unknown;
  actorId: string;
  timerId: string;
  readonly dueAt: number;
  /**
   * When its timer was armed (ms), its recorded rank in the arm order
   * (PendingTimer.rank), whether it was loaded again (armed by a commit before
   * this process took the actor) and the order its wake-up was armed in here:
   * what places it among wake-ups due at once ({@link armedBefore}).
   */
  armedAt: number;
  rank: Rank | undefined;
  loaded: boolean;
  seq: number;
}

/**
 * Whether `a`'s timer was armed before `b`'s, as XState's scheduler ordered
 * them: the earlier arm time; of one instant, the order the wake-ups were armed
 * in this process, which follows XState's exactly (a timer a step arms after
 * its messages is armed once their receivers have taken them, ./placed-timers.ts);
 * but of two loaded again, which this process armed actor by actor, the lower
 * rank (a timer an earlier build wrote has none).
 */
function armedBefore(a: Wake, b: Wake): boolean {
  if (a.armedAt !== b.armedAt) return a.armedAt < b.armedAt;
  if (a.loaded && b.loaded && a.rank !== undefined && b.rank !== undefined) {
    const order = compareRanks(a.rank, b.rank);
    if (order !== 0) return order < 0;
  }
  return a.seq < b.seq;
}

function firingKey(actorId: string, timerId: string): string {
  return `${actorId}\u0000${timerId}`;
}

export class TimerScheduler {
  /** In-process wake-ups by actor, then timer id. */
  private readonly handles = new Map<string, Map<string, Wake>>();
  /** The same wake-ups by due time: the ones due at one instant. */
  private readonly byDue = new Map<number, Set<Wake>>();
  private seq = 0;
  /** The highest first element of a rank this process gave or loaded ({@link nextBase}). */
  private top = 0;
  /** Firings under way (a wake-up ran; its commit has not settled yet). */
  private readonly firing = new Set<Promise<boolean>>();
  /** The wake-ups' firings under way, by actor and timer id ({@link supersede}). */
  private readonly firings = new Map<string, Firing>();
  private pollHandle: unknown;
  private pollMs = 0;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly fire: FireTimer,
    /** Worker identity: due timers are claimed before firing so workers never collide. */
    private readonly owner: string | undefined,
    private readonly claimMs: number,
  ) {}

  /**
   * Arms (or re-arms) the wake-up of a committed timer. One armed as its step
   * commits is armed now (`armedAt` absent); one loaded again (after a restart)
   * gives the time it was first armed.
   */
  schedule(timer: TimerWake): void {
    // Loaded again (after a restart): what this process arms from now on ranks after it.
    const first = timer.rank?.[0];
    if (first !== undefined && first > this.top) this.top = first;
    if (this.closed) return;
    const previous = this.handles.get(timer.actorId)?.get(timer.timerId);
    // Before the actor's map is looked up: forgetting its last wake-up drops the map.
    if (previous !== undefined) this.disarm(previous);
    let byTimer = this.handles.get(timer.actorId);
    if (!byTimer) this.handles.set(timer.actorId, (byTimer = new Map()));
    const now = this.clock.now();
    const wake: Wake = {
      handle: undefined,
      actorId: timer.actorId,
      timerId: timer.timerId,
      dueAt: timer.dueAt,
      armedAt: timer.armedAt ?? timer.takenAt ?? now,
      rank: timer.rank,
      loaded: timer.armedAt !== undefined,
      seq: ++this.seq,
    };
    if (timer.takenAt !== undefined && timer.dueAt <= now) {
      const atOnce = new AtOnce();
      wake.handle = atOnce;
      queueMicrotask(() => {
        if (!atOnce.cancelled && !this.closed) this.wakeUp(wake);
      });
    } else {
      wake.handle = this.clock.setTimeout(() => this.wakeUp(wake), timer.dueAt - now);
    }
    byTimer.set(timer.timerId, wake);
    const due = this.byDue.get(timer.dueAt);
    if (due === undefined) this.byDue.set(timer.dueAt, new Set([wake]));
    else due.add(wake);
  }

  /**
   * The place in the arm order of a step that no delivery nests (a caller's
   * event, a timer, an outcome; see Rank, ./ledger.ts): after every rank this
   * process gave or loaded.
   */
  nextBase(): Rank {
    return [++this.top];
  }

  /**
   * A wake-up's time came: it fires, of the timers due at that instant whose
   * wake-ups have not run yet, the one armed first, as XState's scheduler does.
   * The clock runs wake-ups due at one instant in the order they were set, which
   * is that order for timers armed in this process; timers loaded again after a
   * restart are set actor by actor, and take their places here by their arm times
   * and ranks (a wake-up that fires another's timer leaves its own timer to that
   * one's wake-up).
   */
  private wakeUp(wake: Wake): void {
    let first = wake;
    for (const other of this.byDue.get(wake.dueAt) ?? []) {
      if (armedBefore(other, first)) first = other;
    }
    if (first !== wake) this.swap(wake, first);
    this.forget(wake);
    const { actorId, timerId } = wake;
    const key = firingKey(actorId, timerId);
    const firing: Firing = { superseded: false };
    this.firings.set(key, firing);
    // Its step is taken at the instant the wake-up fired, as XState's scheduler
    // takes a delayed event when its time comes: a clock moved by hand past two
    // chained timers fires both (the second is armed from the first's due time).
    const run = this.fire(actorId, timerId, () => !firing.superseded, this.clock.now());
    this.firing.add(run);
    void run.finally(() => {
      this.firing.delete(run);
      if (this.firings.get(key) === firing) this.firings.delete(key);
    });
  }

  /**
   * A commit armed timer `timerId` of `actorId` again, or cleared it: a wake-up's
   * firing of it still under way (waiting for its turn in the tree) is of the
   * timer as it was, and delivers nothing. A timer armed again under the same key
   * (an \`after\` of a state entered again) has a wake-up of its own, and would
   * otherwise be delivered by the old one's firing, out of XState's order.
   */
  supersede(actorId: string, timerId: string): void {
    const firing = this.firings.get(firingKey(actorId, timerId));
    if (firing !== undefined) firing.superseded = true;
  }

  /** Exchanges the timers two wake-ups due at one instant fire. */
  private swap(a: Wake, b: Wake): void {
    const timer = {
      actorId: a.actorId,
      timerId: a.timerId,
      armedAt: a.armedAt,
      rank: a.rank,
      loaded: a.loaded,
      seq: a.seq,
    };
    Object.assign(a, {
      actorId: b.actorId,
      timerId: b.timerId,
      armedAt: b.armedAt,
      rank: b.rank,
      loaded: b.loaded,
      seq: b.seq,
    });
    Object.assign(b, timer);
    this.handles.get(a.actorId)?.set(a.timerId, a);
    this.handles.get(b.actorId)?.set(b.timerId, b);
  }

  /** A pending timer's id changed (it lost its id to a later one): its wake-up stays as armed. */
  rename(actorId: string, from: string, to: string): boolean {
    const byTimer = this.handles.get(actorId);
    const armed = byTimer?.get(from);
    if (!byTimer || !armed) return false;
    byTimer.delete(from);
    armed.timerId = to;
    byTimer.set(to, armed);
    return true;
  }

  /** Disarms a wake-up (its row was deleted in a commit). */
  unschedule(actorId: string, timerId: string): void {
    const armed = this.handles.get(actorId)?.get(timerId);
    if (armed !== undefined) this.disarm(armed);
  }

  /** Clears a wake-up and forgets it. */
  private disarm(wake: Wake): void {
    if (wake.handle instanceof AtOnce) wake.handle.cancelled = true;
    else this.clock.clearTimeout(wake.handle);
    this.forget(wake);
  }

  /** Whether a firing is under way. */
  get busy(): boolean {
    return this.firing.size > 0;
  }

  /** Waits until the firings under way have settled. */
  async idle(): Promise<void> {
    while (this.firing.size > 0) await Promise.all([...this.firing]);
  }

  /** Whether this process has a wake-up armed for one of the actor's timers. */
  hasScheduled(actorId: string): boolean {
    return this.handles.has(actorId);
  }

  /** Whether the store is polled for due timers (then no wake-up needs to stay armed here). */
  get polling(): boolean {
    return this.pollMs > 0 && !this.closed;
  }

  /** Disarms every wake-up of an actor (it finished, or left this process). */
  unscheduleAll(actorId: string): void {
    for (const armed of [...(this.handles.get(actorId)?.values() ?? [])]) this.disarm(armed);
  }

  private forget(wake: Wake): void {
    const byTimer = this.handles.get(wake.actorId);
    if (byTimer?.get(wake.timerId) === wake) {
      byTimer.delete(wake.timerId);
      if (byTimer.size === 0) this.handles.delete(wake.actorId);
    }
    const due = this.byDue.get(wake.dueAt);
    if (due?.delete(wake) === true && due.size === 0) this.byDue.delete(wake.dueAt);
  }

  /** Fires every timer due now (from any process), earliest first. Returns how many fired here. */
  async fireDue(limit = 1000): Promise<number> {
    let fired = 0;
    for (;;) {
      const now = this.clock.now();
      const due =
        this.owner === undefined
          ? await this.store.dueTimers(now, limit)
          : await this.store.claimDueTimers({
              owner: this.owner,
              now,
              claimUntil: now + this.claimMs,
              limit,
            });
      if (due.length === 0) return fired;
      let progressed = false;
      for (const t of due) {
        if (await this.fire(t.actorId, t.timerId)) {
          fired++;
          progressed = true;
        }
      }
      if (!progressed || due.length < limit) return fired;
    }
  }

  /**
   * Polls the store for due timers every `intervalMs` (and runs `alsoEach` after each
   * look: the runtime delivers pending messages). Idempotent; `close()` stops it.
   */
  startPolling(
    intervalMs = 1000,
    alsoEach: () => Promise<unknown> = () => Promise.resolve(),
  ): void {
    if (this.pollMs) return;
    this.pollMs = intervalMs;
    const tick = () => {
      this.fireDue()
        .then(alsoEach)
        .catch((error: unknown) => this.logger.error({ err: error }, 'timer poll failed'))
        .finally(() => {
          if (!this.closed) this.pollHandle = this.clock.setTimeout(tick, this.pollMs);
        });
    };
    this.pollHandle = this.clock.setTimeout(tick, 0);
  }

  close(): void {
    this.closed = true;
    if (this.pollHandle !== undefined) this.clock.clearTimeout(this.pollHandle);
    for (const byTimer of this.handles.values()) {
      for (const armed of byTimer.values()) this.clock.clearTimeout(armed.handle);
    }
    this.handles.clear();
    this.byDue.clear();
  }
}
