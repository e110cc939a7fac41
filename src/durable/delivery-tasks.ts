/**
 * The deliveries a courier (./deliver.ts) has under way, by the tree of the
 * actors they deliver to ({@link treeOf}): a cascade of messages stays inside
 * its tree. Passes over pending messages (`deliverAll`) are under `undefined`:
 * they may deliver in any tree. What waits for a tree to be quiet (an event from
 * outside it: runtime.turnFor) waits here.
 */
import { treeOf } from './actor-ids.ts';

export class DeliveryTasks {
  private readonly all = new Set<Promise<unknown>>();
  private readonly byTree = new Map<string | undefined, Set<Promise<unknown>>>();

  /** Tracks a delivery under way, of `tree` (undefined: a pass, of any tree). */
  track(task: Promise<unknown>, tree: string | undefined): void {
    this.all.add(task);
    let mine = this.byTree.get(tree);
    if (mine === undefined) this.byTree.set(tree, (mine = new Set()));
    mine.add(task);
    void task.finally(() => {
      this.all.delete(task);
      const set = this.byTree.get(tree);
      if (set?.delete(task) === true && set.size === 0) this.byTree.delete(tree);
    });
  }

  /** Whether a delivery is under way. */
  get busy(): boolean {
    return this.all.size > 0;
  }

  /** Whether a delivery is under way in `tree` ({@link settledFor} would wait). */
  busyIn(tree: string): boolean {
    return this.byTree.has(tree);
  }

  /** Resolves once the deliveries under way now have settled (later ones are not waited for). */
  async settled(): Promise<void> {
    if (this.all.size > 0) await Promise.allSettled([...this.all]);
  }

  /**
   * Waits until no delivery is under way in `actorId`'s tree (with `passes`, nor a
   * pass). Until none is left: a delivery goes on while its commit is made
   * durable, which is a task of its own, started after the delivery.
   */
  async settledFor(actorId: string, passes: boolean): Promise<void> {
    const tree = treeOf(actorId);
    for (;;) {
      const mine = this.byTree.get(tree);
      const any = passes ? this.byTree.get(undefined) : undefined;
      if (mine === undefined && any === undefined) return;
      await Promise.allSettled([...(mine ?? []), ...(any ?? [])]);
    }
  }

  /** Waits until every delivery under way has finished (rejects with the first that fails). */
  async idle(): Promise<void> {
    while (this.all.size > 0) await Promise.all([...this.all]);
  }
}
