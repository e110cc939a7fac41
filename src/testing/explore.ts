import {
  getNextTransitions,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type EventObject,
  type InputFrom,
  type SnapshotFrom,
} from 'xstate';
import { getAdjacencyMap } from 'xstate/graph';
import { stateLabel } from '../core/state.ts';
import { AgentchartsError } from '../core/errors.ts';
import { invokeOutcomeOf, outcomeEvents } from './invoke-samples.ts';

export type { EventCatalog } from '../core/chart.ts';
import type { ChartDefinition, EventCatalog } from '../core/chart.ts';
import { traversalArgs } from './traversal-args.ts';

export interface ExploreOptions<TLogic extends AnyStateMachine> {
  /** Sample payloads per event type. */
  events: EventCatalog<EventFromLogic<TLogic>>;
  input?: InputFrom<TLogic>;
  /**
   * Identity of a state for the traversal. Defaults to state value + context + history,
   * which is exact but can be infinite when context counts; pass a projection
   * (e.g. state label plus a bounded counter) to keep the graph finite.
   */
  serializeState?: (snapshot: SnapshotFrom<TLogic>) => string;
  /** Largest number of traversal steps before {@link TraversalLimitError}. Default 50,000. */
  limit?: number;
  /** Also take delayed (`after`) transitions as `xstate.after.*` events. Default true. */
  includeDelayed?: boolean;
}

export interface ExploredEdge {
  from: string;
  event: EventObject;
  to: string;
  fromLabel: string;
  toLabel: string;
}

export interface ExploredGraph<TLogic extends AnyStateMachine> {
  /** Serialised state → snapshot. The first entry is the initial snapshot. */
  states: Map<string, SnapshotFrom<TLogic>>;
  /** Every legal transition taken from every explored state. */
  edges: ExploredEdge[];
  /** Every (state, event sample) the machine rejected (no enabled transition). */
  rejected: Array<{ from: string; fromLabel: string; event: EventObject }>;
  initial: string;
}

/** The traversal did not finish within its bound. */
export class TraversalLimitError extends AgentchartsError {
  override name = 'TraversalLimitError';
  readonly machineId: string;
  readonly limit: number;
  constructor(machineId: string, limit: number) {
    super(
      'TRAVERSAL_LIMIT',
      `Traversal of machine "${machineId}" exceeded its bound of ${limit} steps; pass serializeState to project context onto a finite set, or raise limit`,
    );
    this.machineId = machineId;
    this.limit = limit;
  }
}

/** A transition threw while the chart was explored (an action or guard of the chart). */
export class ExplorationError extends AgentchartsError {
  override name = 'ExplorationError';
  readonly machineId: string;
  /** Label of the state the event was sent in (`(initial)` when the initial state threw). */
  readonly state: string;
  readonly eventType: string;
  /** The events, as path labels, that lead from the initial state to {@link state}. */
  readonly path: readonly string[];
  constructor(
    fields: { machineId: string; state: string; eventType: string; path: readonly string[] },
    cause: unknown,
  ) {
    // XState's guard errors put the guard's own message on a second line.
    const detail = (cause instanceof Error ? cause.message : String(cause)).replace(
      /\s*\n\s*/g,
      ' ',
    );
    const outcome = invokeOutcomeOf(fields.eventType);
    const hint = outcome
      ? `; give samples of "${fields.eventType}" with ${outcome.done ? 'the output' : 'the error'} its transition reads in the chart's eventSamples${outcome.done ? ', or declare the output with durablePromise(fn, { output: schema })' : ''}`
      : '';
    super(
      'EXPLORATION',
      `Exploring machine "${fields.machineId}": event "${fields.eventType}" in state "${fields.state}" (reached by ${fields.path.length === 0 ? '(initial)' : fields.path.join(' → ')}) threw: ${detail}${hint}`,
      { cause },
    );
    this.machineId = fields.machineId;
    this.state = fields.state;
    this.eventType = fields.eventType;
    this.path = fields.path;
  }
}

/**
 * The events the runtime delivers that are enabled in this snapshot: delayed
 * (`after`) transitions as `xstate.after.*` events, and invoked actors settling as
 * `xstate.done.actor.<id>` / `xstate.error.actor.<id>` (the samples given for
 * them, else a default: see {@link outcomeEvents}).
 */
export function delayedEvents(
  snapshot: AnyMachineSnapshot,
  outcomes: ReadonlyMap<string, readonly EventObject[]> = new Map(),
): EventObject[] {
  const seen = new Set<string>();
  const out: EventObject[] = [];
  for (const t of getNextTransitions(snapshot)) {
    if (seen.has(t.eventType)) continue;
    seen.add(t.eventType);
    if (t.eventType.startsWith('xstate.after.')) out.push({ type: t.eventType });
    else out.push(...outcomeEvents(snapshot, t.eventType, outcomes.get(t.eventType)));
  }
  return out;
}

/**
 * The default identity of a snapshot: value, context and history. History counts:
 * two `paused` states that resume to different places are different states.
 */
export function serializeSnapshotIdentity(snapshot: AnyMachineSnapshot): string {
  const history = historyIds(snapshot);
  return JSON.stringify({ value: snapshot.value, context: snapshot.context as unknown, history });
}

/** A snapshot's remembered history as state node ids, keyed by history node id. */
export function historyIds(snapshot: AnyMachineSnapshot): Record<string, string[]> {
  const history: Record<string, string[]> = {};
  for (const key of Object.keys(snapshot.historyValue).sort()) {
    history[key] = (snapshot.historyValue[key] ?? []).map((node) => node.id);
  }
  return history;
}

/**
 * Breadth-first exploration of a machine with sample events, built on
 * `xstate/graph`'s `getAdjacencyMap`. Only enabled transitions are followed;
 * disabled (state, event) pairs are returned as `rejected`.
 */
export function exploreMachine<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic>,
  options?: Partial<ExploreOptions<TLogic>>,
): ExploredGraph<TLogic>;
export function exploreMachine<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: ExploreOptions<TLogic>,
): ExploredGraph<TLogic>;
export function exploreMachine<TLogic extends AnyStateMachine>(
  target: TLogic | ChartDefinition<TLogic>,
  given?: Partial<ExploreOptions<TLogic>>,
): ExploredGraph<TLogic> {
  const { machine, options } = traversalArgs<TLogic, ExploreOptions<TLogic>>(
    'exploreMachine',
    target,
    given,
  );
  // Events a caller sends are tried in every state; invoke outcomes only where enabled.
  const samples: EventObject[] = [];
  const outcomes = new Map<string, readonly EventObject[]>();
  for (const [type, list] of Object.entries(options.events)) {
    const given = (list ?? []) as readonly EventObject[];
    if (type.startsWith('xstate.')) outcomes.set(type, given);
    else samples.push(...given);
  }
  const includeDelayed = options.includeDelayed ?? true;
  const limit = options.limit ?? 50_000;
  const trail = new Trail(
    machine.id,
    (options.serializeState as ((s: AnyMachineSnapshot) => string) | undefined) ??
      serializeSnapshotIdentity,
  );
  const rejected: ExploredGraph<TLogic>['rejected'] = [];
  const eventsFor = (snapshot: AnyMachineSnapshot): EventObject[] => {
    trail.trying(snapshot, undefined);
    return includeDelayed ? [...samples, ...delayedEvents(snapshot, outcomes)] : samples;
  };

  let adjacency;
  try {
    adjacency = getAdjacencyMap(machine, {
      ...(options.input !== undefined ? { input: options.input } : {}),
      serializeState: (s, event, previous) =>
        trail.reached(s as AnyMachineSnapshot, event, previous),
      events: (s) => eventsFor(s as AnyMachineSnapshot) as EventFromLogic<TLogic>[],
      filterEvents: (s, e) => {
        const snap = s as AnyMachineSnapshot;
        // Until the next call, a throw is this event's (its guards here, its actions next).
        trail.trying(snap, e);
        if (snap.status === 'active' && snap.can(e)) return true;
        trail.trying(snap, undefined);
        // Timers and invoked actors' outcomes are delivered by the runtime, never sent.
        if (!e.type.startsWith('xstate.')) {
          rejected.push({ from: trail.keyOf(snap), fromLabel: stateLabel(snap.value), event: e });
        }
        return false;
      },
      limit,
    });
  } catch (error) {
    if (error instanceof Error && error.message === 'Traversal limit exceeded') {
      throw new TraversalLimitError(machine.id, limit);
    }
    throw trail.blame(error);
  }

  const states = new Map<string, SnapshotFrom<TLogic>>();
  const edges: ExploredEdge[] = [];
  for (const [key, value] of Object.entries(adjacency)) {
    states.set(key, value.state as SnapshotFrom<TLogic>);
  }
  for (const [key, value] of Object.entries(adjacency)) {
    const from = value.state as AnyMachineSnapshot;
    const transitions = value.transitions as Record<string, { event: EventObject; state: unknown }>;
    for (const t of Object.values(transitions)) {
      const to = t.state as AnyMachineSnapshot;
      edges.push({
        from: key,
        event: t.event,
        to: trail.keyOf(to),
        fromLabel: stateLabel(from.value),
        toLabel: stateLabel(to.value),
      });
    }
  }
  // Rejections are recorded during traversal; a state is visited once, so each pair appears once.
  const initial = states.keys().next().value ?? '';
  return { states, edges, rejected, initial };
}

/**
 * What the traversal did so far, to say where it failed: each state's identity
 * (serialised once), the event and state it was first reached from (the
 * traversal is breadth-first, so that is a shortest path), and the (state, event)
 * pair being tried.
 */
class Trail {
  private readonly keys = new WeakMap<AnyMachineSnapshot, string>();
  private readonly parents = new Map<string, { from: string; event: EventObject } | null>();
  private current: { state: AnyMachineSnapshot; event: EventObject | undefined } | undefined;
  private started = false;

  constructor(
    private readonly machineId: string,
    private readonly serialize: (snapshot: AnyMachineSnapshot) => string,
  ) {}

  keyOf(snapshot: AnyMachineSnapshot): string {
    let key = this.keys.get(snapshot);
    if (key === undefined) {
      key = this.serialize(snapshot);
      this.keys.set(snapshot, key);
    }
    return key;
  }

  /** A state taken off the traversal's queue, reached from `previous` by `event`. */
  reached(
    snapshot: AnyMachineSnapshot,
    event: EventObject | undefined,
    previous: AnyMachineSnapshot | undefined,
  ): string {
    this.started = true;
    this.current = undefined;
    let key: string;
    try {
      key = this.keyOf(snapshot);
    } catch (error) {
      const from = previous && event ? this.keyOf(previous) : undefined;
      throw new ExplorationError(
        {
          machineId: this.machineId,
          state: stateLabel(snapshot.value),
          eventType: 'serializeState',
          path: [
            ...(from !== undefined ? this.pathTo(from) : []),
            ...(event ? [eventLabel(event.type)] : []),
          ],
        },
        error,
      );
    }
    if (!this.parents.has(key)) {
      this.parents.set(key, previous && event ? { from: this.keyOf(previous), event } : null);
    }
    return key;
  }

  trying(state: AnyMachineSnapshot, event: EventObject | undefined): void {
    this.current = { state, event };
  }

  /** The event labels of the shortest path found to `key`. */
  pathTo(key: string): string[] {
    const path: string[] = [];
    const seen = new Set<string>();
    for (
      let step = this.parents.get(key);
      step && !seen.has(step.from);
      step = this.parents.get(step.from)
    ) {
      seen.add(step.from);
      path.unshift(eventLabel(step.event.type));
    }
    return path;
  }

  /** What the traversal threw, as an {@link ExplorationError} naming state, event and path. */
  blame(error: unknown): unknown {
    if (error instanceof ExplorationError) return error;
    if (!this.started) {
      return new ExplorationError(
        { machineId: this.machineId, state: '(initial)', eventType: 'xstate.init', path: [] },
        error,
      );
    }
    const current = this.current;
    if (!current?.event) return error;
    return new ExplorationError(
      {
        machineId: this.machineId,
        state: stateLabel(current.state.value),
        eventType: current.event.type,
        path: this.pathTo(this.keyOf(current.state)),
      },
      error,
    );
  }
}

/**
 * The (state, event type) → target relation of a machine as sorted
 * `from --EVENT--> to` strings over state labels, the form the conformance tests
 * compare with the source documents' tables. Delayed events are named `after:<delay>`.
 */
export function transitionTable<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic>,
  options?: Partial<ExploreOptions<TLogic>>,
): string[];
export function transitionTable<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: ExploreOptions<TLogic>,
): string[];
export function transitionTable<TLogic extends AnyStateMachine>(
  target: TLogic | ChartDefinition<TLogic>,
  given?: Partial<ExploreOptions<TLogic>>,
): string[] {
  const { machine, options } = traversalArgs<TLogic, ExploreOptions<TLogic>>(
    'transitionTable',
    target,
    given,
  );
  const graph = exploreMachine(machine, options);
  const rows = new Set<string>();
  for (const e of graph.edges)
    rows.add(`${e.fromLabel} --${eventLabel(e.event.type)}--> ${e.toLabel}`);
  return [...rows].sort();
}

/** `xstate.after.retryBackoff.task.retrying` → `after:retryBackoff`; others unchanged. */
export function eventLabel(type: string): string {
  if (!type.startsWith('xstate.after.')) return type;
  const rest = type.slice('xstate.after.'.length);
  return `after:${rest.split('.')[0] ?? rest}`;
}
