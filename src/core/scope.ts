/** Actor scopes: which actor ids a credential may address. */

/**
 * Whether `actorId` is in `patterns` (exact ids, or prefixes ending in `*`);
 * `undefined` patterns cover every actor.
 *
 * @example
 * coversActor(['refund-*'], 'refund-42'); // true
 */
export function coversActor(patterns: readonly string[] | undefined, actorId: string): boolean {
  if (patterns === undefined) return true;
  return patterns.some((pattern) =>
    pattern.endsWith('*') ? actorId.startsWith(pattern.slice(0, -1)) : pattern === actorId,
  );
}

/**
 * Orders ids as every store does (SQLite's BINARY collation, PostgreSQL's `"C"`):
 * by code point, which is UTF-8 byte order.
 */
export function compareIds(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/** One pattern of a scope as a range of ids: those equal to `start`, or starting with it. */
interface IdRange {
  start: string;
  prefix: boolean;
}

/**
 * An id just below `start` in store order, so that "ids after it" begins at
 * `start`: only ids made of its first characters, one code point lower, then
 * U+10FFFF and more lie between (none in practice).
 */
function justBefore(start: string): string {
  const chars = [...start];
  const last = chars.pop()?.codePointAt(0) ?? 0;
  const head = chars.join('');
  return last === 0 ? head : `${head}${String.fromCodePoint(last - 1)}\u{10FFFF}`;
}

/** A page of a scoped listing. */
export interface ScopedPage<Row> {
  rows: Row[];
  /**
   * Where the next page starts (pass it as `after`), or undefined at the end. It
   * is always an id of `rows` or a bound made of the scope's own patterns, never
   * an id outside the scope.
   */
  next: string | undefined;
}

/**
 * One page of the rows a scope covers, in store order, read through `list`
 * (ids strictly after `afterId`, at most `limit`, in store order; the caller's
 * filters applied). The walk jumps from one pattern's range to the next rather
 * than reading the rows between, so a key limited to `refund-*` lists its actors
 * without the rows of others costing reads, and the cursor it is given never
 * names an actor outside its scope (keyset pagination over unfiltered rows would).
 * At most `maxReads` reads (default 40) are made; then the page ends early with a
 * cursor to go on from.
 *
 * @example
 * const page = await listInScope((afterId, limit) => store.listActors({ afterId, limit }),
 *   ['refund-*'], { limit: 50 });
 */
export async function listInScope<Row extends { id: string }>(
  list: (afterId: string | undefined, limit: number) => Promise<readonly Row[]>,
  patterns: readonly string[],
  options: { after?: string | undefined; limit: number; maxReads?: number | undefined },
): Promise<ScopedPage<Row>> {
  const ranges: IdRange[] = patterns
    .map((p) =>
      p.endsWith('*') ? { start: p.slice(0, -1), prefix: true } : { start: p, prefix: false },
    )
    .sort((a, b) => compareIds(a.start, b.start));
  const inRange = (r: IdRange, id: string) => (r.prefix ? id.startsWith(r.start) : id === r.start);
  /** The first range holding ids after `pos` (pos excluded). */
  const nextRange = (pos: string | undefined): IdRange | undefined =>
    pos === undefined
      ? ranges[0]
      : ranges.find((r) => compareIds(r.start, pos) > 0 || (r.prefix && pos.startsWith(r.start)));
  const covers = (id: string) => ranges.some((r) => inRange(r, id));
  const { limit } = options;
  const batch = Math.min(500, limit + 1);
  const rows: Row[] = [];
  let pos = options.after;
  const maxReads = options.maxReads ?? 40;
  for (let reads = 0; reads < maxReads; reads++) {
    const range = nextRange(pos);
    if (!range) return { rows, next: undefined };
    let after = pos;
    if (!(range.prefix && pos !== undefined && pos.startsWith(range.start))) {
      const below = justBefore(range.start);
      if (pos === undefined || compareIds(below, pos) > 0) after = below;
    }
    const read = await list(after, batch);
    for (const row of read) {
      if (!covers(row.id)) continue;
      rows.push(row);
      if (rows.length > limit) {
        rows.length = limit;
        return { rows, next: rows[limit - 1]?.id };
      }
    }
    if (read.length < batch) return { rows, next: undefined };
    pos = read[read.length - 1]?.id;
  }
  // Out of reads: go on from the last row read if it is ours, else from the next range.
  if (pos === undefined || covers(pos)) return { rows, next: pos };
  const range = nextRange(pos);
  return { rows, next: range ? justBefore(range.start) : undefined };
}
