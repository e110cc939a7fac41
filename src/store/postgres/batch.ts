/**
 * A PostgreSQL batch of writes as few statements as it takes: one for the actors
 * it creates and one for those it updates, per round of distinct actors, each
 * passing the writes' columns as arrays. {@link phasesOf} is also the order in
 * which every batch of every process locks rows.
 */
import { actorValues, transitionValues } from '../sql-common.ts';
import type * as S from '../types.ts';

/** The writes' columns as arrays, shared by {@link UPDATE_MANY} and {@link CREATE_MANY}. */
const MANY_ROWS = `unnest($1::text[], $2::text[], $3::integer[], $4::integer[], $5::text[],
      $6::text[], $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::integer[],
      $12::text[], $13::text[], $14::text[], $15::text[], $16::bigint[], $17::text[],
      $18::text[], $19::text[], $20::integer[], $21::text[]`;
const MANY_NAMES = `id, machine_id, chart_version, version, state, status, snapshot, updated_at,
        head_hash, next_due_at, seq, from_state, to_state, event_type, event, at, metadata,
        prev_hash, hash, t_chart_version, snapshot_hash`;
/** The audit rows of the actors a CTE `a` wrote. */
const MANY_TRANSITIONS = `t AS (
    INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
      metadata, prev_hash, hash, chart_version, snapshot_hash)
    SELECT w.id, w.seq, w.from_state, w.to_state, w.event_type, w.event, w.at, w.metadata,
      w.prev_hash, w.hash, w.t_chart_version, w.snapshot_hash FROM w JOIN a ON a.id = w.id
    RETURNING 1)
  SELECT id FROM a`;

/**
 * A batch's updates of distinct actors as one statement: the rows are locked first,
 * in actor-id order, then updated where the version and head hash (and, when
 * fenced, the lease) still hold, and the audit rows of those inserted. Its rows are the ids it
 * updated. Parameters: one array per column, the writes in actor-id order, then
 * the expected versions, lease owners and lease times ({@link manyStatement}).
 */
const UPDATE_MANY = `WITH w AS (
    SELECT * FROM ${MANY_ROWS}, $22::integer[], $23::text[], $24::bigint[])
      AS w (${MANY_NAMES}, expected, owner, lease_now)),
  lk AS MATERIALIZED (
    SELECT id FROM actors WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
  a AS (
    UPDATE actors x SET machine_id = w.machine_id, chart_version = w.chart_version,
      version = w.version, state = w.state, status = w.status, snapshot = w.snapshot,
      updated_at = w.updated_at, head_hash = w.head_hash, next_due_at = w.next_due_at,
      state_since = CASE WHEN x.state = w.state THEN x.state_since ELSE w.at END
    FROM w JOIN lk ON lk.id = w.id
    WHERE x.id = w.id AND x.version = w.expected AND x.head_hash = w.prev_hash
      AND (w.owner IS NULL OR (x.owner = w.owner AND x.lease_until >= w.lease_now))
    RETURNING x.id),
  ${MANY_TRANSITIONS}`;

/**
 * A batch's creations as one statement, inserted in actor-id order (bytes, as
 * `actors.id` and every other statement order them: the parameter's own collation
 * is the database's); an id that exists is skipped (a miss). Parameters: as
 * {@link UPDATE_MANY}'s first 21, then the creation times and user ids.
 */
const CREATE_MANY = `WITH w AS (
    SELECT * FROM ${MANY_ROWS}, $22::bigint[], $23::text[])
      AS w (${MANY_NAMES}, created_at, user_id)),
  a AS (
    INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
      created_at, updated_at, head_hash, next_due_at, user_id, state_since)
    SELECT id, machine_id, chart_version, version, state, status, snapshot, created_at,
      updated_at, head_hash, next_due_at, user_id, at FROM w ORDER BY id COLLATE "C"
    ON CONFLICT (id) DO NOTHING RETURNING id),
  ${MANY_TRANSITIONS}`;

/** {@link UPDATE_MANY} or {@link CREATE_MANY} for writes of distinct actors, in actor-id order. */
export function manyStatement(
  writes: readonly S.ActorWrite[],
  create: boolean,
): { name: string; text: string; values: unknown[][] } {
  const columns: unknown[][] = [];
  for (const write of writes) {
    const row = [...actorValues(write), ...transitionValues(write.transition)];
    if (create) row.push(write.actor.createdAt, write.userId ?? null);
    else row.push(write.expectedVersion, write.lease?.owner ?? null, write.lease?.now ?? null);
    row.forEach((value, i) => (columns[i] ??= []).push(value));
  }
  return create
    ? { name: 'ac_create_many', text: CREATE_MANY, values: columns }
    : { name: 'ac_update_many', text: UPDATE_MANY, values: columns };
}

/**
 * The order in which a batch locks rows, the same in every process so that no two
 * batches deadlock: round by round (the k-th write of each actor in round k, so an
 * actor's writes keep their order), and within a round the actors it creates in
 * actor-id order, then the rows it updates in actor-id order.
 *
 * Creations go first because a creation can wait on an update: inserting an id
 * that exists (a creation decided before another process created the actor)
 * waits for the transaction updating that row, to learn whether the id stays
 * taken. Were updates first, a batch that updated A and then created B (which
 * exists) would wait for a batch updating B, which, having updated B, waits to
 * create A: a deadlock. With creations first a batch holds no row of an existing
 * actor while it creates, and its updates never wait on a creation under way (a
 * row not yet committed is not there for them). A creation is always an actor's
 * first write of a batch, so only round 0 has any (the committer sends the writes
 * of an actor written more than once alone, ./commit.ts). (Mixing the two in one
 * actor-id order would not do either: a batch that updated A then created B could
 * wait on B, created by a batch that waits on A.) Returns each round's creations
 * and updates; `sorted` is by actor, each actor's writes in batch order.
 */
export function phasesOf<T extends { write: S.ActorWrite }>(sorted: readonly T[]): T[][] {
  const rounds: Array<{ updates: T[]; creates: T[] }> = [];
  let actor: string | undefined;
  let k = 0;
  for (const entry of sorted) {
    k = entry.write.actorId === actor ? k + 1 : 0;
    actor = entry.write.actorId;
    const round = (rounds[k] ??= { updates: [], creates: [] });
    (entry.write.expectedVersion === 0 ? round.creates : round.updates).push(entry);
  }
  return rounds.flatMap((r) => [r.creates, r.updates]).filter((phase) => phase.length > 0);
}
