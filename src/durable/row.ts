/**
 * The transition row: the append-only audit record of one committed transition,
 * hash-chained to the actor's previous row. A row also carries the SHA-256 of the
 * snapshot the transition produced, covered by its hash, so an actor's stored
 * snapshot can be checked against the head of its chain whenever it is loaded.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import { StoreError } from '../core/errors.ts';
import type { ActorRow, TransitionRow } from '../store/types.ts';

/** `prevHash` of an actor's first row. */
export const GENESIS_HASH = '0'.repeat(64);

/** SHA-256 (hex) of a string, in one call over bytes that already exist. */
export function sha256(text: string): string {
  return oneShotHash('sha256', text, 'hex');
}

/** A string field with its length in front: no two field lists hash the same text. */
function field(value: string | null): string {
  return value === null ? '-' : `${value.length}:${value}`;
}

/**
 * The chain hash of a row. Rows that record a snapshot hash (every row agentcharts
 * writes now) hash a length-prefixed concatenation of every field; rows written
 * before (no snapshot hash) keep the hash they were written with.
 */
export function hashTransition(row: Omit<TransitionRow, 'hash'>): string {
  if (row.snapshotHash === null || row.snapshotHash === undefined) {
    return createHash('sha256')
      .update(
        JSON.stringify([
          row.prevHash,
          row.actorId,
          row.seq,
          row.fromState,
          row.toState,
          row.eventType,
          row.event,
          row.at,
          row.metadata,
        ]),
      )
      .digest('hex');
  }
  return sha256(
    `2|${row.prevHash}|${field(row.actorId)}|${row.seq}|${field(row.fromState)}|` +
      `${field(row.toState)}|${field(row.eventType)}|${field(row.event)}|${row.at}|` +
      `${field(row.metadata)}|${row.chartVersion ?? '-'}|${row.snapshotHash}`,
  );
}

/**
 * Builds an audit row and its chain hash; `snapshot` is the JSON the actor row will
 * hold (the row records its hash).
 */
export function buildTransitionRow(
  fields: Omit<TransitionRow, 'hash' | 'snapshotHash' | 'chartVersion'> & {
    chartVersion: number;
    snapshot: string;
  },
): TransitionRow {
  // The row is built once, its hash set last (every commit builds one).
  const row: TransitionRow = {
    actorId: fields.actorId,
    seq: fields.seq,
    fromState: fields.fromState,
    toState: fields.toState,
    eventType: fields.eventType,
    event: fields.event,
    at: fields.at,
    metadata: fields.metadata,
    prevHash: fields.prevHash,
    chartVersion: fields.chartVersion,
    snapshotHash: sha256(fields.snapshot),
    hash: '',
  };
  row.hash = hashTransition(row);
  return row;
}

/**
 * Checks that an actor row and the head of its chain agree before anything is
 * written on top of them: the head is the row at the actor's version, its hash is
 * the actor's head hash and matches its content, and (when recorded) the stored
 * snapshot is the one the head hashed. Throws StoreError kind `corrupt` naming the
 * actor otherwise.
 */
export function checkHead(actor: ActorRow, head: TransitionRow | undefined): void {
  const corrupt = (detail: string) =>
    new StoreError({ operation: 'load', kind: 'corrupt', actorId: actor.id, detail });
  if (head === undefined) throw corrupt(`no transition row at version ${actor.version}`);
  if (head.hash !== actor.headHash) throw corrupt('head hash differs from the last transition row');
  const { hash, ...content } = head;
  if (hashTransition(content) !== hash)
    throw corrupt('last transition row does not match its hash');
  if (head.toState !== actor.state) throw corrupt('state differs from the last transition row');
  if (head.snapshotHash !== null && head.snapshotHash !== undefined) {
    if (sha256(actor.snapshot) !== head.snapshotHash) {
      throw corrupt('snapshot differs from the one its last transition row recorded');
    }
  }
}
