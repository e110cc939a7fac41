/**
 * Group commit. Writes queued while the store is busy, or in the same turn of the
 * event loop, go to the store together: one transaction and one fsync for all of
 * them. Each caller's promise settles with its own write's outcome only after the
 * transaction is durable. A flush is started on a microtask, so a lone send pays
 * no event-loop turn, yet every send issued in the same synchronous run (or while
 * a flush is in flight) joins the batch. When the courier will deliver to other
 * actors next (`more`), the flush waits for the end of the event-loop turn instead:
 * those deliveries, submitted microtask by microtask, join the same transaction.
 */
import { StoreError } from '../core/errors.ts';
import type { ActorWrite, Store } from '../store/types.ts';

interface Pending {
  write: ActorWrite;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class Committer {
  private queue: Pending[] = [];
  private scheduled = false;
  /** True from the start of a flush until it finds the queue empty (set synchronously). */
  private running = false;
  private flushing: Promise<void> = Promise.resolve();
  /** Resolves when the scheduled flush has started. */
  private started: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly maxBatch: number,
    /** Whether more writes are on their way after this one (a flush then waits for the turn's end). */
    private readonly more: (write: ActorWrite) => boolean = () => false,
  ) {}

  /**
   * Queues a write; resolves once it is durable, rejects with that write's own
   * error (ConcurrencyError, LeaseLostError) or the batch's StoreError.
   */
  commit(write: ActorWrite): Promise<void> {
    if (this.closed) {
      return Promise.reject(
        new StoreError({
          operation: 'commit',
          kind: 'closed',
          actorId: write.actorId,
          detail: 'runtime closed',
        }),
      );
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.scheduled && !this.running) {
        this.scheduled = true;
        const wait = this.more(write);
        this.started = new Promise<void>((started) => {
          this.onStarted = started;
          if (wait) setImmediate(this.start);
          else queueMicrotask(this.start);
        });
      }
    });
  }

  /** Resolves {@link started}: set while a flush is scheduled. */
  private onStarted: () => void = () => {};

  /**
   * Starts the scheduled flush. Made once per committer, not per commit: under tsx
   * (the benchmarks), every named closure made on the send path costs a `__name` call.
   */
  private readonly start = (): void => {
    this.scheduled = false;
    this.flushing = this.flush();
    this.onStarted();
  };

  /** Nothing in here throws; `running` drops in the same step that finds the queue empty. */
  private async flush(): Promise<void> {
    this.running = true;
    while (this.queue.length > 0) {
      const batch =
        this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
      this.queue = batch === this.queue ? [] : this.queue.slice(this.maxBatch);
      let results: Array<Error | null>;
      try {
        results = await this.store.commit(batch.map((p) => p.write));
      } catch (error) {
        const err =
          error instanceof Error
            ? error
            : new StoreError({ operation: 'commit', kind: 'unknown', detail: String(error) });
        for (const p of batch) p.reject(err);
        continue;
      }
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i] as Pending;
        const error = results[i];
        if (error) p.reject(error);
        else p.resolve();
      }
    }
    this.running = false;
  }

  /** Waits until every queued write is committed (or failed). */
  async drain(): Promise<void> {
    while (this.scheduled || this.running || this.queue.length > 0) {
      if (this.running) await this.flushing;
      else if (this.scheduled) await this.started;
      else await new Promise<void>((resolve) => queueMicrotask(resolve));
    }
  }

  /** Refuses new writes after the queued ones are committed. */
  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
  }
}
