/** Time source and timer scheduler of the durable runtime; tests pass a manual one. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Wall-clock time and Node timers. Timers are unref'd so they never hold the process open. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, Math.max(0, Math.min(ms, 2_147_483_647)));
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * A clock moved by hand: `advance(ms)` runs every timer that falls due, in due order.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
 * clock.advance(30 * 60_000); // fires the approval timeout
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Moves time forward, running timers due by then in order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) {
        if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      }
      if (!next) break;
      this.pending.delete(next[0]);
      this.current = Math.max(this.current, next[1].at);
      next[1].fn();
    }
    this.current = target;
  }

  /** Sets the time without running timers (a process that was down). */
  set(time: number): void {
    this.current = time;
  }
}
