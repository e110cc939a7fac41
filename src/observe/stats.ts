/**
 * The collection statistics of “Agent Status Models” and the "active agents for a
 * user" of “Agent State Machine” (v1.0), computed from the store's grouped counts
 * (one indexed query), never by loading every actor.
 */
import type { ActorCount, ActorDwell, Store } from '../store/types.ts';
import {
  classifyState,
  isActiveClass,
  isFinishedClass as isFinished,
  type StateClass,
} from '../core/meanings.ts';
import { EXPECTED, isOptionsBag, isStore, requireArg, requireOptions } from '../core/options.ts';

/** One (machine, state, status) group with what it means. */
export interface StateGroup extends ActorCount {
  class: StateClass;
}

/** The `AgentStatistics` of “Agent Status Models”, for actors of any chart. */
export interface CollectionStatistics {
  total: number;
  /** Actors per state label, summed over machines (the document's `status_counts`). */
  statusCounts: Record<string, number>;
  /** Actors per state class. */
  classCounts: Record<StateClass, number>;
  /** Working, waiting or retrying (the document's `total_active`). */
  totalActive: number;
  totalCompleted: number;
  totalFailed: number;
  totalTerminated: number;
  /**
   * Mean of (last transition − creation) over finished actors, in ms, or null when
   * none has finished (the document's `avg_execution_time`).
   */
  avgExecutionTimeMs: number | null;
  /** The groups behind the numbers, ordered by machine, state, status. */
  groups: StateGroup[];
}

export interface StatisticsQuery {
  machineId?: string | undefined;
  userId?: string | undefined;
  /** Only actors with a transition at or after this time (ms). */
  updatedSince?: number | undefined;
}

/** Folds grouped counts into the statistics of “Agent Status Models”. */
export function statisticsFromCounts(counts: readonly ActorCount[]): CollectionStatistics {
  const stats: CollectionStatistics = {
    total: 0,
    statusCounts: {},
    classCounts: {
      idle: 0,
      working: 0,
      waiting: 0,
      paused: 0,
      retrying: 0,
      completed: 0,
      failed: 0,
      terminated: 0,
    },
    totalActive: 0,
    totalCompleted: 0,
    totalFailed: 0,
    totalTerminated: 0,
    avgExecutionTimeMs: null,
    groups: [],
  };
  let finished = 0;
  let finishedAge = 0;
  for (const group of counts) {
    const cls = classifyState(group.machineId, group.state, group.status);
    stats.groups.push({ ...group, class: cls });
    stats.total += group.count;
    stats.statusCounts[group.state] = (stats.statusCounts[group.state] ?? 0) + group.count;
    stats.classCounts[cls] += group.count;
    if (isActiveClass(cls)) stats.totalActive += group.count;
    if (cls === 'completed') stats.totalCompleted += group.count;
    if (cls === 'failed') stats.totalFailed += group.count;
    if (cls === 'terminated') stats.totalTerminated += group.count;
    if (isFinished(cls)) {
      finished += group.count;
      finishedAge += group.totalAgeMs;
    }
  }
  stats.avgExecutionTimeMs = finished > 0 ? finishedAge / finished : null;
  return stats;
}

/**
 * Collection statistics of the actors a query selects.
 *
 * @example
 * const stats = await collectionStatistics(store, { machineId: 'task-lifecycle' });
 * console.log(stats.totalActive, stats.totalFailed, stats.avgExecutionTimeMs);
 */
export async function collectionStatistics(
  store: Store,
  query: StatisticsQuery = {},
): Promise<CollectionStatistics> {
  requireArg('collectionStatistics', 'store', isStore(store), EXPECTED.store);
  requireArg('collectionStatistics', 'query', isOptionsBag(query), EXPECTED.options);
  return statisticsFromCounts(await store.countActors(query));
}

/**
 * The JSON shape of `AgentStatistics` in “Agent Status Models” (snake_case, execution time
 * in seconds).
 */
export interface SeedStatistics {
  status_counts: Record<string, number>;
  total_active: number;
  total_completed: number;
  total_failed: number;
  avg_execution_time: number | null;
}

export function toSeedStatistics(stats: CollectionStatistics): SeedStatistics {
  requireArg(
    'toSeedStatistics',
    'stats',
    Array.isArray((stats as { groups?: unknown } | null)?.groups),
    'collection statistics (what collectionStatistics returns)',
  );
  return {
    status_counts: stats.statusCounts,
    total_active: stats.totalActive,
    total_completed: stats.totalCompleted,
    total_failed: stats.totalFailed,
    avg_execution_time: stats.avgExecutionTimeMs === null ? null : stats.avgExecutionTimeMs / 1000,
  };
}

/**
 * The "active agents for a user" of “Agent State Machine” (v1.0): the user's actors
 * in a working, waiting or retrying state (not idle, paused or finished), longest in
 * their state first. Two indexed queries: the user's state labels, then the actors in
 * the active ones.
 *
 * @example
 * const agents = await activeAgentsForUser(store, 'user_2x');
 */
export async function activeAgentsForUser(
  store: Store,
  userId: string,
  options: { machineId?: string | undefined; limit?: number | undefined } = {},
): Promise<ActorDwell[]> {
  requireArg('activeAgentsForUser', 'store', isStore(store), EXPECTED.store);
  requireArg('activeAgentsForUser', 'userId', typeof userId === 'string', EXPECTED.string);
  requireOptions('activeAgentsForUser', options);
  const groups = await store.countActors({ userId, machineId: options.machineId });
  const states = [
    ...new Set(
      groups
        .filter((g) => isActiveClass(classifyState(g.machineId, g.state, g.status)))
        .map((g) => g.state),
    ),
  ];
  if (states.length === 0) return [];
  const found = await store.actorsInStates({
    states,
    userId,
    machineId: options.machineId,
    limit: options.limit ?? 100,
  });
  // A label can be active for one status and finished for another (an XState error).
  return found.filter((d) => isActiveClass(classifyState(d.machineId, d.state, d.status)));
}
