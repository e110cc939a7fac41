/** What the check says of one property: proven, refuted (with a path where there is one) or unproven. */
import type { CheckPath } from './paths.ts';
import type { StateSpace } from './space.ts';

/**
 * - `proven`: holds on every path of the chart's (projected) state space;
 * - `refuted`: does not hold; `counterexample` is the shortest path that shows it
 *   (none for an unreachable state);
 * - `unproven`: the space is larger than the bound and what was explored neither
 *   proves nor refutes it. Never a pass.
 */
export type PropertyStatus = 'proven' | 'refuted' | 'unproven';

export interface Verdict {
  status: PropertyStatus;
  /** Why, in one line. */
  detail: string;
  /** The shortest path to the violation (refuted). */
  counterexample?: CheckPath | undefined;
  /** A shortest path that shows it (a reachable state's, when proven). */
  witness?: CheckPath | undefined;
}

export function proven(detail: string, witness?: CheckPath): Verdict {
  return { status: 'proven', detail, ...(witness ? { witness } : {}) };
}

export function refuted(detail: string, counterexample?: CheckPath): Verdict {
  return { status: 'refuted', detail, ...(counterexample ? { counterexample } : {}) };
}

/** Neither: the explored part of a space over its bound decides nothing. */
export function unproven(space: StateSpace): Verdict {
  return {
    status: 'unproven',
    detail: `unproven up to ${space.nodes.length} states: none of them refutes it, but the state space is larger`,
  };
}

/** Proven when the space is complete; otherwise unproven up to its bound. */
export function provenIfComplete(space: StateSpace, detail: string): Verdict {
  return space.complete ? proven(detail) : unproven(space);
}
