/**
 * The properties about the shape of the state space: a state is reachable, no
 * state is a dead end, every state can still finish, and every waiting state is
 * left by its timers alone.
 */
import type {
  NoDeadEndProperty,
  PropertyNames,
  ReachableProperty,
  WaitsHaveTimeoutProperty,
} from '../core/properties.ts';
import { edgesTo, pathOf } from './paths.ts';
import type { SpaceEdge, SpaceNode, StateSpace } from './space.ts';
import { proven, provenIfComplete, refuted, unproven, type Verdict } from './verdict.ts';

/** The path to a node, along the breadth-first tree. */
const pathTo = (space: StateSpace, node: SpaceNode) => pathOf(space, edgesTo(node));

/** `reachable(state)`: the shortest path to a state the machine rests in, or passes through. */
export function checkReachable(
  space: StateSpace,
  property: ReachableProperty,
  names: PropertyNames,
): Verdict {
  const state = names.state(property.state);
  if (space.initialPassing.has(state)) {
    return proven(`"${state}" is passed through on entering the initial state`, pathOf(space, []));
  }
  let best: SpaceEdge[] | undefined;
  for (const node of space.nodes) {
    if (best && node.depth >= best.length) break;
    if (node.active.has(state)) best = edgesTo(node);
    for (const edge of node.out) {
      if (edge.passing.has(state) && (!best || node.depth + 1 < best.length)) {
        best = [...edgesTo(node), edge];
      }
    }
  }
  if (best)
    return proven(
      `reached by ${best.length} event${best.length === 1 ? '' : 's'}`,
      pathOf(space, best),
    );
  return space.complete
    ? refuted(`no path reaches "${state}" (all ${space.nodes.length} states explored)`)
    : unproven(space);
}

/**
 * Nodes that can leave their configuration (state label), by some event or timer,
 * perhaps after transitions that only change context. Unexpanded nodes count as
 * escaping: nothing is known of them.
 */
function escaping(space: StateSpace): Set<SpaceNode> {
  const escapes = new Set<SpaceNode>();
  const incoming = new Map<SpaceNode, SpaceNode[]>();
  for (const node of space.nodes) {
    if (!node.expanded) escapes.add(node);
    for (const edge of node.out) {
      if (edge.to.label !== node.label) escapes.add(node);
      const list = incoming.get(edge.to) ?? [];
      list.push(node);
      incoming.set(edge.to, list);
    }
  }
  const pending = [...escapes];
  while (pending.length > 0) {
    const node = pending.pop() as SpaceNode;
    for (const from of incoming.get(node) ?? []) {
      if (!escapes.has(from) && from.label === node.label) {
        escapes.add(from);
        pending.push(from);
      }
    }
  }
  return escapes;
}

/** `noDeadEnd()`: the shortest path to a state that is not finished and cannot be left. */
export function checkNoDeadEnd(
  space: StateSpace,
  property: NoDeadEndProperty,
  names: PropertyNames,
): Verdict {
  const except = (property.except ?? []).map((s) => names.state(s));
  const escapes = escaping(space);
  for (const node of space.nodes) {
    if (node.finished || escapes.has(node)) continue;
    if (except.some((s) => node.active.has(s))) continue;
    const meta = node.snapshot.getMeta() as Record<string, { deadEnd?: unknown } | undefined>;
    if (Object.values(meta).some((m) => m?.deadEnd === true)) continue;
    const why =
      node.snapshot.status === 'active'
        ? 'no event or timer leads out of it'
        : `the actor stopped there with status "${node.snapshot.status}"`;
    return refuted(`"${node.label}" is a dead end: ${why}`, pathTo(space, node));
  }
  return provenIfComplete(space, 'every state that is not finished has a way out');
}

/** `terminates()`: the shortest path to a state from which no finished state can be reached. */
export function checkTerminates(space: StateSpace): Verdict {
  const incoming = new Map<SpaceNode, SpaceNode[]>();
  for (const node of space.nodes) {
    for (const edge of node.out) {
      const list = incoming.get(edge.to) ?? [];
      list.push(node);
      incoming.set(edge.to, list);
    }
  }
  const backwards = (from: Iterable<SpaceNode>): Set<SpaceNode> => {
    const seen = new Set(from);
    const pending = [...seen];
    while (pending.length > 0) {
      for (const prev of incoming.get(pending.pop() as SpaceNode) ?? []) {
        if (!seen.has(prev)) {
          seen.add(prev);
          pending.push(prev);
        }
      }
    }
    return seen;
  };
  const finishes = backwards(space.nodes.filter((n) => n.finished));
  // Nodes that reach an unexplored one might finish beyond the bound.
  const open = backwards(space.nodes.filter((n) => !n.expanded));
  for (const node of space.nodes) {
    if (finishes.has(node) || open.has(node)) continue;
    return refuted(`from "${node.label}" no finished state can be reached`, pathTo(space, node));
  }
  return provenIfComplete(space, 'every state can still reach a finished state');
}

/**
 * `waitsHaveTimeout(states)`: the shortest path to a configuration in one of the
 * states from which no run of timers (no event from outside) leaves it.
 */
export function checkWaitsHaveTimeout(
  space: StateSpace,
  property: WaitsHaveTimeoutProperty,
  names: PropertyNames,
): Verdict {
  const states = property.states.map((s) => names.state(s));
  let unknown = false;
  for (const node of space.nodes) {
    if (node.snapshot.status !== 'active') continue;
    for (const state of states) {
      if (!node.active.has(state)) continue;
      const left = leftByTimers(node, state);
      if (left === undefined) unknown = true;
      else if (!left) {
        return refuted(
          `in "${node.label}" no timer leaves "${state}": it waits for an event from outside only`,
          pathTo(space, node),
        );
      }
    }
  }
  return unknown
    ? unproven(space)
    : provenIfComplete(space, `timers alone leave ${states.join(', ')}`);
}

/** Whether timers alone lead from `start` out of `state` (undefined: an unexplored state was met). */
function leftByTimers(start: SpaceNode, state: string): boolean | undefined {
  const seen = new Set([start]);
  const pending = [start];
  let unknown = false;
  while (pending.length > 0) {
    const node = pending.pop() as SpaceNode;
    if (!node.expanded) unknown = true;
    for (const edge of node.out) {
      if (!edge.timer) continue;
      if (!edge.to.active.has(state)) return true;
      if (!seen.has(edge.to)) {
        seen.add(edge.to);
        pending.push(edge.to);
      }
    }
  }
  return unknown ? undefined : false;
}
