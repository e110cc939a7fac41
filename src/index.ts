/**
 * `agentcharts`: charts, strict and durable actors, the embedded stores, recovery
 * and verification, observation, exploration, and the moves an agent may make.
 *
 * A deliberate list: what a user calls or names in a type. Server, PostgreSQL,
 * test generation and the AI SDK adapter have their own entries
 * (`agentcharts/server`, `agentcharts/store/postgres`, `agentcharts/testing`,
 * `agentcharts/ai`), because they need optional packages.
 *
 * @module agentcharts
 */

// What a chart module needs (also `agentcharts/chart`, which bundles for the browser)
export * from './chart.ts';

// Errors
export {
  ConcurrencyError,
  LeaseLostError,
  SnapshotVersionError,
  StoreError,
  UncertainStepError,
  UnsupportedActorError,
  UnpersistableValueError,
  type ChartMetadataFields,
  type ConcurrencyFields,
  type InvalidEventFields,
  type EventProblem,
  MAX_EVENT_PROBLEMS,
  type InvalidInputFields,
  type InvalidOutputFields,
  type InvalidTransitionFields,
  type LeaseLostFields,
  type MachineScope,
  type SnapshotVersionFields,
  type StoreErrorFields,
  type StoreOperation,
  type UncertainStepFields,
  type UnsupportedActorFields,
  type UnpersistableValueFields,
} from './core/errors.ts';
export { defineConfig, type AgentchartsConfig } from './core/config.ts';
export { MissingDependencyError } from './core/optional.ts';

// What a stored state means, by machine id
export { classifyState, labelsFor, stateColor, stateName } from './core/meanings.ts';
export { leafPaths } from './core/state.ts';
export { ManualClock, systemClock, type Clock } from './core/clock.ts';

// Strict actors and event validation
export type { CheckEventOptions } from './strict/strict-actor.ts';
export { DEFAULT_MAX_EVENT_BYTES, getInputSchema, getMachineEventTypes } from './strict/events.ts';

// Durable actors
export { DurableActor } from './durable/actor.ts';
export { toPromise, waitFor, type DurableWaitForOptions } from './durable/wait-for.ts';
export {
  createDurableActor,
  getRuntime,
  openDurableActor,
  type OpenDurableActorOptions,
} from './durable/open.ts';
export { NoEventSchemasWarning } from './durable/no-schemas.ts';
export type { DurableActorOptions } from './durable/options.ts';
export { DurableRuntime, type ActorLoader, type RuntimeOptions } from './durable/runtime.ts';
export type {
  EmittedNotice,
  EventSource,
  LiveActor,
  RejectionNotice,
  RuntimeObserver,
  TransitionNotice,
  WriteErrorNotice,
} from './durable/notices.ts';
export type { ChartVersioning } from './durable/codec.ts';
export {
  settleStep,
  type ReconcileHook,
  type StepReconciliation,
  type UncertainStep,
} from './durable/steps.ts';
export type { InspectorLike } from './durable/inspection.ts';
export { recover } from './durable/recover.ts';
export {
  checkDeploy,
  type CheckDeployOptions,
  type CheckDeployReport,
  type StrandKind,
  type StrandedActor,
} from './durable/check-deploy.ts';
export type { RecoverOptions, RecoveryEntry, RecoveryReport } from './durable/recover-report.ts';
export {
  verify,
  type VerifyCheckpoint,
  type VerifyProblem,
  type VerifyReport,
} from './durable/verify.ts';

// Stores (PostgreSQL: `agentcharts/store/postgres`; `openStore` opens it by URL)
export type * from './store/types.ts';
export { openStore, parseStoreUrl, DEFAULT_SQLITE_FILE, type StoreUrl } from './store/open.ts';
export type { PostgresStoreOptions } from './store/postgres/options.ts';
export { MemoryStore } from './store/memory.ts';
export { SqliteStore, openSqliteStore, type SqliteStoreOptions } from './store/sqlite/store.ts';

// Observation (Prometheus metrics: `agentcharts/server`)
export {
  ALERT_RULES,
  defaultThresholds,
  evaluateAlerts,
  type AlertInstance,
  type AlertResult,
  type AlertRule,
  type AlertRuleName,
  type AlertSeverity,
  type AlertThresholds,
  type EvaluateOptions,
  type ThresholdOverrides,
} from './observe/alerts.ts';
export {
  LOG_LEVELS,
  createLogger,
  type LogLevelSetting,
  type LoggerOptions,
} from './observe/logging.ts';
export {
  activeAgentsForUser,
  collectionStatistics,
  toSeedStatistics,
  type CollectionStatistics,
  type SeedStatistics,
  type StateGroup,
  type StatisticsQuery,
} from './observe/stats.ts';
export {
  NdjsonWriter,
  STREAM_MESSAGE_TYPES,
  parseLine,
  parseNdjson,
  streamMessageSchema,
  toStreamMessages,
  type NdjsonWriterOptions,
  type ParseOptions,
  type ParsedLine,
  type StreamMessage,
  type StreamMessageType,
  type StreamTransition,
  type TextSink,
} from './observe/stream.ts';
export {
  feedTransitions,
  type FeedTransition,
  type TransitionFeed,
  type TransitionFeedOptions,
} from './observe/feed.ts';

// Seeing machines
export { toMermaid, mermaidFence, type MermaidOptions } from './inspect/mermaid.ts';
export {
  attachInspector,
  inspectStore,
  type InspectStoreOptions,
  type StoreInspection,
} from './inspect/inspector.ts';

// Exploring machines (generated vitest suites: `agentcharts/testing`)
export {
  ExplorationError,
  TraversalLimitError,
  exploreMachine,
  transitionTable,
  type ExploreOptions,
  type ExploredEdge,
  type ExploredGraph,
} from './testing/explore.ts';
export {
  formatCoverage,
  formatPath,
  planTransitionTests,
  type Coverage,
  type PlanOptions,
  type PlanProblem,
  type PlannedRejection,
  type PlannedState,
  type PlannedStep,
  type PlannedTransition,
  type TransitionPlan,
} from './testing/plan.ts';
export { ReplayError, replayPath } from './testing/replay.ts';
export { roundTripDifferences } from './testing/round-trip.ts';

// Properties of a chart, proven for every path (`agentcharts check`)
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
export {
  DEFAULT_CHECK_LIMIT,
  checkChart,
  type ChartCheck,
  type CheckOptions,
  type PropertyResult,
} from './check/check-chart.ts';
export {
  checkToJson,
  formatCheck,
  type ChartCheckJson,
  type PathJson,
  type PropertyJson,
} from './check/format.ts';
export {
  PropertyRefutedError,
  PropertyUnprovenError,
  assertProven,
  type PropertyRefutedFields,
  type PropertyUnprovenFields,
} from './check/assert.ts';
export type { CheckPath } from './check/paths.ts';
export type { PropertyStatus, Verdict } from './check/verdict.ts';

// Agents: only legal moves
export {
  legalEvents,
  sendableEvents,
  whyNot,
  type ActorLike,
  type BlockedReason,
  type LegalEvent,
  type LegalEventsOptions,
} from './agents/legal-events.ts';
export {
  executeMove,
  toolsFor,
  type AgentTool,
  type SendableActor,
  type ToolResult,
  type ToolsOptions,
} from './agents/tools.ts';
