/**
 * SQL text the SQLite and PostgreSQL stores share: the read models' columns and
 * their "current actors" overlay, and the pieces of released migrations both
 * dialects execute to the byte.
 */

/** `actor_index`'s columns after its key, in table order. */
export const INDEX_COLUMNS =
  'machine_id, state, status, user_id, state_since, created_at, updated_at';

/** The same columns read from `actors`, `state_since` falling back to `updated_at` where unset. */
export const ACTOR_AS_INDEX = `machine_id, state, status, user_id, COALESCE(state_since, updated_at),
  created_at, updated_at`;

/** The tail of an `INSERT INTO actor_index …` that replaces the rows of actors already in it. */
export const REPLACE_INDEXED = `ON CONFLICT (actor_id) DO UPDATE SET machine_id = excluded.machine_id,
  state = excluded.state, status = excluded.status, user_id = excluded.user_id,
  state_since = excluded.state_since, created_at = excluded.created_at,
  updated_at = excluded.updated_at`;

/**
 * The common table expressions `dirty` and `current`, for a `WITH`: actors as the
 * read models see them, the projection with the actors written since its watermark
 * overlaid. `changedSince` picks the transitions written since the watermark.
 */
export function currentActors(changedSince: string): string {
  return `
  dirty(id) AS (SELECT DISTINCT actor_id FROM transitions WHERE ${changedSince}),
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
