/**
 * Stored state labels (`stateLabel`: dotted leaf paths joined by `,`) as people
 * read them, and every label a chart's states can store. One format everywhere
 * (status, the stream's `status`, metrics, the dashboard): a compound state reads
 * as its active leaf (`active.executing` → `executing`); a parallel state keeps
 * its regions, `reviewing(legal: ok, editorial: pending)`.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';

/** What the display needs of a state node, by dotted path. */
export type LabelLookup = (path: string) => { name: string; parallel: boolean } | undefined;

/**
 * The display name of a stored label: document names (`meta.name`, else the key),
 * regions of a parallel state in parentheses, `region: state` each.
 */
export function displayLabel(label: string, lookup: LabelLookup): string {
  const leaves = label.split(',').map((region) => region.trim().split('.'));
  return show(leaves, '', lookup).join(', ');
}

/** The active descendants of `prefix` (leaf paths relative to it) as display parts. */
function show(tails: string[][], prefix: string, lookup: LabelLookup): string[] {
  const groups = new Map<string, string[][]>();
  for (const [head, ...rest] of tails) {
    if (head === undefined || head === '') continue;
    const list = groups.get(head) ?? [];
    if (rest.length > 0) list.push(rest);
    groups.set(head, list);
  }
  const several = groups.size > 1;
  return [...groups].map(([key, rest]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    const node = lookup(path);
    const name = node?.name ?? key;
    let shown: string;
    if (rest.length === 0) shown = name;
    else if (node?.parallel) shown = `${name}(${show(rest, path, lookup).join(', ')})`;
    else shown = show(rest, path, lookup).join(', ');
    // Siblings active at once are regions: each says which.
    return several && rest.length > 0 ? `${name}: ${shown}` : shown;
  });
}

/**
 * Every label a machine's states can store, in the order `stateLabel` writes
 * them (document order of regions): one per atomic state, and the combinations
 * of regions' states for a parallel one. At most `limit` (a chart whose parallel
 * regions multiply past it is cut short).
 */
export function allLabels(machine: AnyStateMachine, limit = 10_000): string[] {
  const configurations = (node: AnyStateNode, path: string): string[][] => {
    const children = Object.entries(node.states).filter(([, child]) => child.type !== 'history');
    if (children.length === 0) return path ? [[path]] : [];
    const sub = children.map(([key, child]) =>
      configurations(child, path ? `${path}.${key}` : key),
    );
    if (node.type !== 'parallel') return sub.flat().slice(0, limit);
    let product: string[][] = [[]];
    for (const region of sub) {
      product = product.flatMap((prefix) => region.map((leaves) => [...prefix, ...leaves]));
      product = product.slice(0, limit);
    }
    return product;
  };
  return configurations(machine.root, '').map((leaves) => leaves.join(','));
}
