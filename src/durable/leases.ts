/**
 * Leases for multi-process deployments. A worker with an owner identity takes a
 * lease on the actors it creates, loads or recovers; only the lease holder fires
 * an actor's timers and applies recovery, and those writes are fenced by the lease
 * in the store (LeaseLostError when another worker took it over). Plain sends from
 * any worker stay ordered by compare-and-set.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/types.ts';

export class Leases {
  private readonly held = new Set<string>();
  private renewHandle: unknown;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Worker identity; undefined turns leases off (every actor counts as held). */
    readonly owner: string | undefined,
    readonly leaseMs: number,
  ) {}

  /** Whether this worker holds the actor's lease (always true without an owner). */
  holds(actorId: string): boolean {
    return this.owner === undefined || this.held.has(actorId);
  }

  /** The fencing token for owner duties, or undefined when leases are off. */
  fence(): { owner: string; now: number } | undefined {
    return this.owner === undefined ? undefined : { owner: this.owner, now: this.clock.now() };
  }

  /**
   * Takes (or renews) the leases of `actorIds`, or of up to `limit` unowned or
   * expired actors when no ids are given. Returns the ids now held.
   */
  async acquire(actorIds?: readonly string[], limit = 500): Promise<string[]> {
    if (this.owner === undefined) return actorIds ? [...actorIds] : [];
    const now = this.clock.now();
    const leases = await this.store.acquireLeases({
      owner: this.owner,
      now,
      leaseUntil: now + this.leaseMs,
      limit: actorIds ? actorIds.length : limit,
      actorIds,
    });
    for (const l of leases) this.held.add(l.actorId);
    this.scheduleRenewal();
    return leases.map((l) => l.actorId);
  }

  private scheduleRenewal(): void {
    if (this.renewHandle !== undefined || this.closed || this.owner === undefined) return;
    this.renewHandle = this.clock.setTimeout(
      () => {
        this.renewHandle = undefined;
        void this.renew().finally(() => {
          if (this.held.size > 0) this.scheduleRenewal();
        });
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
  }

  /** Extends every held lease; leases that were lost are dropped (another worker took over). */
  async renew(): Promise<void> {
    if (this.owner === undefined || this.held.size === 0 || this.closed) return;
    const ids = [...this.held];
    const now = this.clock.now();
    try {
      const kept = new Set(
        await this.store.renewLeases({
          owner: this.owner,
          now,
          leaseUntil: now + this.leaseMs,
          actorIds: ids,
        }),
      );
      for (const id of ids) {
        if (!kept.has(id)) {
          this.held.delete(id);
          this.logger.warn(
            { actorId: id, owner: this.owner },
            'lease lost; another worker owns the actor now',
          );
        }
      }
    } catch (error) {
      this.logger.error({ err: error, owner: this.owner }, 'lease renewal failed');
    }
  }

  /** Forgets a lease the store says is gone. */
  drop(actorId: string): void {
    this.held.delete(actorId);
  }

  /** Stops renewing and gives every held lease back. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.renewHandle !== undefined) this.clock.clearTimeout(this.renewHandle);
    if (this.owner !== undefined && this.held.size > 0) {
      await this.store.releaseLeases(this.owner, [...this.held]).catch((error: unknown) => {
        this.logger.error({ err: error }, 'could not release leases');
      });
      this.held.clear();
    }
  }
}
