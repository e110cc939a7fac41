/**
 * What a spawn message carries: how the receiver builds the child, and where the
 * events its step sent the child before spawning it go in the child's mailbox.
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
   * The events the step sent the child before spawning it (an entry `sendTo` of the
   * state that invokes it), which are the step's messages right after this spawn:
   * for each, in order, the index of the step's message it was sent before. XState
   * relays each there, into the mailbox of the child, which it starts later, so the
   * child takes them, and what other actors sent it meanwhile, in that order before
   * anything the first of them sets off. Absent when none, and in the spawns of
   * earlier builds.
   */
  queued?: number[] | undefined;
}

/** {@link SpawnBody.queued} of a message's body: undefined when it has none or is no spawn. */
export function queuedWithSpawn(kind: string, body: string): readonly number[] | undefined {
  if (kind !== 'spawn' || !body.includes('"queued"')) return undefined;
  try {
    const queued = (JSON.parse(body) as { queued?: unknown }).queued;
    if (!Array.isArray(queued) || queued.length === 0) return undefined;
    return queued.every((at) => Number.isInteger(at) && (at as number) >= 0)
      ? (queued as number[])
      : undefined;
  } catch {
    return undefined;
  }
}
