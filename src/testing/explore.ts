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

export type { EventCatalog } from '../core/chart.ts';
import type { EventCatalog } from '../core/chart.ts';
import { EXPECTED, isMachine, requireArg } from '../core/options.ts';

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

/** `xstate.after.*` events enabled in this snapshot (delayed transitions). */
export function delayedEvents(snapshot: AnyMachineSnapshot): EventObject[] {
  const seen = new Set<string>();
  const out: EventObject[] = [];
  for (const t of getNextTransitions(snapshot)) {
    if (seen.has(t.eventType)) continue;
    seen.add(t.eventType);
    if (t.eventType.startsWith('xstate.after.')) out.push({ type: t.eventType });
    // An invoked actor settling: its done event (no output) and its error event.
    else if (t.eventType.startsWith('xstate.done.actor.')) {
      out.push({ type: t.eventType, output: undefined } as EventObject);
    } else if (t.eventType.startsWith('xstate.error.actor.')) {
      const error = { name: 'Error', message: 'sample failure' };
      out.push({ type: t.eventType, error } as EventObject);
    }
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

/** The arguments every traversal takes: a machine and sample events by type. */
export function checkTraversalArgs(fn: string, machine: unknown, options: unknown): void {
  requireArg(fn, 'machine', isMachine(machine), EXPECTED.machine);
  const events = (options as { events?: unknown } | null | undefined)?.events;
  requireArg(
    fn,
    'options.events',
    typeof events === 'object' && events !== null,
    "sample events by type ({ START: [{ type: 'START' }] })",
  );
}

/**
 * Breadth-first exploration of a machine with sample events, built on
 * `xstate/graph`'s `getAdjacencyMap`. Only enabled transitions are followed;
 * disabled (state, event) pairs are returned as `rejected`.
 */
export function exploreMachine<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: ExploreOptions<TLogic>,
): ExploredGraph<TLogic> {
  checkTraversalArgs('exploreMachine', machine, options);
  const samples = Object.values(options.events).flatMap(
    (list) => (list ?? []) as readonly EventObject[],
  );
  const serialize =
    (options.serializeState as ((s: AnyMachineSnapshot) => string) | undefined) ??
    serializeSnapshotIdentity;
  const includeDelayed = options.includeDelayed ?? true;
  const limit = options.limit ?? 50_000;
  const rejected: ExploredGraph<TLogic>['rejected'] = [];
  const eventsFor = (snapshot: AnyMachineSnapshot): EventObject[] =>
    includeDelayed ? [...samples, ...delayedEvents(snapshot)] : samples;

  let adjacency;
  try {
    adjacency = getAdjacencyMap(machine, {
      ...(options.input !== undefined ? { input: options.input } : {}),
      serializeState: (s) => serialize(s as AnyMachineSnapshot),
      events: (s) => eventsFor(s as AnyMachineSnapshot) as EventFromLogic<TLogic>[],
      filterEvents: (s, e) => {
        const snap = s as AnyMachineSnapshot;
        if (snap.status === 'active' && snap.can(e)) return true;
        // Timers and invoked actors' outcomes are delivered by the runtime, never sent.
        if (!e.type.startsWith('xstate.')) {
          rejected.push({ from: serialize(snap), fromLabel: stateLabel(snap.value), event: e });
        }
        return false;
      },
      limit,
    });
  } catch (error) {
    if (error instanceof Error && error.message === 'Traversal limit exceeded') {
      throw new TraversalLimitError(machine.id, limit);
    }
    throw error;
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
        to: serialize(to),
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
 * The (state, event type) → target relation of a machine as sorted
 * `from --EVENT--> to` strings over state labels, the form the conformance tests
 * compare with the source documents' tables. Delayed events are named `after:<delay>`.
 */
export function transitionTable<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: ExploreOptions<TLogic>,
): string[] {
  requireArg('transitionTable', 'machine', isMachine(machine), EXPECTED.machine);
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
