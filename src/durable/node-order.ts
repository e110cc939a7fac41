/**
 * The order of a snapshot's active atomic states, kept across a restore.
 *
 * XState picks eventless (`always`) transitions by walking the snapshot's active
 * atomic states in the order they were entered (`snapshot._nodes`), and the first
 * one found wins a conflict. A live actor keeps that order from step to step;
 * `restoreSnapshot` rebuilds it from the state value, region by region. The two
 * differ once a parallel state's regions were entered again in another order: a
 * transition out of one region into another re-enters both, and the region whose
 * own child state was entered last comes last. Then two conflicting `always`
 * transitions of two regions resolve one way in the live actor and the other way
 * after a restore (the differential test's seed 41008 found it: a restart moved
 * the durable actor out of the parallel state that plain XState stayed in).
 *
 * The persisted snapshot records the order (`atomic` in the ledger's JSON) only
 * when it is not the state value's; a restore applies it.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';

/** The key of the order in the ledger's JSON (`agentcharts`). */
export const ATOMIC_ORDER_KEY = 'atomic';

interface Node {
  readonly id: string;
  readonly type: string;
  readonly states: Readonly<Record<string, Node>>;
}

const isAtomic = (node: Node): boolean => node.type === 'atomic' || node.type === 'final';

/** The atomic states a restore lists, in its order: the state value's, depth first. */
function valueOrder(node: Node, value: unknown, out: Node[]): void {
  if (typeof value === 'string') {
    const child = node.states[value];
    if (child !== undefined) out.push(child);
    return;
  }
  let any = false;
  for (const key in value as Record<string, unknown>) {
    const child = node.states[key];
    if (child === undefined) continue;
    any = true;
    valueOrder(child, (value as Record<string, unknown>)[key], out);
  }
  if (!any && isAtomic(node)) out.push(node);
}

/**
 * The ids of the snapshot's active atomic states in the order XState walks them,
 * when a restore would walk them in another; undefined otherwise (one active
 * atomic state, or the state value's order).
 */
export function atomicOrder(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
): string[] | undefined {
  const nodes = (snapshot as unknown as { _nodes?: readonly Node[] })._nodes;
  if (nodes === undefined) return undefined;
  let atomic: Node[] | undefined;
  for (const node of nodes) {
    if (!isAtomic(node)) continue;
    (atomic ??= []).push(node);
  }
  if (atomic === undefined || atomic.length < 2) return undefined;
  const restored: Node[] = [];
  valueOrder(machine.root, snapshot.value, restored);
  if (restored.length === atomic.length && restored.every((node, i) => node === atomic[i])) {
    return undefined;
  }
  return atomic.map((node) => node.id);
}

/** The order a persisted snapshot records (see {@link atomicOrder}), if any. */
export function recordedOrder(persisted: unknown, ledgerKey: string): string[] | undefined {
  const ledger = (persisted as Record<string, unknown> | null)?.[ledgerKey] as
    Record<string, unknown> | null | undefined;
  const order = ledger?.[ATOMIC_ORDER_KEY];
  return Array.isArray(order) && order.every((id) => typeof id === 'string') ? order : undefined;
}

/**
 * The restored snapshot with its active atomic states in the recorded order, in
 * the places they hold (the other states stay where the restore put them). An
 * order that names other states than the active ones is ignored.
 */
export function applyAtomicOrder(snapshot: AnyMachineSnapshot, ids: readonly string[]): void {
  const holder = snapshot as unknown as { _nodes?: Node[] };
  const nodes = holder._nodes;
  if (nodes === undefined) return;
  const byId = new Map<string, Node>();
  const places: number[] = [];
  nodes.forEach((node, i) => {
    if (!isAtomic(node)) return;
    byId.set(node.id, node);
    places.push(i);
  });
  if (places.length !== ids.length || ids.some((id) => !byId.has(id))) return;
  const next = [...nodes];
  ids.forEach((id, i) => {
    next[places[i] as number] = byId.get(id) as Node;
  });
  holder._nodes = next;
}
