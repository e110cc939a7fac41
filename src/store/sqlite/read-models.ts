/**
 * SQLite's derived read models: `actor_index` (machine, state, status, user and
 * state entry time per actor, indexed for statistics, time-in-state alerts and
 * "a user's active agents"), `state_entries` (state-changing transitions by
 * target state and time, for retry flapping), `transition_feed` (every
 * transition by time, for the feed `tail` and streams follow) and
 * `transition_keys` (the log's (actor, seq) key, which the log itself does not
 * carry: ./log.ts).
 *
 * The commit never touches them. `read_model.applied` names the last transition
 * (rowid; SQLite serialises writers, so rowids grow in commit order and the log is
 * append-only) they include; a refresh applies what the log gained since, in one
 * transaction, off the commit path. Queries overlay the actors changed after
 * `applied` straight from the authoritative tables, so they are exact at any time,
 * on read-only connections too.
 */
import type Database from 'better-sqlite3';
import { checkLimit } from '../rules.ts';
import type * as S from '../types.ts';
import type { Statements } from './connection.ts';
import { LOG_ROW_COLUMNS } from './log.ts';
import {
  ACTOR_AS_INDEX,
  currentActors,
  INDEX_COLUMNS,
  REPLACE_INDEXED,
  SQLITE_LOG,
} from '../sql-common.ts';

/** Transitions applied per refresh statement: bounds one statement's memory. */
const CHUNK = 20_000;
/** An overlay this large is folded into the projection before a query (when writable). */
const STALE_AFTER = 5_000;

/** Actors as the read model sees them: the projection, with actors changed since overlaid. */
const CURRENT_ACTORS = currentActors('rowid > @applied', SQLITE_LOG);

export class SqliteReadModels {
  /** Whether timer rows of actors written before timers moved into snapshots remain. */
  private legacyTimers: boolean;

  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
    private readonly writable: boolean,
  ) {
    this.legacyTimers = writable && this.hasLegacyTimers();
  }

  private hasLegacyTimers(): boolean {
    return this.sql.get('SELECT EXISTS (SELECT 1 FROM legacy_timers)').pluck().get() === 1;
  }

  private applied(): number {
    return this.sql
      .get(`SELECT applied FROM read_model WHERE name = 'transitions'`)
      .pluck()
      .get() as number;
  }

  private head(): number {
    return (this.sql.get('SELECT MAX(rowid) FROM transitions').pluck().get() as number | null) ?? 0;
  }

  /** Whether every logged transition is folded in up to `applied` (no overlay to read). */
  foldedUpTo(applied: number): boolean {
    return this.head() <= applied;
  }

  /** The applied mark, after folding a large overlay in when this connection may write. */
  mark(): number {
    const applied = this.applied();
    if (this.writable && this.head() - applied > STALE_AFTER) {
      this.refresh();
      return this.applied();
    }
    return applied;
  }

  /** Applies the transitions logged since the last refresh. Returns how many. */
  refresh(): number {
    if (this.head() <= this.applied()) return 0;
    return this.db
      .transaction(() => {
        // Re-read under the write lock: another connection may have refreshed.
        let applied = this.applied();
        const head = this.head();
        const from = applied;
        while (applied < head) {
          const to = Math.min(head, applied + CHUNK);
          this.sql
            .get(
              `INSERT OR IGNORE INTO state_entries (to_state, at, actor_id, seq)
               SELECT to_state, at, actor_id, seq FROM transitions
               WHERE rowid > ? AND rowid <= ? AND from_state IS NOT to_state`,
            )
            .run(applied, to);
          this.sql
            .get(
              `INSERT OR IGNORE INTO transition_feed (at, actor_id, seq)
               SELECT at, actor_id, seq FROM transitions WHERE rowid > ? AND rowid <= ?`,
            )
            .run(applied, to);
          this.sql
            .get(
              `INSERT OR IGNORE INTO transition_keys (actor_id, seq, tx)
               SELECT actor_id, seq, tx FROM transitions WHERE tx > ? AND tx <= ?`,
            )
            .run(applied, to);
          this.sql
            .get(
              `INSERT INTO actor_index (actor_id, ${INDEX_COLUMNS})
               SELECT id, ${ACTOR_AS_INDEX} FROM actors
               WHERE id IN (SELECT actor_id FROM transitions WHERE rowid > ? AND rowid <= ?)
               ${REPLACE_INDEXED}`,
            )
            .run(applied, to);
          if (this.legacyTimers) {
            // An actor that committed keeps its timers in its snapshot from then on.
            this.sql
              .get(
                `DELETE FROM legacy_timers WHERE actor_id IN
                   (SELECT actor_id FROM transitions WHERE rowid > ? AND rowid <= ?)`,
              )
              .run(applied, to);
          }
          applied = to;
        }
        this.sql.get(`UPDATE read_model SET applied = ? WHERE name = 'transitions'`).run(head);
        if (this.legacyTimers) this.legacyTimers = this.hasLegacyTimers();
        return head - from;
      })
      .immediate();
  }

  /** Rebuilds both read models from the authoritative tables. */
  rebuild(): { actors: number; entries: number } {
    return this.db
      .transaction(() => {
        this.db.exec(
          `DELETE FROM actor_index; DELETE FROM state_entries; DELETE FROM transition_feed;
           DELETE FROM transition_keys;`,
        );
        this.db
          .prepare('INSERT INTO transition_keys SELECT actor_id, seq, tx FROM transitions')
          .run();
        this.db
          .prepare('INSERT INTO transition_feed SELECT at, actor_id, seq FROM transitions')
          .run();
        const actors = this.db
          .prepare(
            `INSERT INTO actor_index (actor_id, ${INDEX_COLUMNS}) SELECT id, ${ACTOR_AS_INDEX} FROM actors`,
          )
          .run().changes;
        const entries = this.db
          .prepare(
            `INSERT INTO state_entries (to_state, at, actor_id, seq)
             SELECT to_state, at, actor_id, seq FROM transitions WHERE from_state IS NOT to_state`,
          )
          .run().changes;
        this.sql
          .get(`UPDATE read_model SET applied = ? WHERE name = 'transitions'`)
          .run(this.head());
        return { actors, entries };
      })
      .immediate();
  }

  countActors(query: S.ActorCountQuery): S.ActorCount[] {
    const filters: string[] = [];
    if (query.machineId !== undefined) filters.push('machine_id = @machineId');
    if (query.userId !== undefined) filters.push('user_id = @userId');
    if (query.updatedSince !== undefined) filters.push('updated_at >= @updatedSince');
    const where = filters.length > 0 ? `WHERE ${filters.join(' AND ')}` : '';
    return this.sql
      .get(
        `WITH ${CURRENT_ACTORS}
         SELECT machine_id AS machineId, state, status, COUNT(*) AS count,
           TOTAL(updated_at - created_at) AS totalAgeMs
         FROM current ${where}
         GROUP BY machine_id, state, status ORDER BY machine_id, state, status`,
      )
      .all({ ...query, applied: this.mark() }) as S.ActorCount[];
  }

  actorsInStates(query: S.StatesQuery): S.ActorDwell[] {
    const filters = ['state IN (SELECT value FROM json_each(@states))'];
    if (query.machineId !== undefined) filters.push('machine_id = @machineId');
    if (query.userId !== undefined) filters.push('user_id = @userId');
    if (query.enteredBefore !== undefined) filters.push('state_since <= @enteredBefore');
    return this.sql
      .get(
        `WITH ${CURRENT_ACTORS}
         SELECT actor_id AS actorId, machine_id AS machineId, state, status,
           state_since AS stateSince, updated_at AS updatedAt, user_id AS userId
         FROM current WHERE ${filters.join(' AND ')}
         ORDER BY state_since, actor_id LIMIT @limit`,
      )
      .all({
        ...query,
        states: JSON.stringify(query.states),
        limit: checkLimit(query.limit ?? 100, 'query'),
        applied: this.mark(),
      }) as S.ActorDwell[];
  }

  /** Transition rows at or after `since`, by time, actor and seq (the feed `tail` follows). */
  transitionsSince(query: S.TransitionFeedQuery): S.TransitionFeedRow[] {
    const machine = query.machineId !== undefined ? 'WHERE a.machine_id = @machineId' : '';
    return this.sql
      .get(
        `WITH feed(at, actor_id, seq, tx) AS (
           SELECT f.at, f.actor_id, f.seq, k.tx FROM transition_feed f
             JOIN transition_keys k ON k.actor_id = f.actor_id AND k.seq = f.seq
             WHERE f.at >= @since
           UNION ALL
           SELECT at, actor_id, seq, tx FROM transitions WHERE tx > @applied AND at >= @since)
         SELECT ${LOG_ROW_COLUMNS}, a.machine_id AS machineId
         FROM feed f
         JOIN transitions t ON t.tx = f.tx
         JOIN actors a ON a.id = f.actor_id ${machine}
         ORDER BY f.at, f.actor_id, f.seq LIMIT @limit`,
      )
      .all({
        since: query.since,
        machineId: query.machineId,
        limit: checkLimit(query.limit ?? 1000, 'query'),
        applied: this.mark(),
      }) as S.TransitionFeedRow[];
  }

  countStateEntries(query: S.StateEntryQuery): S.StateEntryCount[] {
    return this.sql
      .get(
        `WITH entries(actor_id) AS (
           SELECT actor_id FROM state_entries
           WHERE to_state IN (SELECT value FROM json_each(@states)) AND at >= @since
           UNION ALL
           SELECT actor_id FROM transitions
           WHERE rowid > @applied AND to_state IN (SELECT value FROM json_each(@states))
             AND at >= @since AND from_state IS NOT to_state),
         e AS (SELECT actor_id, COUNT(*) AS count FROM entries
               GROUP BY actor_id HAVING COUNT(*) >= @minCount)
         SELECT e.actor_id AS actorId, a.machine_id AS machineId, a.state, a.status, e.count
         FROM e JOIN actors a ON a.id = e.actor_id
         ORDER BY e.count DESC, e.actor_id LIMIT @limit`,
      )
      .all({
        states: JSON.stringify(query.toStates),
        since: query.since,
        minCount: Math.max(1, query.minCount ?? 1),
        limit: checkLimit(query.limit ?? 100, 'query'),
        applied: this.mark(),
      }) as S.StateEntryCount[];
  }
}
