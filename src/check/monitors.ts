/**
 * The properties about the events along a path: which events may enter a state
 * (`only`), which must come first (`before`), and how often one may happen
 * (`bounded`). Each is a monitor run beside the breadth-first search of the
 * space, so the path it rejects first is a shortest counterexample.
 */
import type {
  BeforeProperty,
  BoundedProperty,
  OnlyProperty,
  PropertyNames,
} from '../core/properties.ts';
import { patternText, PropertyDefinitionError, propertyTitle } from '../core/properties.ts';
import { anyOf, edgesTo, findViolation, matcher, pathOf } from './paths.ts';
import type { SpaceEdge, StateSpace } from './space.ts';
import { provenIfComplete, refuted, type Verdict } from './verdict.ts';

/** Whether an edge enters `to` (active after it, or in passing, and not before it). */
function enters(edge: SpaceEdge, to: string): boolean {
  if (to === '*') return edge.to.label !== edge.from.label || edge.passing.size > 0;
  return (edge.to.active.has(to) || edge.passing.has(to)) && !edge.from.active.has(to);
}

/** `only(from, to, { via })`: the shortest path whose last transition enters `to` from `from` by another event. */
export function checkOnly(
  space: StateSpace,
  property: OnlyProperty,
  names: PropertyNames,
): Verdict {
  const fromList = typeof property.from === 'string' ? [property.from] : property.from;
  const from = fromList.includes('*') ? undefined : fromList.map((s) => names.state(s));
  const to = property.to === '*' ? '*' : names.state(property.to);
  const allowed = anyOf(property.via);
  // Nodes come in breadth-first order, so the first offending edge ends a shortest path.
  for (const node of space.nodes) {
    if (from && !from.some((s) => node.active.has(s))) continue;
    for (const edge of node.out) {
      if (!enters(edge, to) || allowed(edge)) continue;
      return refuted(
        `"${edge.to.label}" is entered from "${node.label}" by ${edge.label}, not by ${property.via
          .map(patternText)
          .join(' or ')}`,
        pathOf(space, [...edgesTo(node), edge]),
      );
    }
  }
  return provenIfComplete(space, 'every such transition is taken by one of the events named');
}

/** `before(first, then)`: the shortest path that takes `then` with no `first` since the start or the last reset. */
export function checkBefore(space: StateSpace, property: BeforeProperty): Verdict {
  const first = matcher(property.first);
  const then = matcher(property.then);
  const reset = anyOf(property.resetBy);
  const violation = findViolation<boolean>(space, false, (seen, edge) => {
    if (then(edge) && !seen) return 'violation';
    let next = reset(edge) ? false : seen;
    if (first(edge)) next = true;
    return next;
  });
  if (violation) {
    const last = violation.at(-1) as SpaceEdge;
    return refuted(
      `${last.label} is taken in "${last.from.label}" before any ${patternText(property.first)}`,
      pathOf(space, violation),
    );
  }
  return provenIfComplete(space, `no path takes ${patternText(property.then)} first`);
}

/** The bound of a `bounded` property: its number, or the initial context's field. */
function boundOf(space: StateSpace, property: BoundedProperty): number {
  if (typeof property.max === 'number') return property.max;
  const field = property.max.context;
  const context = (space.nodes[0]?.snapshot.context ?? {}) as Record<string, unknown>;
  const value = Object.hasOwn(context, field) ? context[field] : undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new PropertyDefinitionError({
      machineId: space.machine.id,
      property: propertyTitle(property),
      problem: `the initial context has no non-negative integer field "${field}"`,
    });
  }
  return value;
}

/** `bounded(event, max)`: the shortest path that takes `event` `max + 1` times (since the last reset). */
export function checkBounded(space: StateSpace, property: BoundedProperty): Verdict {
  const max = boundOf(space, property);
  const counted = matcher(property.event);
  const reset = anyOf(property.resetBy);
  const violation = findViolation<number>(space, 0, (count, edge) => {
    const next = counted(edge) ? count + 1 : count;
    if (next > max) return 'violation';
    return reset(edge) ? 0 : next;
  });
  const event = patternText(property.event);
  if (violation) {
    return refuted(
      `${event} is taken ${max + 1} times, more than ${max}`,
      pathOf(space, violation),
    );
  }
  return provenIfComplete(space, `no path takes ${event} more than ${max} times`);
}
