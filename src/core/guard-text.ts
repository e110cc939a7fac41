/** How a guard reads in a diagram or an explanation: its name, parameters and parts. */

type GuardLike =
  | string
  | { type: string }
  | (((...args: never[]) => unknown) & { guards?: unknown[]; stateValue?: unknown });

/** `isReady`, `isStatus(running)`, `and(isReady, not(isLocked))`, `in(#agent.busy)`. */
export function guardText(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as GuardLike & { name: string };
    if (typeof g === 'function' && Array.isArray(g.guards)) {
      return `${g.name}(${g.guards.map(guardText).join(', ')})`;
    }
    if (typeof g === 'function' && g.stateValue !== undefined) {
      return `in(${typeof g.stateValue === 'string' ? g.stateValue : JSON.stringify(g.stateValue)})`;
    }
    return g.name || 'guard';
  }
  if (guard && typeof guard === 'object' && 'type' in guard) {
    const { type, params } = guard as { type: unknown; params?: unknown };
    return `${String(type)}${paramsText(params)}`;
  }
  return 'guard';
}

/** `(running)` for one parameter, `(min: 1, max: 3)` for several, `(…)` when computed. */
function paramsText(params: unknown): string {
  if (params === undefined) return '';
  if (typeof params === 'function') return '(…)';
  const value = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
  if (params === null || typeof params !== 'object') return `(${value(params)})`;
  const entries = Object.entries(params);
  if (entries.length === 1) return `(${value(entries[0]?.[1])})`;
  return `(${entries.map(([k, v]) => `${k}: ${value(v)}`).join(', ')})`;
}
