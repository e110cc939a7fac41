/**
 * The spawns a courier (./deliver.ts) has posted and not sent yet, and what waits
 * for them. XState creates a spawned child as the step's actions are resolved (a
 * child of that id the step stops is gone from then on) and starts it when its
 * turn comes: what another actor sends it meanwhile (found by system id) waits in
 * its mailbox and is taken once it has started. Here such messages wait per
 * receiver until its spawn is sent.
 */
import type { Posted } from './posted.ts';

export class SpawnWaits {
  /** Per receiver, the spawn of it posted and not sent yet. */
  private readonly unstarted = new Map<string, Posted>();
  /** Per receiver in {@link unstarted}, the messages waiting for its spawn (claimed). */
  private readonly box = new Map<string, Posted[]>();
  /** The last number {@link note} gave. */
  private notes = 0;

  /** Whether a spawn of `actorId` is posted and not sent yet. */
  has(actorId: string): boolean {
    return this.unstarted.has(actorId);
  }

  /** Whether `spawn` is the one of its receiver that waits to be sent. */
  isPending(spawn: Posted): boolean {
    return this.unstarted.get(spawn.to) === spawn;
  }

  /** Numbers one commit's messages in the order learned, noting what they spawn. */
  note(posted: readonly Posted[]): void {
    for (const p of posted) {
      p.noted = ++this.notes;
      if (p.kind === 'spawn') this.unstarted.set(p.to, p);
    }
  }

  /**
   * Whether `p` waits in its receiver's mailbox for the receiver's spawn, posted by
   * another commit and not sent yet.
   */
  waits(p: Posted): boolean {
    const spawn = this.unstarted.get(p.to);
    // An event posted after the spawning commit by another: what was posted before
    // (a stop of the child the spawn replaces, left pending by a crash) is the old
    // one's, and so is what a descendant sends up (`sendParent` names its own
    // parent, the old one, where a send by system id finds the new one), and what
    // the old one sends itself: XState's actor takes it from its own mailbox before
    // the step that sent it the event returns, so before its stop. Not when found
    // by system id: XState's `system.get` finds the new one from the spawning step
    // on, even in a step of the old one or of its descendants.
    return (
      spawn !== undefined &&
      p.kind === 'event' &&
      (p.noted ?? 0) > (spawn.noted ?? Infinity) &&
      (spawn.from !== p.from || spawn.fromSeq !== p.fromSeq) &&
      (p.bySystemId === true || (p.from !== p.to && !p.from.startsWith(`${p.to}/`)))
    );
  }

  /** `p` (claimed by the caller) waits for the spawn of its receiver. */
  hold(p: Posted): void {
    const waiting = this.box.get(p.to);
    if (waiting === undefined) this.box.set(p.to, [p]);
    else waiting.push(p);
  }

  /**
   * `p` is sent: when it is a pending spawn, the messages that waited for it, to be
   * taken once the child has started (undefined when none did, or `p` is no such
   * spawn).
   */
  start(p: Posted): Posted[] | undefined {
    if (p.kind !== 'spawn' || this.unstarted.get(p.to) !== p) return undefined;
    const waited = this.box.get(p.to);
    this.unstarted.delete(p.to);
    this.box.delete(p.to);
    return waited;
  }

  /**
   * Forgets the pending spawns `given` picks, never sent (their delivery given up):
   * what waited for them is returned, released to be read back from the store.
   */
  forget(given: (spawn: Posted) => boolean): Posted[] {
    const released: Posted[] = [];
    for (const [to, spawn] of this.unstarted) {
      if (!given(spawn)) continue;
      this.unstarted.delete(to);
      released.push(...(this.box.get(to) ?? []));
      this.box.delete(to);
    }
    return released;
  }
}
