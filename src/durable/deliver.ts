/**
 * Delivers pending messages to the actors this runtime owns, in message order per
 * receiver: a spawn creates the child actor, an event or a stop goes through the
 * receiver's send path. Each delivery consumes its message row in the receiver's
 * commit (exactly once across processes), whatever the receiver does with it: a
 * message its state does not take is consumed and logged as dropped, as XState
 * drops it; one to an actor that has finished is consumed without a row.
 */
import type { Logger } from 'pino';
import { ConcurrencyError, LeaseLostError } from '../core/errors.ts';
import type { MessageRow, Store } from '../store/types.ts';
import type { LiveActor } from './notices.ts';

export interface CourierHooks {
  store: Store;
  logger: Logger;
  /** Whether this runtime may deliver to the actor (holds or can take its lease). */
  owns(actorId: string): Promise<boolean>;
  /** The live receiver of an event or stop. */
  actor(actorId: string): Promise<LiveActor & { deliverMessage(m: MessageRow): Promise<void> }>;
  /** Creates the child a spawn message asks for, consuming the message. */
  spawn(message: MessageRow): Promise<void>;
}

export class Courier {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private closed = false;

  constructor(private readonly hooks: CourierHooks) {}

  /** Delivers what is pending for these receivers (soon, in this process). */
  notify(receivers: Iterable<string>): void {
    for (const to of receivers) {
      if (this.running.has(to)) {
        this.again.add(to);
        continue;
      }
      const run = this.drain(to).finally(() => {
        this.running.delete(to);
        if (this.again.delete(to)) this.notify([to]);
      });
      this.running.set(to, run);
    }
  }

  /** Whether a delivery is under way. */
  get busy(): boolean {
    return this.running.size > 0;
  }

  /** Waits until every delivery under way has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }

  /** Delivers every pending message of the store this runtime owns, oldest first. */
  async deliverAll(limit = 500): Promise<number> {
    let delivered = 0;
    let afterId = 0;
    for (;;) {
      const page = await this.hooks.store.pendingMessages({ afterId, limit });
      if (page.length === 0) return delivered;
      const receivers = new Set(page.map((m) => m.to));
      for (const to of receivers) delivered += await this.drainNow(to);
      afterId = page.at(-1)?.id ?? afterId;
    }
  }

  close(): void {
    this.closed = true;
  }

  private async drain(to: string): Promise<void> {
    try {
      await this.drainNow(to);
    } catch (error) {
      this.hooks.logger.error(
        { actorId: to, err: error },
        'message delivery failed; it stays pending',
      );
    }
  }

  /** Delivers the receiver's pending messages one by one, in order. */
  private async drainNow(to: string): Promise<number> {
    let delivered = 0;
    while (!this.closed) {
      const [next] = await this.hooks.store.pendingMessages({ to, limit: 1 });
      if (!next) return delivered;
      if (next.kind !== 'spawn' && !(await this.hooks.owns(to))) return delivered;
      if (!(await this.deliverOne(next))) return delivered;
      delivered++;
    }
    return delivered;
  }

  /** False when the message stays pending (another worker delivers it). */
  private async deliverOne(message: MessageRow): Promise<boolean> {
    try {
      if (message.kind === 'spawn') await this.hooks.spawn(message);
      else await (await this.hooks.actor(message.to)).deliverMessage(message);
      return true;
    } catch (error) {
      if (error instanceof LeaseLostError) return false;
      if (error instanceof ConcurrencyError) return true; // delivered elsewhere; look again
      throw error;
    }
  }
}
