/**
 * The order in which {@link Courier.deliverAll} hands over messages read back from
 * the store after a stop. Live, the courier delivers depth first: a receiver's
 * commit posts messages, and those are delivered before the next message of the
 * commit that reached it. Read back, the pending rows come oldest first, which is
 * not that order when a stop fell between: a commit with a message left (a
 * parent's snapshot of a promise to itself, idx 2) is older than the commit its
 * earlier message caused (the child that message spawned, greeting its parent),
 * whose messages XState delivers first. Each pending commit names what caused it
 * (its transition row's metadata: the message it took, or the spawn that created
 * it); a commit caused by a message of another pending commit goes inside that
 * commit, right after the message that caused it.
 */

/** One commit's pending messages, in the order it posted them, and its cause. */
export interface PendingBatch<P extends { readonly idx: number }> {
  /** The commit: its sender and transition. */
  readonly key: string;
  readonly from: string;
  readonly posted: readonly P[];
  /** The sender is free while they are delivered (Courier.senderInfo). */
  readonly free: boolean;
  /** The message whose delivery made this commit: its commit's key and its place. */
  readonly cause: { readonly key: string; readonly idx: number } | undefined;
}

/** A commit's messages with the commits they caused nested where they go. */
export interface NestedBatch<P> {
  readonly from: string;
  readonly free: boolean;
  readonly items: ReadonlyArray<{ message: P } | { batch: NestedBatch<P> }>;
}

/** Nests `batches` (oldest first) by cause; the top level keeps their order. */
export function nestBatches<P extends { readonly idx: number }>(
  batches: readonly PendingBatch<P>[],
): NestedBatch<P>[] {
  const keys = new Set(batches.map((b) => b.key));
  /** Per commit, the pending commits its messages caused, with the place of each cause. */
  const caused = new Map<string, Array<{ idx: number; batch: PendingBatch<P> }>>();
  const top: PendingBatch<P>[] = [];
  for (const batch of batches) {
    const cause = batch.cause;
    if (cause === undefined || cause.key === batch.key || !keys.has(cause.key)) {
      top.push(batch);
      continue;
    }
    const list = caused.get(cause.key) ?? [];
    list.push({ idx: cause.idx, batch });
    caused.set(cause.key, list);
  }
  const nest = (batch: PendingBatch<P>): NestedBatch<P> => {
    // Stable: commits caused by one message keep their order.
    const children = [...(caused.get(batch.key) ?? [])].sort((a, b) => a.idx - b.idx);
    const items: Array<{ message: P } | { batch: NestedBatch<P> }> = [];
    let next = 0;
    const before = (idx: number) => {
      for (let child = children[next]; child !== undefined && child.idx < idx;) {
        items.push({ batch: nest(child.batch) });
        child = children[++next];
      }
    };
    for (const message of batch.posted) {
      // What a message delivered before the stop caused goes before the next one left.
      before(message.idx);
      items.push({ message });
    }
    before(Infinity);
    return { from: batch.from, free: batch.free, items };
  };
  return top.map(nest);
}
