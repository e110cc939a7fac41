/**
 * `checkChart(chart)`: proves or refutes each property a chart declares, over
 * every path of its state space (its samples, its input, its `serializeState`
 * projection; guards evaluated, timers and invoked actors' outcomes delivered as
 * the runtime delivers them), and checks the charts of its child machines with it.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import type { ChartDefinition } from '../core/chart.ts';
import { InvalidEventError } from '../core/errors.ts';
import { EXPECTED, isMachine, isOptionsBag, requireArg } from '../core/options.ts';
import {
  checkChartProperties,
  propertyNames,
  propertyTitle,
  type ChartProperty,
  type PropertyNames,
} from '../core/properties.ts';
import { childMachines } from '../durable/actor-kinds.ts';
import { getMachineEventTypes, validateEvent } from '../strict/events.ts';
import { checkBefore, checkBounded, checkOnly } from './monitors.ts';
import { exploreSpace, type StateSpace } from './space.ts';
import type { CheckPath } from './paths.ts';
import { replayEvents } from './replay.ts';
import { sampleOutput } from '../testing/invoke-samples.ts';
import { stateLabel } from '../core/state.ts';
import {
  checkNoDeadEnd,
  checkReachable,
  checkTerminates,
  checkWaitsHaveTimeout,
} from './structure.ts';
import type { Verdict } from './verdict.ts';

/** Default bound on the states a check explores. */
export const DEFAULT_CHECK_LIMIT = 50_000;

export interface CheckOptions {
  /** Largest number of states to explore (per chart). Default 50,000. */
  limit?: number | undefined;
  /** Input of the initial state (default: the chart's `defaultInput`). */
  input?: unknown;
  /** The properties to check instead of the chart's own. */
  properties?: readonly ChartProperty[] | undefined;
}

/** One property and what the check says of it. */
export interface PropertyResult extends Verdict {
  property: ChartProperty;
  /** The property in one line: `only(paused → running via APPROVAL_GRANTED)`. */
  title: string;
  description: string | undefined;
}

/** The check of one chart (and of its children's charts). */
export interface ChartCheck {
  chart: string;
  machineId: string;
  /** States explored (identities of the projection) and transitions taken. */
  states: number;
  transitions: number;
  /** Every state was explored: proven means proven for every path. */
  complete: boolean;
  limit: number;
  /** Wall time of the exploration and the properties, ms. */
  ms: number;
  properties: PropertyResult[];
  /** What the check could not use or wants you to know (invalid samples, unchecked children). */
  notes: string[];
  /** Event types this chart's machine sends its parent (`sendParent`) on some transition. */
  toParent: string[];
  /** The checks of the child machines' charts (`chart.children`). */
  children: ChartCheck[];
}

function isChart(value: unknown): value is ChartDefinition {
  return isMachine((value as { machine?: unknown } | null)?.machine);
}

function verdictOf(space: StateSpace, property: ChartProperty, names: PropertyNames): Verdict {
  switch (property.kind) {
    case 'reachable':
      return checkReachable(space, property, names);
    case 'noDeadEnd':
      return checkNoDeadEnd(space, property, names);
    case 'terminates':
      return checkTerminates(space);
    case 'only':
      return checkOnly(space, property, names);
    case 'before':
      return checkBefore(space, property);
    case 'bounded':
      return checkBounded(space, property);
    case 'waitsHaveTimeout':
      return checkWaitsHaveTimeout(space, property, names);
  }
}

/**
 * The samples the check sends: the chart's valid ones (the runtime refuses the
 * others), and for an event type the machine handles but the chart does not
 * list, a bare `{ type }` when that is a valid event (as `agentcharts paths`
 * does), else one made from its schema (openapi-sampler, as an invoke's output
 * is). A type listed with no samples (`PAID: []`) is never sent. `unsampled`:
 * the handled types none of those gives a valid event of.
 */
function samplesOf(
  chart: ChartDefinition,
  notes: string[],
): { samples: EventObject[]; unsampled: string[] } {
  const out: EventObject[] = [];
  const unsampled: string[] = [];
  const given = new Set<string>();
  const valid = (event: unknown): string | undefined => {
    try {
      validateEvent(chart.machine, event);
      return undefined;
    } catch (error) {
      if (!(error instanceof InvalidEventError)) throw error;
      return error.message;
    }
  };
  for (const [type, list] of Object.entries(chart.eventSamples)) {
    // Invoked actors' outcomes are delivered where their state is active, never sent.
    if (type.startsWith('xstate.')) continue;
    given.add(type);
    for (const [i, sample] of ((list ?? []) as readonly EventObject[]).entries()) {
      const problem = valid(sample);
      if (problem === undefined) out.push(sample);
      else notes.push(`sample #${i + 1} of ${type} is left out: ${problem}`);
    }
  }
  const handled = [...new Set(getMachineEventTypes(chart.machine))].filter(
    (t) => !t.includes('*') && !t.startsWith('xstate.') && !given.has(t),
  );
  for (const type of handled.sort()) {
    if (valid({ type }) === undefined) {
      out.push({ type });
      notes.push(
        `no sample of ${type}: { type: '${type}' } stands in (give eventSamples for payloads)`,
      );
      continue;
    }
    const schema = Object.hasOwn(chart.events, type) ? chart.events[type] : undefined;
    const made = schema === undefined ? undefined : sampleOutput(schema)?.output;
    if (made !== undefined && valid(made) === undefined) {
      out.push(made as EventObject);
      notes.push(
        `no sample of ${type}: ${JSON.stringify(made)}, made from its schema, stands in (give eventSamples for others)`,
      );
      continue;
    }
    unsampled.push(type);
    notes.push(
      `no valid sample of ${type}: its transitions are not explored (give eventSamples); what they could change is unproven`,
    );
  }
  return { samples: out, unsampled };
}

/**
 * Property kinds whose refutation is a path that shows it (an event taken the
 * wrong way, a count exceeded, an order broken): still a refutation when some
 * events were not explored, as a reachable state's proof (its witness path) is
 * still a proof. Every other verdict claims something of all paths (a proof, an
 * unreachable state, a state with no way out), which an event left unexplored
 * may change.
 */
const REFUTED_BY_ITS_PATH: ReadonlySet<ChartProperty['kind']> = new Set([
  'only',
  'before',
  'bounded',
]);

/** A verdict reached without exploring `unexplored` event types: unproven unless its path shows it. */
function withUnexplored(
  verdict: Verdict,
  property: ChartProperty,
  unexplored: readonly string[],
): Verdict {
  if (verdict.status === 'unproven') return verdict;
  if (verdict.status === 'refuted' && REFUTED_BY_ITS_PATH.has(property.kind)) return verdict;
  if (verdict.status === 'proven' && property.kind === 'reachable') return verdict;
  return {
    status: 'unproven',
    detail: `unproven: ${unexplored.join(', ')} ${unexplored.length === 1 ? 'was' : 'were'} not explored (no valid sample; give eventSamples), and could change it`,
  };
}

/** The chart's samples of invoked actors' outcomes (`xstate.done.actor.<id>`), by type. */
function outcomesOf(chart: ChartDefinition): Map<string, readonly EventObject[]> {
  const out = new Map<string, readonly EventObject[]>();
  for (const [type, list] of Object.entries(chart.eventSamples)) {
    if (type.startsWith('xstate.')) out.set(type, (list ?? []) as readonly EventObject[]);
  }
  return out;
}

/**
 * Whether a counterexample, replayed on the machine itself, goes where the space
 * says; a projection (`serializeState`) that merges states whose futures differ
 * makes paths of the space that the machine does not take.
 */
function divergence(chart: ChartDefinition, input: unknown, path: CheckPath): string | undefined {
  const replay = replayEvents(
    chart.machine,
    input,
    path.steps.map((s) => s.event),
  );
  const at = replay.refused
    ? replay.refused.index
    : replay.values.findIndex((v, i) => stateLabel(v) !== path.states[i]);
  if (at === -1 || at === undefined) return undefined;
  return `replayed on the machine itself, this path leaves the space after ${at} event${
    at === 1 ? '' : 's'
  }: serializeState merges states whose futures differ, so the counterexample may not be real`;
}

/**
 * Where a space over its bound keeps growing: the context fields with the most
 * distinct values among the states explored, which a projection should drop or cap.
 */
function growth(space: StateSpace): string {
  const distinct = new Map<string, Set<string>>();
  for (const node of space.nodes) {
    const context = node.snapshot.context as Record<string, unknown> | undefined;
    if (typeof context !== 'object' || context === null) continue;
    for (const [field, value] of Object.entries(context)) {
      const set = distinct.get(field) ?? new Set<string>();
      if (set.size <= space.nodes.length) set.add(JSON.stringify(value) ?? 'undefined');
      distinct.set(field, set);
    }
  }
  const top = [...distinct.entries()]
    .map(([field, set]) => [field, set.size] as const)
    .filter(([, n]) => n > 1)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3);
  const fields = top.map(([f, n]) => `${f} (${n} values)`).join(', ');
  return `the state space has more than ${space.nodes.length} states: give the chart a serializeState that projects context onto a finite set${
    fields ? ` (most distinct values: ${fields})` : ''
  }, or raise the limit`;
}

/**
 * Proves or refutes every property of `chart` (or `options.properties`), and of
 * its children's charts, by exhaustive exploration. Never throws for a property
 * that fails: a refuted one carries its shortest counterexample, one the bound
 * stopped is `unproven`. A property naming what the chart lacks is a
 * {@link PropertyDefinitionError}.
 *
 * @example
 * const report = checkChart(catalog['task-lifecycle']);
 * report.properties.every((p) => p.status === 'proven'); // true
 */
/** The check of a chart that declares no properties: its space unexplored, its children checked. */
function unexplored(chart: ChartDefinition, limit: number): ChartCheck {
  return {
    chart: chart.name,
    machineId: chart.machine.id,
    states: 0,
    transitions: 0,
    complete: false,
    limit,
    ms: 0,
    properties: [],
    notes: [
      'no properties declared: its state space was not explored (defineChart(machine, { properties }))',
    ],
    toParent: [],
    children: (chart.children ?? []).map((child) => checkChart(child, { limit })),
  };
}

export function checkChart(chart: ChartDefinition, options: CheckOptions = {}): ChartCheck {
  requireArg('checkChart', 'chart', isChart(chart), 'a chart (defineChart)');
  requireArg('checkChart', 'options', isOptionsBag(options), EXPECTED.options);
  const limit = options.limit ?? DEFAULT_CHECK_LIMIT;
  requireArg(
    'checkChart',
    'options.limit',
    Number.isSafeInteger(limit) && limit > 0,
    'a positive integer',
  );
  const properties = options.properties ?? ((chart.properties ?? []) as readonly ChartProperty[]);
  if (options.properties) checkChartProperties(chart.machine, properties);
  // Nothing to prove: no walk of a state space that may run to the bound (its
  // children, which may have properties of their own, are still checked).
  if (properties.length === 0) return unexplored(chart, limit);

  const started = performance.now();
  const notes: string[] = [];
  const { samples, unsampled } = samplesOf(chart, notes);
  const space = exploreSpace(chart.machine, {
    samples,
    outcomes: outcomesOf(chart),
    input: 'input' in options ? options.input : chart.defaultInput,
    serializeState: chart.serializeState as ((s: AnyMachineSnapshot) => string) | undefined,
    limit,
  });
  const names = propertyNames(chart.machine);
  const input = 'input' in options ? options.input : chart.defaultInput;
  const results: PropertyResult[] = properties.map((property) => {
    const explored = verdictOf(space, property, names);
    const verdict =
      unsampled.length === 0 ? explored : withUnexplored(explored, property, unsampled);
    const unfaithful = verdict.counterexample && divergence(chart, input, verdict.counterexample);
    return {
      property,
      title: propertyTitle(property),
      description: property.description,
      ...verdict,
      ...(unfaithful ? { detail: `${verdict.detail} (${unfaithful})` } : {}),
    };
  });
  if (!space.complete) notes.push(growth(space));
  const ms = Math.round(performance.now() - started);

  const children = (chart.children ?? []).map((child) => checkChart(child, { limit }));
  const covered = new Set((chart.children ?? []).map((c) => c.machine));
  for (const machine of childMachines(chart.machine)) {
    if (!covered.has(machine)) {
      notes.push(
        `child machine "${machine.id}" has no chart in chart.children: its own properties are not checked`,
      );
    }
  }
  const sampled = new Set(Object.keys(chart.eventSamples));
  for (const child of children) {
    for (const type of child.toParent) {
      if (!sampled.has(type)) {
        notes.push(
          `child "${child.machineId}" sends ${type} to its parent, which has no sample of it: the parent's check never hears it`,
        );
      }
    }
  }

  return {
    chart: chart.name,
    machineId: chart.machine.id,
    states: space.nodes.length,
    transitions: space.edges,
    complete: space.complete && unsampled.length === 0,
    limit,
    ms,
    properties: results,
    notes,
    toParent: [...space.toParent].sort(),
    children,
  };
}
