/**
 * Commits by any process, as PostgreSQL tells them: every commit statement ends
 * with `pg_notify('agentcharts_commits', '')`, and one dedicated connection of the
 * pool LISTENs while anyone wants to know. A follower (the server's transition
 * feed, `tail`) then reads new rows at once instead of at its next poll; polling
 * stays as the fallback. A lost connection is re-established after a second, and
 * listeners are told once on reconnect (commits may have been missed meanwhile).
 */
import type pg from 'pg';

export const COMMITS_CHANNEL = 'agentcharts_commits';

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
