/** The options of a durable actor. */
import type { AnyStateMachine, InputFrom } from 'xstate';
import type { Logger } from 'pino';
import type { EventSchemas, SnapshotMigration } from '../core/chart.ts';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/types.ts';
import type { InspectorLike } from './inspection.ts';

export interface DurableActorOptions<TLogic extends AnyStateMachine> {
  /** Actor id; the key of its row, its history and its steps. */
  id: string;
  store: Store;
  /** Input for a new actor (ignored when the actor already exists). */
  input?: InputFrom<TLogic>;
  clock?: Clock;
  logger?: Logger;
  /** Snapshot version of the chart (default 1) and migrations from older ones. */
  version?: number;
  migrations?: Readonly<Record<number, SnapshotMigration>>;
  /**
   * Event schemas by type. Default: the machine's (`setup({ schemas })`) or its
   * chart's (`defineChart(machine, { events })`). With none of those a
   * `NoEventSchemasWarning` is emitted once; `false` checks events by type alone,
   * on purpose, without it.
   */
  schemas?: EventSchemas | false;
  maxEventBytes?: number;
  /**
   * `load-or-create` (default), `load` (must exist) or `create` (must not exist).
   * `create` reads nothing first: the creation's compare-and-set refuses an actor
   * that exists (ConcurrencyError), so on PostgreSQL it costs one round trip where
   * `load-or-create` costs two.
   */
  mode?: 'load-or-create' | 'load' | 'create';
  /**
   * The actor's system id, as `createActor(machine, { systemId })` gives it: any
   * actor of its tree finds it with `system.get(systemId)`. Recorded at creation
   * (ignored when the actor already exists); for an actor a chart spawns, its
   * parent's `spawnChild(…, { systemId })` gives it instead.
   */
  systemId?: string;
  /** Extra metadata recorded on the creation row (JSON-serialisable). */
  metadata?: Record<string, unknown>;
  /**
   * The user the actor works for (the agent document's `user_id`), recorded at
   * creation and indexed for "active agents of a user" queries.
   */
  userId?: string;
  /**
   * An inspector in XState's sense (`{ inspect }`, e.g. `createWebSocketInspector()`
   * from `@statelyai/inspect`): every committed transition is reported to it as
   * XState's own actor would, with the machine definition.
   */
  inspect?: InspectorLike;
}
