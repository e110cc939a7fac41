/**
 * The memory store's queries over its tables: rejections, actor counts, actors in
 * states, state entries and the transition feed. Plain scans: the memory store is
 * for tests and is the reference semantics of these queries.
 */
import { checkLimit, compareText } from './rules.ts';
import type {
  ActorCount,
  ActorCountQuery,
  ActorDwell,
  ActorRow,
  LeaseRow,
  MessageRow,
  RejectionRow,
  StateEntryCount,
  StateEntryQuery,
  StatesQuery,
  StepRow,
  TransitionFeedQuery,
  TransitionFeedRow,
  TransitionRow,
} from './types.ts';

/** Everything the memory store holds. */
export interface MemoryTables {
  actors: Map<string, ActorRow>;
  /** Transition rows by actor, in seq order. */
  transitions: Map<string, TransitionRow[]>;
  /** The earliest due time of each actor with pending timers (ActorWrite.nextDueAt). */
  nextDue: Map<string, number>;
  steps: Map<string, StepRow>;
  rejections: RejectionRow[];
  /** The user an actor works for (set at creation) and when it entered its current state. */
  meta: Map<string, { userId: string | null; stateSince: number }>;
  /** Lease columns of actors (absent: unowned). */
  leases: Map<string, Omit<LeaseRow, 'actorId'>>;
  /** Pending messages by id (ids grow in commit order). */
  messages: Map<number, MessageRow>;
  nextMessageId: number;
  /** The parent of each spawned actor. */
  parents: Map<string, string>;
}

export function newTables(): MemoryTables {
  return {
    actors: new Map(),
    transitions: new Map(),
    nextDue: new Map(),
    steps: new Map(),
    rejections: [],
    meta: new Map(),
    leases: new Map(),
    messages: new Map(),
    nextMessageId: 1,
    parents: new Map(),
  };
}

export function listRejections(
  t: MemoryTables,
  query: { since?: number; actorId?: string } = {},
): RejectionRow[] {
  return t.rejections
    .map((r, i) => ({ r, i }))
    .filter(
      ({ r }) =>
        (query.since === undefined || r.at >= query.since) &&
        (query.actorId === undefined || r.actorId === query.actorId),
    )
    .sort((a, b) => a.r.at - b.r.at || a.i - b.i)
    .map(({ r }) => ({ ...r }));
}

export function countRejections(
  t: MemoryTables,
  query: { since: number; until?: number; reason?: string },
): number {
  return t.rejections.filter(
    (r) =>
      r.at >= query.since &&
      (query.until === undefined || r.at < query.until) &&
      (query.reason === undefined || r.reason === query.reason),
  ).length;
}

export function countActors(t: MemoryTables, query: ActorCountQuery = {}): ActorCount[] {
  const groups = new Map<string, ActorCount>();
  for (const a of t.actors.values()) {
    if (query.machineId !== undefined && a.machineId !== query.machineId) continue;
    if (query.userId !== undefined && t.meta.get(a.id)?.userId !== query.userId) {
      continue;
    }
    if (query.updatedSince !== undefined && a.updatedAt < query.updatedSince) continue;
    const key = JSON.stringify([a.machineId, a.state, a.status]);
    const group = groups.get(key) ?? {
      machineId: a.machineId,
      state: a.state,
      status: a.status,
      count: 0,
      totalAgeMs: 0,
    };
    group.count++;
    group.totalAgeMs += a.updatedAt - a.createdAt;
    groups.set(key, group);
  }
  return [...groups.values()].sort(
    (x, y) =>
      compareText(x.machineId, y.machineId) ||
      compareText(x.state, y.state) ||
      compareText(x.status, y.status),
  );
}

export function actorsInStates(t: MemoryTables, query: StatesQuery): ActorDwell[] {
  const limit = checkLimit(query.limit ?? 100, 'query');
  const states = new Set(query.states);
  const found: ActorDwell[] = [];
  for (const a of t.actors.values()) {
    const meta = t.meta.get(a.id);
    if (meta === undefined || !states.has(a.state)) continue;
    if (query.machineId !== undefined && a.machineId !== query.machineId) continue;
    if (query.userId !== undefined && meta.userId !== query.userId) continue;
    if (query.enteredBefore !== undefined && meta.stateSince > query.enteredBefore) continue;
    found.push({
      actorId: a.id,
      machineId: a.machineId,
      state: a.state,
      status: a.status,
      stateSince: meta.stateSince,
      updatedAt: a.updatedAt,
      userId: meta.userId,
    });
  }
  return found
    .sort((x, y) => x.stateSince - y.stateSince || compareText(x.actorId, y.actorId))
    .slice(0, limit);
}

export function countStateEntries(t: MemoryTables, query: StateEntryQuery): StateEntryCount[] {
  const limit = checkLimit(query.limit ?? 100, 'query');
  const minCount = query.minCount ?? 1;
  const states = new Set(query.toStates);
  const found: StateEntryCount[] = [];
  for (const [actorId, rows] of t.transitions) {
    const count = rows.filter(
      (t) => t.at >= query.since && states.has(t.toState) && t.fromState !== t.toState,
    ).length;
    const actor = t.actors.get(actorId);
    if (actor === undefined || count === 0 || count < minCount) continue;
    found.push({
      actorId,
      machineId: actor.machineId,
      state: actor.state,
      status: actor.status,
      count,
    });
  }
  return found
    .sort((x, y) => y.count - x.count || compareText(x.actorId, y.actorId))
    .slice(0, limit);
}

export function transitionsSince(t: MemoryTables, query: TransitionFeedQuery): TransitionFeedRow[] {
  const limit = checkLimit(query.limit ?? 1000, 'query');
  const rows: TransitionFeedRow[] = [];
  for (const [actorId, history] of t.transitions) {
    const machineId = t.actors.get(actorId)?.machineId;
    if (machineId === undefined) continue;
    if (query.machineId !== undefined && machineId !== query.machineId) continue;
    for (const t of history) if (t.at >= query.since) rows.push({ ...t, machineId });
  }
  return rows
    .sort((x, y) => x.at - y.at || compareText(x.actorId, y.actorId) || x.seq - y.seq)
    .slice(0, limit);
}

/** The memory store answers every query from its tables: nothing is derived. */
