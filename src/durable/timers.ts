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

/** Fires one timer of one actor; resolves true when this call fired it. */
export type FireTimer = (actorId: string, timerId: string) => Promise<boolean>;

export class TimerScheduler {
  /** In-process wake-ups by actor, then timer id. */
  private readonly handles = new Map<string, Map<string, unknown>>();
  /** Firings under way (a wake-up ran; its commit has not settled yet). */
  private readonly firing = new Set<Promise<boolean>>();
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

  /** Arms (or re-arms) the wake-up of a committed timer row. */
  schedule(timer: Pick<TimerRow, 'actorId' | 'timerId' | 'dueAt'>): void {
    if (this.closed) return;
    let byTimer = this.handles.get(timer.actorId);
    if (!byTimer) this.handles.set(timer.actorId, (byTimer = new Map()));
    const previous = byTimer.get(timer.timerId);
    if (previous !== undefined) this.clock.clearTimeout(previous);
    const handle = this.clock.setTimeout(() => {
      this.forget(timer.actorId, timer.timerId);
      const run = this.fire(timer.actorId, timer.timerId);
      this.firing.add(run);
      void run.finally(() => this.firing.delete(run));
    }, timer.dueAt - this.clock.now());
    byTimer.set(timer.timerId, handle);
  }

  /** Disarms a wake-up (its row was deleted in a commit). */
  unschedule(actorId: string, timerId: string): void {
    const handle = this.handles.get(actorId)?.get(timerId);
    if (handle !== undefined) this.clock.clearTimeout(handle);
    this.forget(actorId, timerId);
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
    for (const handle of this.handles.get(actorId)?.values() ?? []) this.clock.clearTimeout(handle);
    this.handles.delete(actorId);
  }

  private forget(actorId: string, timerId: string): void {
    const byTimer = this.handles.get(actorId);
    if (!byTimer) return;
    byTimer.delete(timerId);
    if (byTimer.size === 0) this.handles.delete(actorId);
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
      for (const handle of byTimer.values()) this.clock.clearTimeout(handle);
    }
    this.handles.clear();
  }
}
