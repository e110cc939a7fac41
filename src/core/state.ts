import type { AnyMachineSnapshot, StateValue } from 'xstate';
import { requireArg } from './options.ts';

/**
 * Flattens a state value into dotted leaf paths: `'executing'`,
 * `{ EXECUTION: 'working' }` → `'EXECUTION.working'`; parallel regions are
 * joined with `,` in document order of the value's keys.
 */
export function stateLabel(value: StateValue | AnyMachineSnapshot): string {
  requireArg(
    'stateLabel',
    'value',
    typeof value === 'string' || (typeof value === 'object' && value !== null),
    'a state value or a snapshot',
  );
  const v: StateValue =
    typeof value === 'object' && value !== null && 'value' in value && 'status' in value
      ? (value as AnyMachineSnapshot).value
      : value;
  return pathsOf(v).join(',');
}

/** Dotted leaf paths of a state value. */
export function leafPaths(value: StateValue): string[] {
  requireArg(
    'leafPaths',
    'value',
    typeof value === 'string' || (typeof value === 'object' && value !== null),
    'a state value',
  );
  return pathsOf(value);
}

function pathsOf(value: StateValue): string[] {
  if (typeof value === 'string') return [value];
  const out: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    if (child === undefined) continue;
    const sub = pathsOf(child);
    if (sub.length === 0) out.push(key);
    else for (const s of sub) out.push(`${key}.${s}`);
  }
  return out;
}
