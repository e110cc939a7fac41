/**
 * SQL text the SQLite and PostgreSQL stores share: the read models' columns and
 * their "current actors" overlay, and the pieces of released migrations both
 * dialects execute to the byte.
 */
import type { ActorWrite, TransitionRow } from './types.ts';

/**
 * The values a write gives the actor row that both stores' INSERTs list first, in
 * their order: id, machine_id, chart_version, version, state, status, snapshot,
 * updated_at, head_hash, next_due_at.
 */
export function actorValues(write: ActorWrite): unknown[] {
  const { actor } = write;
  return [
    actor.id,
    actor.machineId,
    actor.chartVersion,
    actor.version,
    actor.state,
    actor.status,
    actor.snapshot,
    actor.updatedAt,
    actor.headHash,
    write.nextDueAt ?? null,
  ];
}

/**
 * A transition row's values after its actor id, in the order both stores' INSERTs
 * list its columns: seq, from_state, to_state, event_type, event, at, metadata,
 * prev_hash, hash, chart_version, snapshot_hash.
 */
export function transitionValues(t: TransitionRow): unknown[] {
  return [
    t.seq,
    t.fromState,
    t.toState,
    t.eventType,
    t.event,
    t.at,
    t.metadata,
    t.prevHash,
    t.hash,
    t.chartVersion,
    t.snapshotHash,
  ];
}

/** `actor_index`'s columns after its key, in table order. */
export const INDEX_COLUMNS =
  'machine_id, state, status, user_id, state_since, created_at, updated_at, next_due_at';

/** The same columns read from `actors`, `state_since` falling back to `updated_at` where unset. */
export const ACTOR_AS_INDEX = `machine_id, state, status, user_id, COALESCE(state_since, updated_at),
  created_at, updated_at, next_due_at`;

/** The tail of an `INSERT INTO actor_index …` that replaces the rows of actors already in it. */
export const REPLACE_INDEXED = `ON CONFLICT (actor_id) DO UPDATE SET machine_id = excluded.machine_id,
  state = excluded.state, status = excluded.status, user_id = excluded.user_id,
  state_since = excluded.state_since, created_at = excluded.created_at,
  updated_at = excluded.updated_at, next_due_at = excluded.next_due_at`;

/**
 * The common table expression `dirty`, for a `WITH`: the actors written since the
 * read models' watermark (`changedSince` picks the transitions written since).
 * Every commit writes a transition row, so no other actor differs from its row in
 * the projection.
 */
export function dirtyActors(changedSince: string, log = 'transitions'): string {
  return `dirty(id) AS (SELECT DISTINCT actor_id FROM ${log} WHERE ${changedSince})`;
}

/**
 * SQLite's log for {@link dirtyActors}: read by its row ids. Left to choose, SQLite
 * scans the whole log's (actor, seq) index for the distinct actors instead of the
 * few rows past the watermark (32 ms instead of 0.1 ms on 700k rows).
 */
export const SQLITE_LOG = 'transitions NOT INDEXED';

/**
 * The common table expression `due(id, due)` (after `dirty`): up to `limit`
 * actors with a timer due at or before `now`, earliest first — found through the
 * projection's index of next due times, with the dirty actors read from their rows.
 * `also` adds a condition on the actor row `a` (a lease that may be taken).
 */
export function dueActors(now: string, limit: string, also = 'TRUE'): string {
  return `due(id, due) AS (
    SELECT * FROM (SELECT i.actor_id, i.next_due_at FROM actor_index i
      JOIN actors a ON a.id = i.actor_id
      WHERE i.next_due_at <= ${now} AND i.actor_id NOT IN (SELECT id FROM dirty) AND ${also}
      ORDER BY i.next_due_at, i.actor_id LIMIT ${limit}) projected
    UNION ALL
    SELECT a.id, a.next_due_at FROM actors a
      WHERE a.id IN (SELECT id FROM dirty) AND a.next_due_at <= ${now} AND ${also})`;
}

/**
 * The common table expression `picked(id)` (after `dirty`): up to `limit` actors
 * of status `status` (an SQL literal: a partial index serves `'active'`) with ids
 * greater than `afterId`, by id, that pass `also` (conditions on the actor row
 * `a`) — found through the projection, the dirty actors read from their rows.
 */
export function actorsByStatus(
  status: string,
  afterId: string,
  limit: string,
  also = 'TRUE',
): string {
  return `picked(id) AS (
    SELECT * FROM (SELECT i.actor_id FROM actor_index i JOIN actors a ON a.id = i.actor_id
      WHERE i.status = ${status} AND i.actor_id > ${afterId}
        AND i.actor_id NOT IN (SELECT id FROM dirty) AND ${also}
      ORDER BY i.actor_id LIMIT ${limit}) projected
    UNION ALL
    SELECT a.id FROM actors a
      WHERE a.id IN (SELECT id FROM dirty) AND a.status = ${status} AND a.id > ${afterId}
        AND ${also})`;
}

/**
 * The common table expressions `dirty` and `current`, for a `WITH`: actors as the
 * read models see them, the projection with the actors written since its watermark
 * overlaid. `changedSince` picks the transitions written since the watermark.
 */
export function currentActors(changedSince: string, log = 'transitions'): string {
  return `
  ${dirtyActors(changedSince, log)},
  current(actor_id, ${INDEX_COLUMNS}) AS (
    SELECT actor_id, ${INDEX_COLUMNS} FROM actor_index
      WHERE actor_id NOT IN (SELECT id FROM dirty)
    UNION ALL
    SELECT id, ${ACTOR_AS_INDEX} FROM actors WHERE id IN (SELECT id FROM dirty))`;
}

// Released migrations (PostgreSQL version 2, SQLite version 3: observability) must
// execute exactly the text they always did. What follows is part of that text, to
// the byte: never edit it; a new migration writes its own SQL. Each piece stands
// on a line of its own in the migration, after six spaces.

/**
 * Sets `state_since` of every actor to the time of its last transition that changed
 * the state label (`changed`: the dialect's `from_state` ≠ `to_state` test).
 */
export function backfillStateSince(changed: string): string {
  return `UPDATE actors SET state_since = COALESCE(
        (SELECT t.at FROM transitions t
         WHERE t.actor_id = actors.id AND ${changed}
         ORDER BY t.seq DESC LIMIT 1),
        updated_at);`;
}

/** Drops the two version-1 indexes the new ones replace; indexes users' actors and the feed. */
export const OBSERVABILITY_INDEXES = `DROP INDEX actors_machine_state;
      DROP INDEX actors_state;
      CREATE INDEX actors_user_state ON actors (user_id, state) WHERE user_id IS NOT NULL;
      CREATE INDEX transitions_at ON transitions (at);
      CREATE INDEX transitions_to_state_at ON transitions (to_state, at);`;

/**
 * The rows of the `state_transitions` view (views migration: PostgreSQL version 6,
 * SQLite version 5): task-lifecycle transitions that changed the state.
 */
export const TASK_STATE_CHANGES = `FROM transitions t JOIN actors a ON a.id = t.actor_id
        WHERE a.machine_id = 'task-lifecycle' AND t.from_state IS NOT NULL;`;
