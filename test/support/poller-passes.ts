/**
 * Passes of the message poller at the worst moments, for the differential test.
 * A runtime that polls (`startTimerPolling`, every worker of a deployment) runs
 * `courier.deliverAll()` at any time, concurrently with what it delivers live.
 * The worst time is right after a commit is durable and before the commit's
 * messages are posted in the process: the pass reads rows the courier does not
 * know of yet (the PostgreSQL crash test's "spawn refused" of 2026-11 was one).
 * This wraps a store so that, after some commits, a pass reads the pending
 * messages before the commit returns, and before some lookups of a message's row
 * a pass starts; where the passes go on from there is left to the event loop.
 * What the durable side ends with must not change.
 */
import { getRuntime } from '../../src/index.ts';
import type { Store } from '../../src/store/types.ts';

/** A small deterministic generator (a case replays with its passes). */
export function lcg(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 4_294_967_296;
  };
}

/** A seed from a case's text, so the same case gets the same passes when fast-check replays it. */
export function seedOf(text: string): number {
  let hash = 2_166_136_261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16_777_619);
  return hash >>> 0;
}

/**
 * Makes `store` run a pass of its runtime's poller, with probability `rate`,
 * after a commit (once it is durable, before it returns) and before a lookup of
 * one receiver's pending messages. Returns a count of the passes made.
 */
export function withPollerPasses(store: Store, rate: number, seed: number): { passes: number } {
  const random = lcg(seed);
  const counted = { passes: 0 };
  const commit = store.commit.bind(store);
  const pendingMessages = store.pendingMessages.bind(store);
  let pageRead: (() => void) | undefined;
  store.pendingMessages = async (query) => {
    if (query.to !== undefined && random() < rate) {
      // A lookup of one message's row: a pass starts first and runs as far as it can.
      counted.passes++;
      void getRuntime(store).courier.deliverAll();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const rows = await pendingMessages(query);
    if (query.to === undefined && pageRead !== undefined) {
      pageRead();
      pageRead = undefined;
    }
    return rows;
  };
  store.commit = async (writes) => {
    const results = await commit(writes);
    if (random() < rate) {
      const read = new Promise<void>((resolve) => (pageRead = resolve));
      counted.passes++;
      void getRuntime(store).courier.deliverAll();
      // A pass on a closed runtime reads nothing: it does not hold the commit up.
      await Promise.race([read, new Promise((resolve) => setImmediate(resolve))]);
    }
    return results;
  };
  return counted;
}
