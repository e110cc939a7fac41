/**
 * A throttle on failed secrets (dashboard sign-in, MCP bearer keys, the read
 * token): guesses are counted per client address and per key over a window.
 *
 * - A client past its failures is refused (`429`, `Retry-After`) before its
 *   secret is looked at, for the rest of the window.
 * - A key past its failures (guessed from many addresses) is refused to every
 *   client that has failed in this window; a client with no failure — the key's
 *   owner, elsewhere — still has its secret checked, so a flood of wrong guesses
 *   cannot lock the owner out.
 *
 * Hand-written because rate limiters (hono-rate-limiter and the like) count
 * requests, not failures, and know nothing of the key a guess was for. The
 * tables are bounded: past `maxEntries` the oldest entries go.
 */

export interface ThrottleOptions {
  /** Failures one client address may make per window. Default 10. */
  perClient?: number | undefined;
  /** Failures against one key, from all clients, per window. Default 50. */
  perKey?: number | undefined;
  /** Window length (ms). Default 60 s. */
  windowMs?: number | undefined;
  /** Addresses and keys remembered at most. Default 10,000 each. */
  maxEntries?: number | undefined;
  now?: (() => number) | undefined;
}

/** Failures since `start`; the window of each client and key opens at its first failure. */
interface Count {
  start: number;
  failures: number;
}

export class FailureThrottle {
  private readonly perClient: number;
  private readonly perKey: number;
  private readonly windowMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly clients = new Map<string, Count>();
  private readonly keys = new Map<string, Count>();
  /** Attempts refused before their secret was checked. */
  refused = 0;

  constructor(options: ThrottleOptions = {}) {
    this.perClient = options.perClient ?? 10;
    this.perKey = options.perKey ?? 50;
    this.windowMs = options.windowMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  private live(table: Map<string, Count>, id: string): Count | undefined {
    const entry = table.get(id);
    return entry && this.now() - entry.start < this.windowMs ? entry : undefined;
  }

  /**
   * Seconds to wait when this attempt (from `client`, for `keyId`) must be
   * refused unchecked; undefined when its secret may be checked.
   */
  check(client: string, keyId: string | undefined): number | undefined {
    const mine = this.live(this.clients, client);
    const key = keyId === undefined ? undefined : this.live(this.keys, keyId);
    const overClient = mine !== undefined && mine.failures >= this.perClient;
    const overKey = key !== undefined && key.failures >= this.perKey && mine !== undefined;
    if (!overClient && !overKey) return undefined;
    this.refused++;
    const until = Math.max(
      overClient ? mine.start + this.windowMs : 0,
      overKey ? key.start + this.windowMs : 0,
    );
    return Math.max(1, Math.ceil((until - this.now()) / 1000));
  }

  /** Counts a failed attempt. */
  fail(client: string, keyId: string | undefined): void {
    this.bump(this.clients, client);
    if (keyId !== undefined) this.bump(this.keys, keyId);
  }

  private bump(table: Map<string, Count>, id: string): void {
    const entry = this.live(table, id);
    table.delete(id);
    table.set(
      id,
      entry
        ? { start: entry.start, failures: entry.failures + 1 }
        : { start: this.now(), failures: 1 },
    );
    while (table.size > this.maxEntries) {
      const oldest = table.keys().next().value;
      if (oldest === undefined) break;
      table.delete(oldest);
    }
  }
}
