/**
 * `agentcharts/chart`: what a chart module needs, and nothing of Node, so that the
 * same chart file runs in the durable runtime, the CLI and a browser bundle
 * (`esbuild --platform=browser`): `defineChart`, `eventSchema`, `durablePromise`,
 * the properties a chart declares (`reachable`, `only`, …), the metadata
 * vocabulary (state classes, event kinds), versions and migrations,
 * recovery policies, event validation and the strict actor.
 *
 * Everything here is also exported by `agentcharts`; a chart that imports this
 * entry and a server that imports the root share one module of each.
 *
 * @example
 * import { setup } from 'xstate';
 * import * as z from 'zod';
 * import { defineChart, eventSchema } from 'agentcharts/chart';
 *
 * const events = { SUBMIT: eventSchema('SUBMIT', { title: z.string().min(1) }) };
 * const machine = setup({}).createMachine({ id: 'doc', initial: 'draft', states: { draft: {} } });
 * export const chart = defineChart(machine, { events });
 *
 * @module agentcharts/chart
 */

// Declaring a chart
export {
  defineChart,
  definedChart,
  isChartDefinition,
  type ChartDefinition,
  type ChartOptions,
  type ChartSchemas,
  type EventCatalog,
  type EventFromSchemas,
  type EventSchemas,
  type InvokeDoneSample,
  type InvokeErrorSample,
  type PersistedSnapshot,
  type SnapshotMigration,
} from './core/chart.ts';
export {
  durablePromise,
  type DurablePromiseArgs,
  type DurablePromiseLogic,
  type DurablePromiseOptions,
} from './core/durable-promise.ts';
export {
  resumeAll,
  type RecoveryContext,
  type RecoveryDecision,
  type RecoveryPolicy,
  type RecoverySnapshot,
} from './core/recovery.ts';

// Properties a chart declares (proven by `agentcharts check`, which is not here)
export {
  PROPERTY_KINDS,
  PropertyDefinitionError,
  before,
  bounded,
  noDeadEnd,
  only,
  propertyTitle,
  reachable,
  terminates,
  waitsHaveTimeout,
  type BeforeProperty,
  type BoundedProperty,
  type ChartProperty,
  type EventPatternLike,
  type EventRef,
  type NoDeadEndProperty,
  type OnlyProperty,
  type PropertyDefinitionFields,
  type PropertyKind,
  type PropertyOf,
  type PropertyOptions,
  type ReachableProperty,
  type StateRef,
  type TerminatesProperty,
  type WaitsHaveTimeoutProperty,
} from './core/properties.ts';

// What states and events mean (chart metadata)
export {
  CLASS_COLORS,
  EVENT_KINDS,
  ROLES,
  STATE_CLASSES,
  chartMeta,
  type ChartMeta,
  type EventInfo,
  type EventKind,
  type EventMeta,
  metaTypes,
  type NodeMeta,
  type RootMeta,
  type StateClass,
  type StateInfo,
  type StateMeta,
  type TransitionMeta,
} from './core/meta.ts';
export { stateLabel } from './core/state.ts';

// Events: schemas and validation, and the strict actor
export {
  eventSchema,
  getEventSchemas,
  jsonValue,
  validateEvent,
  validateInput,
  type JsonValue,
  type ValidateEventOptions,
} from './strict/events.ts';
export {
  StrictActor,
  checkEvent,
  createStrictActor,
  type StrictActorOptions,
} from './strict/strict-actor.ts';

// Errors a chart's code can meet
export {
  AgentchartsError,
  ChartMetadataError,
  InvalidEventError,
  InvalidInputError,
  InvalidOutputError,
  InvalidTransitionError,
  type EventProblem,
  type InvalidEventReason,
} from './core/errors.ts';
export { InvalidOptionsError } from './core/options.ts';
