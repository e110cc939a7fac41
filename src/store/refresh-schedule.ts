/**
 * When the read models fold in the log: a little after commits, off the commit
 * path, one timer at a time. Queries stay exact through their overlay whatever
 * a refresh does, so a failed one (busy, full, disconnected) is left to the next.
 */
export class RefreshSchedule {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `delayMs` ≤ 0 turns refreshing after commits off (a read-only store). */
  constructor(
    private readonly delayMs: number,
    private readonly refresh: () => unknown,
  ) {}

  /** After a commit: refresh in `delayMs`, unless a refresh is already due. */
  soon(): void {
    if (this.delayMs <= 0 || this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) void this.run();
    }, this.delayMs);
    this.timer.unref();
  }

  /** On close: no refresh runs after this. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async run(): Promise<void> {
    try {
      await this.refresh();
    } catch {
      // The next commit schedules another.
    }
  }
}
