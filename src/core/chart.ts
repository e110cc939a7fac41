import type { AnyStateMachine, EventFromLogic, EventObject, InputFrom, SnapshotFrom } from 'xstate';
import type { z } from 'zod';
import { checkChartMetadata } from './meta-check.ts';
import { checkMetaNames } from './meta-names.ts';
import { checkChartProperties, type PropertyOf } from './properties.ts';
import { resumeAll, type RecoveryPolicy } from './recovery.ts';
import { isMachine, requireArg, requireOptions } from './options.ts';

/**
 * Event schemas of a machine, keyed by event type. Each schema is a strict zod
 * object whose `type` is the literal key. They are the single source of both the
 * TypeScript event type ({@link EventFromSchemas}) and the runtime check.
 */
export type EventSchemas = Readonly<Record<string, z.ZodType<EventObject>>>;

/** The event union described by a record of event schemas. */
export type EventFromSchemas<T extends EventSchemas> = z.infer<T[keyof T]>;

/** What a chart carries in `setup({ schemas })`, readable back from `machine.schemas`. */
export interface ChartSchemas<T extends EventSchemas = EventSchemas> {
  events: T;
  /** Schema of the machine's input, checked before an actor is created. */
  input?: z.ZodType;
}

/** A sample of an invoked actor finishing: the output its `onDone` reads. */
export interface InvokeDoneSample {
  type: `xstate.done.actor.${string}`;
  output?: unknown;
}

/** A sample of an invoked actor failing: the error its `onError` reads. */
export interface InvokeErrorSample {
  type: `xstate.error.actor.${string}`;
  error?: unknown;
}

/**
 * Sample events per event type; several samples per type are allowed. Besides the
 * events a caller sends, it may give the outcomes of invoked actors, which
 * exploration delivers when the invoking state is active:
 * `'xstate.done.actor.<id>': [{ type, output }]`, `'xstate.error.actor.<id>': [{ type, error }]`.
 */
export type EventCatalog<TEvent extends EventObject = EventObject> = {
  readonly [K in TEvent['type']]?: readonly Extract<TEvent, { type: K }>[];
} & {
  // EventObject too: a catalog built as a Record<string, EventObject[]> stays one.
  readonly [K: `xstate.done.actor.${string}`]:
    readonly (InvokeDoneSample | EventObject)[] | undefined;
  readonly [K: `xstate.error.actor.${string}`]:
    readonly (InvokeErrorSample | EventObject)[] | undefined;
};

/** A persisted snapshot as stored (JSON-compatible). */
export type PersistedSnapshot = Record<string, unknown>;

/** Upgrades a persisted snapshot from version `n` to `n + 1`. */
export type SnapshotMigration = (snapshot: PersistedSnapshot) => PersistedSnapshot;

/** Everything agentcharts knows about one chart. */
export interface ChartDefinition<TLogic extends AnyStateMachine = AnyStateMachine> {
  /** Catalog name, kebab-case (`task-lifecycle`). */
  name: string;
  /** One line on what the chart models and which source document it comes from. */
  description: string;
  machine: TLogic;
  /** Event schemas (also on `machine.schemas.events`). */
  events: EventSchemas;
  /** Sample events per type, used by the test generator, the crash test and the demo. */
  eventSamples: EventCatalog<EventFromLogic<TLogic>>;
  /** Input used when none is given (tests, CLI). */
  defaultInput: InputFrom<TLogic>;
  /** What `recover()` does with an actor of this chart found after a restart. */
  recovery: RecoveryPolicy;
  /** Version of the persisted snapshot shape; bump it with a migration. */
  version: number;
  /** `migrations[n]` upgrades a snapshot stored at version `n` to `n + 1`. */
  migrations: Readonly<Record<number, SnapshotMigration>>;
  /**
   * Identity of a snapshot for exhaustive traversal: a projection of context onto a
   * finite set where context grows without bound (counters, timelines). Default:
   * value + context.
   */
  serializeState?: (snapshot: SnapshotFrom<TLogic>) => string;
  /**
   * What the chart promises (src/core/properties.ts: `reachable`, `only`, `before`,
   * `bounded`, …), proven for every path by `agentcharts check` and by the generated
   * tests. The names are checked against the machine, here and where it is defined.
   */
  properties?: readonly PropertyOf<TLogic>[];
  /**
   * The charts of the child machines this chart invokes or spawns (their samples,
   * input and properties), checked with it.
   */
  children?: readonly ChartDefinition[];
}

/** What {@link defineChart} needs besides the machine; every field has a default. */
export type ChartOptions<TLogic extends AnyStateMachine> = Partial<
  Omit<ChartDefinition<TLogic>, 'machine'>
>;

/**
 * Declares a chart: `defineChart(machine)` or `defineChart(machine, { … })` with
 * any fields to set (name = the machine id, no event schemas, no samples, recovery
 * resumes every actor, version 1), or a whole definition object. Its metadata
 * (state names and classes, event kinds and roles, delay names) is checked here,
 * so an ill-formed chart fails where it is defined with a ChartMetadataError.
 *
 * @example
 * export const chart = defineChart(machine, { eventSamples: { GO: [{ type: 'GO' }] } });
 */
export function defineChart<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic>,
): ChartDefinition<TLogic>;
export function defineChart<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options?: ChartOptions<TLogic>,
): ChartDefinition<TLogic>;
export function defineChart<TLogic extends AnyStateMachine>(
  chartOrMachine: ChartDefinition<TLogic> | TLogic,
  options: ChartOptions<TLogic> = {},
): ChartDefinition<TLogic> {
  requireArg(
    'defineChart',
    'machine',
    isMachine(chartOrMachine) ||
      isMachine((chartOrMachine as { machine?: unknown } | null)?.machine),
    'an XState machine, or a chart to complete',
  );
  requireOptions('defineChart', options);
  const isDefinition = (v: ChartDefinition<TLogic> | TLogic): v is ChartDefinition<TLogic> =>
    'machine' in v && !('root' in v);
  const machine = isDefinition(chartOrMachine) ? undefined : chartOrMachine;
  const chart: ChartDefinition<TLogic> =
    machine === undefined
      ? (chartOrMachine as ChartDefinition<TLogic>)
      : {
          name: machine.id,
          description: machine.config.description ?? '',
          machine,
          events: {},
          eventSamples: {},
          defaultInput: undefined as InputFrom<TLogic>,
          recovery: resumeAll,
          version: 1,
          migrations: {},
          ...options,
        };
  checkChartMetadata(chart.machine);
  checkMetaNames(chart.machine, { ...schemasOfMachine(chart.machine), ...chart.events });
  checkChartProperties(chart.machine, chart.properties);
  if (!definedCharts.has(chart.machine)) definedCharts.set(chart.machine, chart);
  return chart;
}

/** The chart each machine was first defined with (`defineChart`). */
const definedCharts = new WeakMap<AnyStateMachine, ChartDefinition>();

/**
 * The chart `machine` was defined with, if any: its event schemas, samples,
 * version and migrations go with the machine wherever it is passed alone.
 */
export function definedChart<TLogic extends AnyStateMachine>(
  machine: TLogic,
): ChartDefinition<TLogic> | undefined {
  return definedCharts.get(machine) as ChartDefinition<TLogic> | undefined;
}

/** Whether `value` is a chart (what {@link defineChart} returns) rather than a machine. */
export function isChartDefinition(value: unknown): value is ChartDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    !isMachine(value) &&
    isMachine((value as { machine?: unknown }).machine)
  );
}

/**
 * A chart, or a machine with the chart it was defined with (if any): what every
 * API that takes "a machine or its chart" works from.
 */
export function chartAndMachine<TLogic extends AnyStateMachine>(
  value: TLogic | ChartDefinition<TLogic>,
): { machine: TLogic; chart: ChartDefinition<TLogic> | undefined } {
  if (isChartDefinition(value)) return { machine: value.machine, chart: value };
  return { machine: value, chart: definedChart(value) };
}

/** A chart's event schemas, or undefined when it declares none (`{}`). */
export function chartEvents(chart: ChartDefinition | undefined): EventSchemas | undefined {
  if (chart === undefined) return undefined;
  // On every send: no array of the keys, only whether there is one.
  for (const _ in chart.events) return chart.events;
  return undefined;
}

/** The event schemas `setup({ schemas: { events } })` put on the machine, if any. */
function schemasOfMachine(machine: AnyStateMachine): Readonly<Record<string, unknown>> {
  const events = (machine.schemas as { events?: unknown } | undefined)?.events;
  return typeof events === 'object' && events !== null
    ? (events as Readonly<Record<string, unknown>>)
    : {};
}
