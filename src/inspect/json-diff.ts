/** The changes between two JSON values, path by path (what time travel shows of a context). */

/** One difference: a dotted path (`approval.reason`, `items.2`) and its values. */
export interface JsonChange {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The changes from `before` to `after`: objects and arrays compared key by key,
 * anything else by value; at most `limit` changes (the first found).
 *
 * @example
 * diffJson({ attempts: 1 }, { attempts: 2, error: 'x' });
 * // [{ path: 'attempts', kind: 'changed', before: 1, after: 2 },
 * //  { path: 'error', kind: 'added', after: 'x' }]
 */
export function diffJson(before: unknown, after: unknown, limit = 200): JsonChange[] {
  const out: JsonChange[] = [];
  const walk = (a: unknown, b: unknown, path: string, depth: number): void => {
    if (out.length >= limit) return;
    if (isObject(a) && isObject(b) && Array.isArray(a) === Array.isArray(b) && depth < 32) {
      const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
      for (const key of keys) {
        const sub = path === '' ? key : `${path}.${key}`;
        if (!(key in b)) out.push({ path: sub, kind: 'removed', before: a[key] });
        else if (!(key in a)) out.push({ path: sub, kind: 'added', after: b[key] });
        else walk(a[key], b[key], sub, depth + 1);
        if (out.length >= limit) return;
      }
      return;
    }
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push({ path: path || '(context)', kind: 'changed', before: a, after: b });
    }
  };
  walk(before, after, '', 0);
  return out;
}
