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

/**
 * The state value a stored label stands for: `drafting.writing` →
 * `{ drafting: 'writing' }`, `reviewing.legal.ok,reviewing.editorial.pending` →
 * `{ reviewing: { legal: 'ok', editorial: 'pending' } }` (an atomic region is `{}`).
 */
export function labelValue(label: string): StateValue {
  requireArg('labelValue', 'label', typeof label === 'string', 'a state label');
  type Tree = Map<string, Tree>;
  const root: Tree = new Map();
  for (const leaf of label.split(',')) {
    let node = root;
    for (const key of leaf.trim().split('.')) {
      if (key === '') continue;
      const next = node.get(key) ?? new Map<string, Tree>();
      node.set(key, next);
      node = next;
    }
  }
  const value = (tree: Tree, top: boolean): StateValue => {
    const [only] = tree;
    // One active child that is a leaf: the compound state's value is its name.
    if (tree.size === 1 && only && only[1].size === 0 && !top) return only[0];
    return Object.fromEntries([...tree].map(([key, sub]) => [key, value(sub, false)]));
  };
  const [only] = root;
  if (root.size === 1 && only && only[1].size === 0) return only[0];
  return value(root, true);
}
