import { createHash } from 'node:crypto';
import type { TransitionRow } from '../store/types.ts';

/** `prevHash` of an actor's first row. */
export const GENESIS_HASH = '0'.repeat(64);

/** SHA-256 over a row's content and its predecessor's hash: editing any row breaks the chain. */
export function hashTransition(row: Omit<TransitionRow, 'hash'>): string {
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
