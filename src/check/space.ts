/**
 * The state space of a chart, explored breadth first up to a bound on the number
 * of states: every sample event the chart accepts in each state (guards
 * evaluated by XState), and every timer (`after`) and invoked actor's outcome the
 * runtime would deliver there. A state is identified by the chart's projection
 * (`serializeState`; default value + context + history). Unlike the test
 * planner's traversal, a space over the bound is kept, marked incomplete, so that
 * what was found is still a proof of reachability or a counterexample.
 */
import {
  getNextTransitions,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';
import { chartMeta, isFinishedClass } from '../core/meta.ts';
import { leafPaths, stateLabel } from '../core/state.ts';
import {
  delayedEvents,
  eventLabel,
  ExplorationError,
  serializeSnapshotIdentity,
} from '../testing/explore.ts';
import { stepperFor } from './stepper.ts';

/** A state of the space: one identity of the projection. */
export interface SpaceNode {
  readonly id: number;
  readonly key: string;
  readonly snapshot: AnyMachineSnapshot;
  readonly label: string;
  /** Dotted paths of every active state node, ancestors included. */
  readonly active: ReadonlySet<string>;
  /** Events from the initial state along the breadth-first tree (a shortest path). */
  readonly depth: number;
  readonly parent: SpaceEdge | undefined;
  /** The transitions taken from it (all of them when `expanded`). */
  readonly out: SpaceEdge[];
  expanded: boolean;
  /** Finished: XState-final, or its state's class is completed, failed or terminated. */
  readonly finished: boolean;
}

/** A transition of the space. */
export interface SpaceEdge {
  readonly from: SpaceNode;
  /** Set once, when the edge is made (a new state's first edge is also its parent). */
  to: SpaceNode;
  /** The event delivered: a sample, a timer (`xstate.after.*`) or an invoke outcome. */
  readonly event: EventObject;
  /** The path label of the event: its type, or `after:<delay>`. */
  readonly label: string;
  /** A timer or an invoked actor's outcome: delivered by the runtime, not sent. */
  readonly delayed: boolean;
  readonly timer: boolean;
  /** The events the chart raised and took inside the macrostep. */
  readonly raised: readonly EventObject[];
  /** Every name the transition answers to: its type, label, the timer's document name, raised types. */
  readonly names: ReadonlySet<string>;
  /** State paths active only in passing, inside the macrostep. */
  readonly passing: ReadonlySet<string>;
}

export interface StateSpace {
  readonly machine: AnyStateMachine;
  /** In breadth-first order; `nodes[0]` is the initial state. */
  readonly nodes: readonly SpaceNode[];
  readonly edges: number;
  /** Every state was expanded: the space is the whole reachable space of the projection. */
  readonly complete: boolean;
  /** The bound on the number of states. */
  readonly limit: number;
  /** Event types the chart sends its parent on some transition (`sendParent`). */
  readonly toParent: ReadonlySet<string>;
  /** States active only in passing while the initial state was entered. */
  readonly initialPassing: ReadonlySet<string>;
}

export interface SpaceOptions {
  /** Sample events (invalid ones already left out). */
  samples: readonly EventObject[];
  /** Samples of invoked actors' outcomes by event type (`xstate.done.actor.<id>`). */
  outcomes: ReadonlyMap<string, readonly EventObject[]>;
  input: unknown;
  serializeState?: ((snapshot: AnyMachineSnapshot) => string) | undefined;
  /** Largest number of states. */
  limit: number;
}

/** Dotted paths of every active state node of a snapshot, ancestors included. */
export function activePaths(snapshot: AnyMachineSnapshot): Set<string> {
  const out = new Set<string>();
  for (const leaf of leafPaths(snapshot.value)) {
    const parts = leaf.split('.');
    for (let i = 1; i <= parts.length; i++) out.add(parts.slice(0, i).join('.'));
  }
  return out;
}

/** The path labels from the initial state to `node` (for messages). */
export function labelsTo(node: SpaceNode): string[] {
  const out: string[] = [];
  for (let e = node.parent; e; e = e.from.parent) out.unshift(e.label);
  return out;
}

/** Explores `machine` breadth first, up to `options.limit` states. */
export function exploreSpace(machine: AnyStateMachine, options: SpaceOptions): StateSpace {
  const meta = chartMeta(machine);
  const project = options.serializeState ?? serializeSnapshotIdentity;
  /** Throws what a step of the exploration threw as an ExplorationError naming where. */
  const blame = (node: SpaceNode | undefined, eventType: string, error: unknown): never => {
    if (error instanceof ExplorationError) throw error;
    throw new ExplorationError(
      {
        machineId: machine.id,
        state: node?.label ?? '(initial)',
        eventType,
        path: node ? labelsTo(node) : [],
      },
      error,
    );
  };
  const serialize = (snapshot: AnyMachineSnapshot, from: SpaceNode | undefined, type: string) => {
    try {
      return project(snapshot);
    } catch (error) {
      // The projection threw on the state `type` led to from `from`.
      throw new ExplorationError(
        {
          machineId: machine.id,
          state: stateLabel(snapshot.value),
          eventType: 'serializeState',
          path: from ? [...labelsTo(from), eventLabel(type)] : [],
        },
        error,
      );
    }
  };
  const stepper = stepperFor(machine);
  const nodes: SpaceNode[] = [];
  const byKey = new Map<string, SpaceNode>();
  const toParent = new Set<string>();
  let edges = 0;

  const nodeFor = (
    snapshot: AnyMachineSnapshot,
    key: string,
    parent: SpaceEdge | undefined,
  ): SpaceNode => {
    const label = stateLabel(snapshot.value);
    const node: SpaceNode = {
      id: nodes.length,
      key,
      snapshot,
      label,
      active: activePaths(snapshot),
      depth: parent ? parent.from.depth + 1 : 0,
      parent,
      out: [],
      expanded: false,
      finished: snapshot.status === 'done' || isFinishedClass(meta.classify(label)),
    };
    nodes.push(node);
    byKey.set(node.key, node);
    return node;
  };

  let first;
  try {
    first = stepper.initial(options.input);
  } catch (error) {
    return blame(undefined, 'xstate.init', error);
  }
  nodeFor(first.snapshot, serialize(first.snapshot, undefined, 'xstate.init'), undefined);
  const initialPassing = new Set<string>();
  for (const s of first.passing) for (const p of activePaths(s)) initialPassing.add(p);
  for (const t of first.toParent) toParent.add(t);

  let complete = true;
  explore: for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i] as SpaceNode;
    const snapshot = node.snapshot;
    if (snapshot.status !== 'active') {
      node.expanded = true;
      continue;
    }
    // Only the samples of a type some active state handles are tried (guards decide the rest).
    const handled = new Set(getNextTransitions(snapshot).map((t) => t.eventType));
    const wildcard = [...handled].some((t) => t.includes('*'));
    for (const event of [...options.samples, ...delayedEvents(snapshot, options.outcomes)]) {
      if (!wildcard && !handled.has(event.type)) continue;
      let step;
      try {
        if (!snapshot.can(event)) continue;
        step = stepper.next(snapshot, event);
      } catch (error) {
        return blame(node, event.type, error);
      }
      for (const t of step.toParent) toParent.add(t);
      const key = serialize(step.snapshot, node, event.type);
      const timer = event.type.startsWith('xstate.after.');
      const label = eventLabel(event.type);
      const names = new Set<string>([event.type, label]);
      if (timer) {
        const named = meta.timerEvent(snapshot, event);
        if (named) names.add(named.name);
      }
      for (const r of step.raised) names.add(r.type);
      const passing = new Set<string>();
      for (const s of step.passing) for (const p of activePaths(s)) passing.add(p);
      const target = byKey.get(key);
      if (!target) {
        if (nodes.length >= options.limit) {
          complete = false;
          break explore;
        }
      }
      const edge: SpaceEdge = {
        from: node,
        to: node,
        event,
        label,
        delayed: event.type.startsWith('xstate.'),
        timer,
        raised: step.raised,
        names,
        passing,
      };
      edge.to = target ?? nodeFor(step.snapshot, key, edge);
      node.out.push(edge);
      edges++;
    }
    node.expanded = true;
  }
  return { machine, nodes, edges, complete, limit: options.limit, toParent, initialPassing };
}
