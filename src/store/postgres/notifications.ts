/**
 * Commits by any process, as PostgreSQL tells them: after its commits each process
 * sends `NOTIFY agentcharts_commits` ({@link CommitAnnouncer}), and one dedicated
 * connection of the pool LISTENs while anyone wants to know. A follower (the
 * server's transition feed, `tail`) then reads new rows at once instead of at its
 * next poll; polling stays as the fallback. A lost connection is re-established
 * after a second, and listeners are told once on reconnect (commits may have been
 * missed meanwhile).
 */
import type pg from 'pg';

export const COMMITS_CHANNEL = 'agentcharts_commits';

/** Least time between two announcements under a steady stream of commits. */
export const ANNOUNCE_GAP_MS = 10;

/**
 * Tells other processes that this one committed: `NOTIFY` in a statement of its
 * own after the commit, not inside it. PostgreSQL takes one lock for every
 * transaction that notifies and holds it through the commit's WAL flush, so a
 * NOTIFY in each commit made the commits of all processes wait for one another
 * (4 connections committing at once: 3,400–4,400 against 5,400–6,500 commits/s
 * without it). Announcements coalesce: one at a time, the first of a quiet spell
 * at once, then at most one per {@link ANNOUNCE_GAP_MS}, and always one after the
 * last commit. One that fails (a lost connection) is left to the followers' poll.
 */
export class CommitAnnouncer {
  private sending = false;
  /** A commit came after the announcement under way began. */
  private again = false;
  private lastSent = Number.NEGATIVE_INFINITY;
  private wait: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly gapMs = ANNOUNCE_GAP_MS,
  ) {}

  /** After a commit reached the database. */
  committed(): void {
    if (this.closed) return;
    if (this.sending || this.wait !== undefined) {
      this.again = true;
      return;
    }
    this.next();
  }

  /** Sends now, or once the gap since the last one has passed. */
  private next(): void {
    const due = this.lastSent + this.gapMs - Date.now();
    if (due > 0) {
      this.wait = setTimeout(this.send, due);
      this.wait.unref();
      return;
    }
    this.send();
  }

  private readonly send = (): void => {
    this.wait = undefined;
    if (this.closed) return;
    this.sending = true;
    this.again = false;
    this.lastSent = Date.now();
    this.pool.query(`NOTIFY ${COMMITS_CHANNEL}`).then(this.sent, this.sent);
  };

  private readonly sent = (): void => {
    this.sending = false;
    if (this.again && !this.closed) this.next();
  };

  /** No announcement after this (the store closes). */
  close(): void {
    this.closed = true;
    if (this.wait !== undefined) clearTimeout(this.wait);
    this.wait = undefined;
  }
}

export class CommitNotifications {
  private readonly listeners = new Set<() => void>();
  private client: pg.PoolClient | undefined;
  private connecting: Promise<void> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Calls `listener` after commits by any process; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.client && !this.connecting) this.connect();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.release();
    };
  }

  private tell(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private connect(): void {
    if (this.closed || this.listeners.size === 0) return;
    this.connecting = (async () => {
      const client = await this.pool.connect();
      client.on('notification', (message) => {
        if (message.channel === COMMITS_CHANNEL) this.tell();
      });
      client.on('error', () => this.lost(client));
      await client.query(`LISTEN ${COMMITS_CHANNEL}`);
      if (this.closed || this.listeners.size === 0) {
        client.release();
        return;
      }
      this.client = client;
    })()
      .catch(() => this.scheduleRetry())
      .finally(() => {
        this.connecting = undefined;
      });
  }

  private lost(client: pg.PoolClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.release(true);
    this.tell();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry !== undefined || this.listeners.size === 0) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect();
    }, 1000);
    this.retry.unref();
  }

  private release(): void {
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.query(`UNLISTEN ${COMMITS_CHANNEL}`).then(
        () => client.release(),
        () => client.release(true),
      );
    }
  }

  /** Stops listening for good (the store closes). */
  close(): void {
    this.closed = true;
    if (this.retry !== undefined) clearTimeout(this.retry);
    this.listeners.clear();
    const client = this.client;
    this.client = undefined;
    client?.release(true);
  }
}
