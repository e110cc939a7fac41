/**
 * Paths through a state space: a counterexample or a witness as the events that
 * drive the chart there (the form `agentcharts paths` prints), event patterns
 * matched against a transition, and the breadth-first search over the space
 * paired with a property's monitor (a flag, a counter) that finds the shortest
 * path a monitor rejects.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EventObject } from 'xstate';
import type { EventPatternLike } from '../core/properties.ts';
import type { PlannedStep } from '../testing/plan.ts';
import type { SpaceEdge, SpaceNode, StateSpace } from './space.ts';

/** A path from the initial state: its events, and the state label after each. */
export interface CheckPath {
  /** The events in order, as `paths` gives them (`label` is `START` or `after:<delay>`). */
  steps: PlannedStep[];
  /** State labels: the initial state's, then the one after each step. */
  states: string[];
}

/** The edges of the breadth-first tree from the initial state to `node`. */
export function edgesTo(node: SpaceNode): SpaceEdge[] {
  const out: SpaceEdge[] = [];
  for (let e = node.parent; e; e = e.from.parent) out.unshift(e);
  return out;
}

/** The path of a run of edges from the initial state. */
export function pathOf(space: StateSpace, edges: readonly SpaceEdge[]): CheckPath {
  const initial = space.nodes[0] as SpaceNode;
  return {
    steps: edges.map((e) => ({ event: e.event, label: e.label, delayed: e.delayed })),
    states: [initial.label, ...edges.map((e) => e.to.label)],
  };
}

/** Whether an edge answers to an event pattern: a name, or `{ type, …fields }` on its event or a raised one. */
export type EdgeMatcher = (edge: SpaceEdge) => boolean;

export function matcher(pattern: EventPatternLike): EdgeMatcher {
  if (typeof pattern === 'string') return (edge) => edge.names.has(pattern);
  const fields = Object.entries(pattern).filter(([k]) => k !== 'type');
  const fits = (event: EventObject) =>
    event.type === pattern.type &&
    fields.every(([k, v]) => isDeepStrictEqual((event as Record<string, unknown>)[k], v));
  return (edge) => fits(edge.event) || edge.raised.some(fits);
}

/** Whether any of the patterns matches. */
export function anyOf(patterns: readonly EventPatternLike[] | undefined): EdgeMatcher {
  const matchers = (patterns ?? []).map(matcher);
  return (edge) => matchers.some((m) => m(edge));
}

/**
 * Breadth-first search over (state, monitor) pairs: `step` gives the monitor after
 * an edge, or `'violation'`. Returns the shortest run of edges that ends in a
 * violation, or undefined when the monitor accepts every path of the space.
 */
export function findViolation<M extends string | number | boolean>(
  space: StateSpace,
  start: M,
  step: (monitor: M, edge: SpaceEdge) => M | 'violation',
): SpaceEdge[] | undefined {
  interface Visit {
    node: SpaceNode;
    monitor: M;
    via: SpaceEdge | undefined;
    previous: Visit | undefined;
  }
  const initial = space.nodes[0] as SpaceNode;
  const seen = new Set<string>([`${initial.id}|${String(start)}`]);
  const queue: Visit[] = [{ node: initial, monitor: start, via: undefined, previous: undefined }];
  const trail = (visit: Visit | undefined, last: SpaceEdge): SpaceEdge[] => {
    const out = [last];
    for (let v = visit; v?.via; v = v.previous) out.unshift(v.via);
    return out;
  };
  for (let i = 0; i < queue.length; i++) {
    const visit = queue[i] as Visit;
    for (const edge of visit.node.out) {
      const next = step(visit.monitor, edge);
      if (next === 'violation') return trail(visit, edge);
      const key = `${edge.to.id}|${String(next)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      queue.push({ node: edge.to, monitor: next, via: edge, previous: visit });
    }
  }
  return undefined;
}
