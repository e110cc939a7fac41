/**
 * The order recovery hands over pending messages (src/durable/recovered-order.ts):
 * oldest commit first, each commit caused by another pending commit's message
 * nested right after that message, as the live courier delivers depth first.
 */
import { describe, expect, test } from 'vitest';
import {
  nestBatches,
  type NestedBatch,
  type PendingBatch,
} from '../src/durable/recovered-order.ts';

type M = { idx: number; name: string };
const batch = (
  key: string,
  names: string[],
  cause?: { key: string; idx: number },
  firstIdx = 0,
): PendingBatch<M> => ({
  key,
  from: key.split(':')[1] as string,
  posted: names.map((name, i) => ({ idx: firstIdx + i, name })),
  free: false,
  cause,
});

/** The messages in delivery order. */
function flat(nested: readonly NestedBatch<M>[]): string[] {
  return nested.flatMap((n) =>
    n.items.flatMap((item) => ('message' in item ? [item.message.name] : flat([item.batch]))),
  );
}

describe('pending messages after a stop', () => {
  test('a commit caused by an earlier message of a pending commit goes before its later ones', () => {
    // P's step posted idx 0 (delivered: it spawned C) and idx 2 (left); C's first
    // commit posted its greeting. P's row is older; C's greeting goes first.
    const p = batch('12:p', ['p-self'], undefined, 2);
    const c = batch('4:p/c', ['c-hello'], { key: '12:p', idx: 1 });
    expect(flat(nestBatches([p, c]))).toEqual(['c-hello', 'p-self']);
  });

  test('nested two deep, and in the order of the messages that caused them', () => {
    const p = batch('5:p', ['p3', 'p4'], undefined, 3);
    const a = batch('2:p/a', ['a0', 'a1'], { key: '5:p', idx: 0 });
    const b = batch('3:p/b', ['b0'], { key: '5:p', idx: 2 });
    const g = batch('1:p/a/g', ['g0'], { key: '2:p/a', idx: 0 });
    expect(flat(nestBatches([p, a, b, g]))).toEqual(['a0', 'g0', 'a1', 'b0', 'p3', 'p4']);
  });

  test('the control: commits with no pending cause keep their order, oldest first', () => {
    const x = batch('7:x', ['x0', 'x1']);
    const y = batch('2:y', ['y0'], { key: '6:z', idx: 0 }); // its cause was all delivered
    expect(flat(nestBatches([x, y]))).toEqual(['x0', 'x1', 'y0']);
  });
});
