/**
 * One-time sign-in links: what `agentcharts serve` prints so its operator can
 * open the dashboard with a click, without the read token itself appearing in
 * the terminal, a log or a browser's history. A link opens one reader session,
 * once, within its time to live (15 minutes); at most 100 wait at once.
 */
import { randomBytes } from 'node:crypto';

export class SignInLinks {
  private readonly codes = new Map<string, number>();
  constructor(
    private readonly ttlMs = 15 * 60 * 1000,
    private readonly max = 100,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new code for `/?signin=<code>`. */
  issue(): string {
    for (const oldest of this.codes.keys()) {
      if (this.codes.size < this.max) break;
      this.codes.delete(oldest);
    }
    const code = randomBytes(24).toString('base64url');
    this.codes.set(code, this.now() + this.ttlMs);
    return code;
  }

  /** Whether `code` is a live link; it is spent either way. */
  redeem(code: string): boolean {
    const expires = this.codes.get(code);
    this.codes.delete(code);
    return expires !== undefined && expires > this.now();
  }
}
