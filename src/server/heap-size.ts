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

/**
 * The same estimate read off a JSON text before parsing it, and whether it nests
 * deeper than `maxDepth`: one pass over the characters, so a message that would
 * cost twenty times its size in memory, or overflow a stack when written back,
 * is refused without being parsed at all. Strings count their text; every
 * member and element its slot and a possible number. Undefined when too deep.
 */
export function jsonTextHeapBytes(text: string, maxDepth: number): number | undefined {
  let bytes = 0;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i++;
        else if (d === 0x22) break;
      }
      bytes += COST.string + (i - start) * 2;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth + 1) return undefined;
      bytes += c === 0x7b ? COST.object : COST.array + COST.perElement;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x3a /* : */) {
      bytes += COST.perKey;
    } else if (c === 0x2c /* , */) {
      bytes += COST.perElement + COST.number;
    }
  }
  return bytes;
}
