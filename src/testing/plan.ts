import {
  getInitialMicrosteps,
  getMicrosteps,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type EventObject,
} from 'xstate';
import { InvalidEventError } from '../core/errors.ts';
import { getEventSchemas, getMachineEventTypes, validateEvent } from '../strict/events.ts';
import { leafPaths, stateLabel } from '../core/state.ts';
import {
  eventLabel,
  exploreMachine,
  serializeSnapshotIdentity,
  type ExploreOptions,
} from './explore.ts';
import { EXPECTED, requireArg } from '../core/options.ts';
import type { ChartDefinition } from '../core/chart.ts';
import { traversalArgs } from './traversal-args.ts';
import { invokeOutcomeOf, outcomeSampleProblem, unsampledOutcomes } from './invoke-samples.ts';

/**
 * Options of {@link planTransitionTests}: the exploration options plus the
 * states the machine means to leave unreached or to stop in.
 */
export interface PlanOptions<TLogic extends AnyStateMachine> extends Omit<
  ExploreOptions<TLogic>,
  'includeDelayed'
> {
  /**
   * Non-final states allowed to have no way out, as state labels (`stalled`,
   * `EXECUTION.blocked`) or dotted state node paths (`EXECUTION`) that are active
   * in them. A state node can say the same with `meta: { deadEnd: true }`.
   */
  intentionalDeadEnds?: readonly string[];
  /**
   * Declared state nodes allowed to be unreached, as dotted paths. A state node
   * (or an ancestor) can say the same with `meta: { unreachable: true }`.
   */
  intentionalUnreachable?: readonly string[];
}

/** One event of a path: an event sample, or a delayed (`after`) event. */
export interface PlannedStep {
  event: EventObject;
  /** `START`, or `after:<delay>` for a delayed event. */
  label: string;
  delayed: boolean;
}

/** A reachable state and the shortest path that reaches it from the initial state. */
export interface PlannedState {
  /** Identity of the state in the traversal (`serializeState`; default: the state value with its history values). */
  key: string;
  label: string;
  /** Events from the initial state, shortest first found by breadth-first search. */
  path: PlannedStep[];
  /** The machine has reached a top-level final state. */
  final: boolean;
  snapshot: AnyMachineSnapshot;
}

/** A legal transition: `event` sent in state `from` leads to state `to`. */
export interface PlannedTransition {
  from: string;
  fromLabel: string;
  step: PlannedStep;
  to: string;
  toLabel: string;
}

/** An illegal pair: no sample of `eventType` is accepted in state `from`. */
export interface PlannedRejection {
  from: string;
  fromLabel: string;
  eventType: string;
  samples: EventObject[];
}

/** Something the static checks found wrong with the machine or its event catalog. */
export interface PlanProblem {
  kind: 'unreachable' | 'dead-end' | 'missing-sample' | 'invalid-sample';
  /** State node path, state label or event type the problem is about. */
  subject: string;
  message: string;
}

/** What the generated tests cover. */
export interface Coverage {
  /** Distinct state configurations (state labels) reached. */
  states: number;
  /** Legal transitions taken: (reachable state, enabled event sample) pairs, delayed events included. */
  legal: number;
  /** Illegal (reachable state, event type) pairs: no sample of the type is accepted there. */
  illegal: number;
  /** Shortest paths generated: one per reachable state identity (value, context and history by default). */
  paths: number;
  /** Declared atomic and final state nodes, and how many of them some path reaches (resting or in passing). */
  stateNodes: { declared: number; reached: number };
}

/** The tests {@link planTransitionTests} derives from a machine; pure data. */
export interface TransitionPlan {
  machineId: string;
  /** Every event type with samples, sorted. */
  eventTypes: string[];
  states: PlannedState[];
  transitions: PlannedTransition[];
  illegal: PlannedRejection[];
  problems: PlanProblem[];
  /** Dotted paths of declared atomic/final state nodes that no path reaches, marked ones excluded. */
  unreachable: string[];
  coverage: Coverage;
}

/** Value, context and history: the default identity (see explore.ts). */
export const serializeWithHistory = serializeSnapshotIdentity;

/** Events the runtime delivers (a timer, an invoked actor settling), never a caller. */
function isDelayedType(type: string): boolean {
  return (
    type.startsWith('xstate.after.') ||
    type.startsWith('xstate.done.actor.') ||
    type.startsWith('xstate.error.actor.')
  );
}

function toStep(event: EventObject): PlannedStep {
  return { event, label: eventLabel(event.type), delayed: isDelayedType(event.type) };
}

/** Every descendant of the root, in document order. */
export function allStateNodes(machine: AnyStateMachine): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  const walk = (node: AnyStateNode): void => {
    for (const child of Object.values(node.states)) {
      out.push(child);
      walk(child);
    }
  };
  walk(machine.root);
  return out;
}

function hasMetaFlag(node: AnyStateNode | undefined, flag: string): boolean {
  for (let n = node; n; n = n.parent) {
    const meta = n.meta as Record<string, unknown> | undefined;
    if (meta && meta[flag] === true) return true;
  }
  return false;
}

/** Dotted paths of every active state node of a snapshot (ancestors included). */
function activePaths(snapshot: AnyMachineSnapshot): Set<string> {
  const out = new Set<string>();
  for (const leaf of leafPaths(snapshot.value)) {
    const parts = leaf.split('.');
    for (let i = 1; i <= parts.length; i++) out.add(parts.slice(0, i).join('.'));
  }
  return out;
}

function isIntentionalDeadEnd(
  snapshot: AnyMachineSnapshot,
  label: string,
  listed: ReadonlySet<string>,
): boolean {
  if (listed.has(label)) return true;
  const paths = activePaths(snapshot);
  for (const p of paths) if (listed.has(p)) return true;
  const meta = snapshot.getMeta() as Record<string, Record<string, unknown> | undefined>;
  return Object.values(meta).some((m) => m?.deadEnd === true);
}

/** Why a sample is not a valid event of the machine, or undefined. */
function sampleProblem(machine: AnyStateMachine, sample: EventObject): string | undefined {
  if (invokeOutcomeOf(sample.type)) return outcomeSampleProblem(machine, sample);
  try {
    validateEvent(machine, sample);
    return undefined;
  } catch (error) {
    if (!(error instanceof InvalidEventError)) throw error;
    return error.message;
  }
}

/**
 * Plans exhaustive transition tests for a machine without running any: explores
 * it with the sample events (built on `xstate/graph`), then lists a shortest path
 * to every reachable state, every legal transition, every illegal
 * (state, event type) pair, and the static problems (unreached state nodes,
 * non-final dead ends, event types without a valid sample). The traversal is
 * bounded by `limit`; `serializeState` projects context onto a finite set.
 *
 * @example
 * const plan = planTransitionTests(machine, { events: { START: [{ type: 'START' }] } });
 * console.log(formatCoverage(machine.id, plan.coverage));
 */
export function planTransitionTests<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic>,
  options?: Partial<PlanOptions<TLogic>>,
): TransitionPlan;
export function planTransitionTests<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: PlanOptions<TLogic>,
): TransitionPlan;
export function planTransitionTests<TLogic extends AnyStateMachine>(
  target: TLogic | ChartDefinition<TLogic>,
  given?: Partial<PlanOptions<TLogic>>,
): TransitionPlan {
  const { machine, options } = traversalArgs<TLogic, PlanOptions<TLogic>>(
    'planTransitionTests',
    target,
    given,
  );
  // Samples and event types. Invalid samples are reported and left out of the traversal.
  const problems: PlanProblem[] = [];
  const samplesByType = new Map<string, EventObject[]>();
  // Invoke outcomes (`xstate.done.actor.<id>`…) are delivered where enabled, never sent.
  const outcomes = new Map<string, EventObject[]>();
  for (const [key, list] of Object.entries(options.events)) {
    const samples = (list ?? []) as readonly EventObject[];
    for (const [i, sample] of samples.entries()) {
      const type = typeof sample === 'object' && sample !== null ? sample.type : undefined;
      if (type !== key) {
        problems.push({
          kind: 'invalid-sample',
          subject: key,
          message: `sample #${i + 1} listed under "${key}" is not an event of type "${key}"`,
        });
        continue;
      }
      const invalid = sampleProblem(machine, sample);
      if (invalid !== undefined) {
        problems.push({
          kind: 'invalid-sample',
          subject: key,
          message: `sample #${i + 1} of "${key}" is not a valid event: ${invalid}`,
        });
        continue;
      }
      const byType = invokeOutcomeOf(key) ? outcomes : samplesByType;
      byType.set(key, [...(byType.get(key) ?? []), sample]);
    }
  }
  for (const type of unsampledOutcomes(machine, new Set(outcomes.keys()))) {
    problems.push({
      kind: 'missing-sample',
      subject: type,
      message: `the declared output schema of "${type}" gives no sample (a pattern or refinement); give one in the event catalog`,
    });
  }
  const declaredTypes = new Set([
    ...getMachineEventTypes(machine).filter((t) => !t.includes('*')),
    ...Object.keys(getEventSchemas(machine) ?? {}),
  ]);
  for (const type of [...declaredTypes].sort()) {
    if (!samplesByType.has(type)) {
      problems.push({
        kind: 'missing-sample',
        subject: type,
        message: `event type "${type}" has no valid sample in the event catalog`,
      });
    }
  }
  const graph = exploreMachine(machine, {
    ...options,
    events: Object.fromEntries([
      ...samplesByType,
      ...outcomes,
    ]) as unknown as PlanOptions<TLogic>['events'],
    serializeState: options.serializeState ?? serializeWithHistory,
    includeDelayed: true,
  });
  const eventTypes = [...samplesByType.keys()].sort();

  // Shortest paths: breadth-first over the explored edges, in exploration order.
  const outgoing = new Map<string, typeof graph.edges>();
  for (const edge of graph.edges) {
    const list = outgoing.get(edge.from) ?? [];
    list.push(edge);
    outgoing.set(edge.from, list);
  }
  const pathTo = new Map<string, PlannedStep[]>([[graph.initial, []]]);
  const queue = [graph.initial];
  for (let i = 0; i < queue.length; i++) {
    const key = queue[i] as string;
    const base = pathTo.get(key) ?? [];
    for (const edge of outgoing.get(key) ?? []) {
      if (pathTo.has(edge.to)) continue;
      pathTo.set(edge.to, [...base, toStep(edge.event)]);
      queue.push(edge.to);
    }
  }
  const states: PlannedState[] = [];
  for (const key of queue) {
    const snapshot = graph.states.get(key) as AnyMachineSnapshot | undefined;
    if (!snapshot) continue;
    states.push({
      key,
      label: stateLabel(snapshot.value),
      path: pathTo.get(key) ?? [],
      final: snapshot.status === 'done',
      snapshot,
    });
  }

  const transitions: PlannedTransition[] = graph.edges.map((edge) => ({
    from: edge.from,
    fromLabel: edge.fromLabel,
    step: toStep(edge.event),
    to: edge.to,
    toLabel: edge.toLabel,
  }));

  const illegal: PlannedRejection[] = [];
  for (const state of states) {
    const accepted = new Set((outgoing.get(state.key) ?? []).map((e) => e.event.type));
    for (const type of eventTypes) {
      if (accepted.has(type)) continue;
      illegal.push({
        from: state.key,
        fromLabel: state.label,
        eventType: type,
        samples: samplesByType.get(type) ?? [],
      });
    }
  }

  // Dead ends: an active state from which no sequence of transitions leaves its
  // configuration (self-loops that only change context do not count as a way out).
  const escapes = new Set<string>();
  const incoming = new Map<string, string[]>();
  for (const edge of graph.edges) {
    const list = incoming.get(edge.to) ?? [];
    list.push(edge.from);
    incoming.set(edge.to, list);
    if (edge.fromLabel !== edge.toLabel) escapes.add(edge.from);
  }
  const labelOf = new Map(states.map((s) => [s.key, s.label]));
  const pending = [...escapes];
  while (pending.length > 0) {
    const key = pending.pop() as string;
    for (const from of incoming.get(key) ?? []) {
      if (!escapes.has(from) && labelOf.get(from) === labelOf.get(key)) {
        escapes.add(from);
        pending.push(from);
      }
    }
  }
  const listedDeadEnds = new Set(options.intentionalDeadEnds ?? []);
  const deadEndLabels = new Set<string>();
  for (const state of states) {
    if (state.final || escapes.has(state.key)) continue;
    if (isIntentionalDeadEnd(state.snapshot, state.label, listedDeadEnds)) continue;
    deadEndLabels.add(state.label);
  }
  for (const label of [...deadEndLabels].sort()) {
    problems.push({
      kind: 'dead-end',
      subject: label,
      message: `non-final state "${label}" has no way out; mark it with meta: { deadEnd: true } or list it in intentionalDeadEnds if intended`,
    });
  }

  // Unreached state nodes: every declared atomic or final node must be active in some
  // state, resting or in passing (a final child whose parent's onDone fires at once,
  // a state left by an eventless transition): those show up in the microsteps.
  const reachedPaths = new Set<string>();
  const reach = (snapshot: AnyMachineSnapshot): void => {
    for (const p of activePaths(snapshot)) reachedPaths.add(p);
  };
  for (const state of states) reach(state.snapshot);
  const initialSteps = getInitialMicrosteps(machine as AnyStateMachine, options.input) as Array<
    [AnyMachineSnapshot, unknown]
  >;
  for (const [snapshot] of initialSteps) reach(snapshot);
  for (const edge of graph.edges) {
    const from = graph.states.get(edge.from) as AnyMachineSnapshot | undefined;
    if (!from) continue;
    const steps = getMicrosteps(machine as AnyStateMachine, from, edge.event) as Array<
      [AnyMachineSnapshot, unknown]
    >;
    for (const [snapshot] of steps) reach(snapshot);
  }
  const listedUnreachable = new Set(options.intentionalUnreachable ?? []);
  const leaves = allStateNodes(machine).filter((n) => n.type === 'atomic' || n.type === 'final');
  const unreachable: string[] = [];
  for (const node of leaves) {
    const path = node.path.join('.');
    if (reachedPaths.has(path)) continue;
    const listed = node.path.some((_, i) =>
      listedUnreachable.has(node.path.slice(0, i + 1).join('.')),
    );
    if (listed || hasMetaFlag(node, 'unreachable')) continue;
    unreachable.push(path);
    problems.push({
      kind: 'unreachable',
      subject: path,
      message: `declared state "${path}" is not reached by any path, not even in passing; mark it with meta: { unreachable: true } or list it in intentionalUnreachable if intended`,
    });
  }

  const coverage: Coverage = {
    states: new Set(states.map((s) => s.label)).size,
    legal: transitions.length,
    illegal: illegal.length,
    paths: states.length,
    stateNodes: {
      declared: leaves.length,
      reached: leaves.filter((n) => reachedPaths.has(n.path.join('.'))).length,
    },
  };
  return {
    machineId: machine.id,
    eventTypes,
    states,
    transitions,
    illegal,
    problems,
    unreachable,
    coverage,
  };
}

/** One line of coverage: `task-lifecycle: 7 states (7/7 declared), 9 paths, 23 legal transitions, 40 illegal pairs`. */
export function formatCoverage(name: string, coverage: Coverage): string {
  requireArg(
    'formatCoverage',
    'coverage',
    typeof (coverage as { stateNodes?: unknown } | null)?.stateNodes === 'object',
    "a plan's coverage (planTransitionTests(…).coverage)",
  );
  const { declared, reached } = coverage.stateNodes;
  return (
    `${name}: ${coverage.states} states (${reached}/${declared} declared state nodes reached), ` +
    `${coverage.paths} paths, ${coverage.legal} legal transitions, ${coverage.illegal} illegal pairs`
  );
}

/** `START → after:retryBackoff → RETRY`, or `(initial)` for the empty path. */
export function formatPath(path: readonly PlannedStep[]): string {
  requireArg('formatPath', 'path', Array.isArray(path), EXPECTED.array);
  return path.length === 0 ? '(initial)' : path.map((s) => s.label).join(' → ');
}
