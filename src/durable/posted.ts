/**
 * What the courier (./deliver.ts) knows of a message: the commit that posted it
 * (sender, transition, place), its row once read, the events a spawning step
 * sent its child before the spawn, and the keys and causes it orders them by.
 */
import type { MessageKind, MessageRow, OutgoingMessage } from '../store/types.ts';
import type { Rank } from './ledger.ts';
import type { TimerArm } from './placed-timers.ts';
import { queuedWithSpawn } from './spawn-body.ts';

/** A message known by the commit that posted it: sender, its transition, place. */
export interface Posted {
  readonly to: string;
  readonly from: string;
  readonly fromSeq: number;
  readonly idx: number;
  readonly kind: MessageKind;
  /** The row, when it was read from the store rather than posted here. */
  readonly row?: MessageRow;
  /** Its row being looked up ahead of its delivery (see `Courier.lookAhead`, ./deliver.ts). */
  lookup?: Promise<MessageRow | undefined>;
  /**
   * Older pending messages to the same receiver that its lookup met and this courier
   * has not queued: posted by another process (or a killed worker's last statement
   * landing late), they go first.
   */
  older?: MessageRow[] | undefined;
  /** When this courier learned of it (posted here, or read by deliverAll), in order. */
  noted?: number;
  /**
   * A spawn: where the events its step sent the child before spawning it, its
   * commit's messages right after it, go into the child's mailbox (SpawnBody.queued).
   */
  readonly queued?: readonly number[];
  /** Sent to an actor found by its system id ({@link OutgoingMessage.bySystemId}). */
  readonly bySystemId?: true;
  /**
   * Its commit's step's place in the arm order (Rank, ./ledger.ts), when posted
   * here: its delivery's step nests under it.
   */
  readonly base?: Rank;
}

/** An event a step sent a child before spawning it, and where XState relays it. */
export interface Held {
  readonly message: Posted;
  readonly spawn: Posted;
  /** The index of the step's message it is relayed before. */
  readonly at: number;
}

/** What one commit posted: its sender, the sender's transition, its messages in order. */
export interface PostedBatch {
  readonly from: string;
  readonly fromSeq: number;
  readonly messages: readonly OutgoingMessage[];
  /** The commit finished its sender (done, failed or stopped). */
  readonly finished?: boolean | undefined;
  /**
   * The commit relayed a delayed send that fell due: XState's scheduler delivers
   * it, its sender taking no event, so the sender is not processing meanwhile.
   */
  readonly relayed?: boolean | undefined;
  /** Timers the commit's step armed after some of its messages, armed in their place. */
  readonly arms?: readonly TimerArm[] | undefined;
  /** The step's place in the arm order (Rank, ./ledger.ts), when known here. */
  readonly base?: Rank | undefined;
}

/** A message as the courier knows it: of commit `fromSeq` of `from`, and its row when read. */
export function postedFrom(
  m: Pick<OutgoingMessage, 'to' | 'idx' | 'kind' | 'body' | 'bySystemId'>,
  from: string,
  fromSeq: number,
  row?: MessageRow,
): Posted {
  const queued = queuedWithSpawn(m.kind, m.body);
  return {
    to: m.to,
    from,
    fromSeq,
    idx: m.idx,
    kind: m.kind,
    ...(row === undefined ? {} : { row }),
    ...(queued === undefined ? {} : { queued }),
    ...(m.bySystemId === true ? { bySystemId: true } : {}),
  };
}

/** A message read from the store. */
export const fromRow = (row: MessageRow): Posted => postedFrom(row, row.from, row.fromSeq, row);

/**
 * The message a transition row took, from its metadata: an event or stop delivered
 * (`from`), or the spawn that created the actor (`parent`); none for a caller's
 * send, a timer or an invoke's outcome.
 */
export function causeOf(metadata: string): { key: string; idx: number } | undefined {
  if (!metadata.includes('"fromSeq"')) return undefined;
  try {
    const meta = JSON.parse(metadata) as {
      source?: unknown;
      from?: unknown;
      parent?: unknown;
      fromSeq?: unknown;
      idx?: unknown;
    };
    const by =
      meta.source === 'message' ? meta.from : meta.source === 'spawn' ? meta.parent : undefined;
    if (
      typeof by !== 'string' ||
      typeof meta.fromSeq !== 'number' ||
      typeof meta.idx !== 'number'
    ) {
      return undefined;
    }
    return { key: keyOfCommit(by, meta.fromSeq), idx: meta.idx };
  } catch {
    return undefined;
  }
}

/** Whether a transition row's metadata marks the relay of a delayed send (a timer's commit). */
export function isRelay(metadata: string): boolean {
  if (!metadata.includes('"relay"')) return false;
  try {
    const meta = JSON.parse(metadata) as { source?: unknown };
    return meta.source === 'timer' && 'relay' in meta;
  } catch {
    return false;
  }
}

/**
 * What a commit's transition row records of its messages sent by system id (its
 * metadata's `bySystemId`: their places), read back by {@link bySystemIdOf};
 * undefined when it sent none (nearly every commit).
 */
export function bySystemIdMarks(
  messages: ReadonlyArray<Pick<OutgoingMessage, 'idx' | 'bySystemId'>>,
): number[] | undefined {
  let marks: number[] | undefined;
  for (const m of messages) if (m.bySystemId === true) (marks ??= []).push(m.idx);
  return marks;
}

/**
 * The places of a commit's messages sent by system id, from its transition row's
 * metadata (`bySystemId`), so that read back after a stop they are what they were
 * posted as ({@link Posted.bySystemId}).
 */
export function bySystemIdOf(metadata: string): ReadonlySet<number> | undefined {
  if (!metadata.includes('"bySystemId"')) return undefined;
  try {
    const marks = (JSON.parse(metadata) as { bySystemId?: unknown }).bySystemId;
    if (!Array.isArray(marks)) return undefined;
    return new Set(marks.filter((idx): idx is number => typeof idx === 'number'));
  } catch {
    return undefined;
  }
}

/** Whether `m` was sent before `p` by the same sender (one commit's messages in order). */
export const sentBefore = (m: MessageRow, p: Posted): boolean =>
  m.from === p.from && (m.fromSeq < p.fromSeq || (m.fromSeq === p.fromSeq && m.idx < p.idx));

export const keyOf = (m: { from: string; fromSeq: number; idx: number }): string =>
  `${m.fromSeq}:${m.idx}:${m.from}`;
export const keyOfCommit = (from: string, fromSeq: number): string => `${fromSeq}:${from}`;

export function postedOf(batch: PostedBatch): Posted[] {
  const { base } = batch;
  const posted = batch.messages.map((m) => postedFrom(m, batch.from, batch.fromSeq));
  return base === undefined ? posted : posted.map((p) => ({ ...p, base }));
}

/**
 * The events of one commit's messages that its step sent a child before spawning
 * it ({@link Posted.queued}): those right after each such spawn, to the child.
 */
export function heldIn(posted: readonly Posted[]): Held[] | undefined {
  let held: Held[] | undefined;
  for (let i = 0; i < posted.length; i++) {
    const spawn = posted[i] as Posted;
    const queued = spawn.queued;
    if (queued === undefined) continue;
    for (let k = 0; k < queued.length; k++) {
      const q = posted[i + 1 + k];
      if (
        q === undefined ||
        q.to !== spawn.to ||
        q.kind !== 'event' ||
        q.from !== spawn.from ||
        q.fromSeq !== spawn.fromSeq ||
        q.idx !== spawn.idx + 1 + k
      ) {
        break;
      }
      (held ??= []).push({ message: q, spawn, at: queued[k] as number });
    }
  }
  return held;
}
