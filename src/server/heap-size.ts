/**
 * What a parsed JSON value costs the server's heap, estimated from above, and
 * how deep it nests. The inspection hub counts what it keeps with it rather than
 * the bytes of the JSON text: `[{},{},…]` is 3 bytes an element on the wire and
 * about 60 in V8 (measured with `--expose-gc`: an empty object 56 bytes plus its
 * 8-byte slot; a key new to V8 about 180 with its hidden class).
 */

/** Bytes charged per kind of value (64-bit V8, rounded up). */
const COST = { object: 64, perKey: 80, array: 32, perElement: 8, string: 16, number: 16, other: 8 };

/** Bytes of a string's characters: one each when all fit in Latin-1, else two. */
function stringBytes(text: string): number {
  // eslint-disable-next-line no-control-regex -- Latin-1 is \u0000-\u00ff
  return COST.string + (/^[\u0000-\u00ff]*$/.test(text) ? text.length : text.length * 2);
}

/**
 * The estimated heap bytes of `value` (plain JSON data), or `undefined` when it
 * nests deeper than `maxDepth` (objects and arrays within objects and arrays).
 * Iterative, so a value nested 20,000 deep is measured, not a stack overflow.
 */
export function jsonHeapBytes(value: unknown, maxDepth: number): number | undefined {
  let bytes = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const v = next.value;
    if (typeof v === 'string') bytes += stringBytes(v);
    else if (typeof v === 'number') bytes += COST.number;
    else if (typeof v !== 'object' || v === null) bytes += COST.other;
    else {
      if (next.depth > maxDepth) return undefined;
      const depth = next.depth + 1;
      if (Array.isArray(v)) {
        bytes += COST.array + COST.perElement * v.length;
        for (const item of v as unknown[]) stack.push({ value: item, depth });
      } else {
        bytes += COST.object;
        for (const [key, item] of Object.entries(v)) {
          bytes += COST.perKey + stringBytes(key);
          stack.push({ value: item, depth });
        }
      }
    }
  }
  return bytes;
}
