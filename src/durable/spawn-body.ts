/**
 * What a spawn message carries: how the receiver builds the child, and how many of
 * the step's messages after it go into the child's mailbox before it starts.
 */

/** What a spawn message carries: how the receiver builds the child. */
export interface SpawnBody {
  /** The parent's machine id and the child's logic there (an `actors` key or inline invoke). */
  parentMachine: string;
  src: string;
  childId: string;
  systemId: string | undefined;
  input: unknown;
  /** The parent asked for the child's snapshots (see Ledger.sync); absent when not. */
  sync?: true | undefined;
  /**
   * How many of the step's messages right after this spawn the step sent the child
   * before spawning it (an entry `sendTo` of the state that invokes it). XState
   * queues them in the child's mailbox before starting it, so the child takes them
   * all before anything the first of them sets off; the courier queues them with
   * the spawn. Absent when none, and in the spawns of earlier builds.
   */
  queued?: number | undefined;
}

/** {@link SpawnBody.queued} of a message's body: 0 when it has none or is no spawn. */
export function queuedWithSpawn(kind: string, body: string): number {
  if (kind !== 'spawn' || !body.includes('"queued"')) return 0;
  try {
    const queued = (JSON.parse(body) as { queued?: unknown }).queued;
    return typeof queued === 'number' && Number.isInteger(queued) && queued > 0 ? queued : 0;
  } catch {
    return 0;
  }
}
