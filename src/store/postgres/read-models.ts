/**
 * PostgreSQL's derived read models, as SQLite's (see ../sqlite/read-models.ts):
 * `actor_index` and `state_entries`, never written by a commit. PostgreSQL ids and
 * sequences are not in commit order, so the watermark is a transaction id: every
 * transition row records the transaction that wrote it (`tx`), and a refresh folds
 * in the rows of all transactions below the oldest one still running
 * (`pg_snapshot_xmin`) — each of them finished, so none is ever skipped. Queries
 * overlay the actors written at or after the watermark, so they are exact at any time.
 */
import type * as S from '../types.ts';
import { checkLimit } from '../rules.ts';
import type { Query } from './connection.ts';
import { boundConditions, whereClause } from './filters.ts';
import {
  ACTOR_AS_INDEX,
  currentActors,
  dirtyActors,
  INDEX_COLUMNS,
  REPLACE_INDEXED,
} from '../sql-common.ts';

type Transaction = <T>(work: (query: Query) => Promise<T>) => Promise<T>;

/** An advisory lock key serialising refreshes ('agentcharts read models'). */
const REFRESH_LOCK = 7_312_006_205;

const APPLIED = `(SELECT applied FROM read_model WHERE name = 'transitions')`;

/** Actors as the read models see them: the projection, actors written since overlaid. */
const CURRENT = currentActors(`tx >= ${APPLIED}`);

/** The common table expression `dirty`: actors written at or after the watermark. */
export const PG_DIRTY = dirtyActors(`tx >= ${APPLIED}`);

export class PostgresReadModels {
  constructor(
    private readonly query: Query,
    private readonly transaction: Transaction,
  ) {}

  /** Folds in the rows of every transaction finished since the last refresh. */
  refresh(): Promise<void> {
    return this.transaction(async (q) => {
      await q('SELECT pg_advisory_xact_lock($1)', [REFRESH_LOCK]);
      const [mark] = await q<{ applied: string; horizon: string }>(
        `SELECT applied::text, pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
         FROM read_model WHERE name = 'transitions'`,
      );
      if (!mark || mark.applied === mark.horizon) return;
      const range = [mark.applied, mark.horizon];
      await q(
        `INSERT INTO state_entries (to_state, at, actor_id, seq)
         SELECT to_state, at, actor_id, seq FROM transitions
         WHERE tx >= $1::xid8 AND tx < $2::xid8 AND from_state IS DISTINCT FROM to_state
         ON CONFLICT DO NOTHING`,
        range,
      );
      await q(
        `INSERT INTO actor_index (actor_id, ${INDEX_COLUMNS})
         SELECT id, ${ACTOR_AS_INDEX} FROM actors
         WHERE id IN (SELECT actor_id FROM transitions WHERE tx >= $1::xid8 AND tx < $2::xid8)
         ${REPLACE_INDEXED}`,
        range,
      );
      // An actor that committed keeps its timers in its snapshot from then on.
      await q(
        `DELETE FROM legacy_timers WHERE actor_id IN
           (SELECT actor_id FROM transitions WHERE tx >= $1::xid8 AND tx < $2::xid8)
           AND EXISTS (SELECT 1 FROM legacy_timers)`,
        range,
      );
      await q(`UPDATE read_model SET applied = $1::xid8 WHERE name = 'transitions'`, [
        mark.horizon,
      ]);
    });
  }

  rebuild(): Promise<{ actors: number; entries: number }> {
    return this.transaction(async (q) => {
      await q('SELECT pg_advisory_xact_lock($1)', [REFRESH_LOCK]);
      await q('TRUNCATE actor_index, state_entries');
      const [actors] = await q<{ n: number }>(
        `WITH i AS (INSERT INTO actor_index (actor_id, ${INDEX_COLUMNS})
           SELECT id, ${ACTOR_AS_INDEX} FROM actors RETURNING 1)
         SELECT count(*)::int AS n FROM i`,
      );
      const [entries] = await q<{ n: number }>(
        `WITH i AS (INSERT INTO state_entries (to_state, at, actor_id, seq)
           SELECT to_state, at, actor_id, seq FROM transitions
           WHERE from_state IS DISTINCT FROM to_state RETURNING 1)
         SELECT count(*)::int AS n FROM i`,
      );
      await q(
        `UPDATE read_model SET applied = pg_snapshot_xmin(pg_current_snapshot())
         WHERE name = 'transitions'`,
      );
      return { actors: actors?.n ?? 0, entries: entries?.n ?? 0 };
    });
  }

  countActors(query: S.ActorCountQuery): Promise<S.ActorCount[]> {
    const values: unknown[] = [];
    const where = whereClause(values, [
      ['machine_id =', query.machineId],
      ['user_id =', query.userId],
      ['updated_at >=', query.updatedSince],
    ]);
    return this.query<S.ActorCount>(
      `WITH ${CURRENT}
       SELECT machine_id AS "machineId", state, status, COUNT(*) AS count,
         COALESCE(SUM(updated_at - created_at), 0)::float8 AS "totalAgeMs"
       FROM current ${where}
       GROUP BY machine_id, state, status ORDER BY machine_id, state, status COLLATE "C"`,
      values,
    );
  }

  actorsInStates(query: S.StatesQuery): Promise<S.ActorDwell[]> {
    const values: unknown[] = [[...query.states], checkLimit(query.limit ?? 100, 'query')];
    const filters = [
      'state = ANY($1::text[])',
      ...boundConditions(values, [
        ['machine_id =', query.machineId],
        ['user_id =', query.userId],
        ['state_since <=', query.enteredBefore],
      ]),
    ];
    return this.query<S.ActorDwell>(
      `WITH ${CURRENT}
       SELECT actor_id AS "actorId", machine_id AS "machineId", state, status,
         state_since AS "stateSince", updated_at AS "updatedAt", user_id AS "userId"
       FROM current WHERE ${filters.join(' AND ')}
       ORDER BY state_since, actor_id LIMIT $2`,
      values,
    );
  }

  countStateEntries(query: S.StateEntryQuery): Promise<S.StateEntryCount[]> {
    return this.query<S.StateEntryCount>(
      `WITH entries AS (
         SELECT actor_id FROM state_entries WHERE to_state = ANY($1::text[]) AND at >= $2
         UNION ALL
         SELECT actor_id FROM transitions
         WHERE tx >= ${APPLIED} AND to_state = ANY($1::text[]) AND at >= $2
           AND from_state IS DISTINCT FROM to_state),
       e AS (SELECT actor_id, COUNT(*) AS count FROM entries
             GROUP BY actor_id HAVING COUNT(*) >= $3)
       SELECT e.actor_id AS "actorId", a.machine_id AS "machineId", a.state, a.status,
         e.count::int AS count
       FROM e JOIN actors a ON a.id = e.actor_id
       ORDER BY e.count DESC, e.actor_id LIMIT $4`,
      [
        [...query.toStates],
        query.since,
        Math.max(1, query.minCount ?? 1),
        checkLimit(query.limit ?? 100, 'query'),
      ],
    );
  }
}
