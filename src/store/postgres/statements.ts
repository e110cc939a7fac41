/**
 * The statement that applies one write to PostgreSQL: the actor row (insert, or
 * compare-and-set update) with its audit row and whatever else the transition
 * wrote (a consumed message, messages sent, steps begun, a parent link), all in
 * one statement of data-modifying CTEs that act only when the actor row did. One
 * statement is atomic on its own: a write that loses its race writes nothing, and
 * needs no savepoint, no BEGIN and no COMMIT.
 */
import { actorValues, transitionValues } from '../sql-common.ts';
import type * as S from '../types.ts';

/** A prepared statement (`name` identifies its text). */
export interface WriteStatement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * The statement's main part: the audit row of the actor CTE `a` wrote, nothing
 * when `a` wrote nothing. So its row count is 1 when the actor row was written, 0
 * when nothing was: the statement returns no rows (a CTE returning the count, read
 * by a final SELECT, cost 17 µs more per commit, 4%). Parameters $11-$21.
 */
const TRANSITION = `
  INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
    metadata, prev_hash, hash, chart_version, snapshot_hash)
  SELECT id, $11::integer, $12::text, $13::text, $14::text, $15::text, $16::bigint,
    $17::text, $18::text, $19::text, $20::integer, $21::text FROM a`;

const ACTOR_COLUMNS = `id, machine_id, chart_version, version, state, status, snapshot,
      created_at, updated_at, head_hash, next_due_at, user_id, state_since`;

/**
 * Creation: $22 created_at, $23 user id. Nothing happens when the id exists.
 * Parameters shared by creation and update: $1 id, $2 machine, $3 chart version,
 * $4 version, $5 state, $6 status, $7 snapshot, $8 updated_at, $9 head hash,
 * $10 next due time, $11-$21 the transition row.
 */
const CREATE_ACTOR = `WITH a AS (
    INSERT INTO actors (${ACTOR_COLUMNS})
    VALUES ($1, $2, $3, $4, $5, $6, $7, $22, $8, $9, $10, $23, $16)
    ON CONFLICT (id) DO NOTHING RETURNING id)${TRANSITION}`;

/**
 * Update: compare-and-set on version $22 and on the head hash the transition
 * follows ($18, its prev_hash: a write made on top of another that was refused
 * finds its version written by someone else); a fenced write also needs owner
 * $23's unexpired lease at $24. No index of `actors` holds a column a send changes, so
 * with the table's fillfactor the update stays a heap-only tuple. `guard` is a
 * further condition (the consumed message still there).
 */
const updateActor = (fenced: boolean, guard = '') => `
  a AS (
    UPDATE actors SET machine_id = $2, chart_version = $3, version = $4, state = $5,
      status = $6, snapshot = $7, updated_at = $8, head_hash = $9, next_due_at = $10,
      state_since = CASE WHEN state = $5 THEN state_since ELSE $16::bigint END
    WHERE id = $1 AND version = $22 AND head_hash = $18::text
      ${fenced ? 'AND owner = $23 AND lease_until >= $24' : ''}${guard}
    RETURNING id)`;
const UPDATE_ACTOR = `WITH${updateActor(false)}${TRANSITION}`;
const UPDATE_ACTOR_FENCED = `WITH${updateActor(true)}${TRANSITION}`;

/**
 * The one statement that applies `write`. Undefined for a write that cannot match:
 * a fenced create (no lease can be held on a row that does not exist yet). A write
 * without extra rows runs the plain statement, which the benchmark's raw baseline
 * runs too.
 *
 * @internal
 */
export function writeStatement(write: S.ActorWrite): WriteStatement | undefined {
  const { expectedVersion, actor, transition: t, lease } = write;
  if (expectedVersion === 0 && lease !== undefined) return undefined;
  const values: unknown[] = [...actorValues(write), ...transitionValues(t)];
  if (expectedVersion === 0) values.push(actor.createdAt, write.userId ?? null);
  else {
    values.push(expectedVersion);
    if (lease !== undefined) values.push(lease.owner, lease.now);
  }
  if (hasExtras(write)) return withExtras(write, values);
  if (expectedVersion === 0) return { name: 'ac_create', text: CREATE_ACTOR, values };
  return lease !== undefined
    ? { name: 'ac_update_fenced', text: UPDATE_ACTOR_FENCED, values }
    : { name: 'ac_update', text: UPDATE_ACTOR, values };
}

/** Whether a write has rows beyond its actor and audit rows. */
export function hasExtras(write: S.ActorWrite): boolean {
  return (
    write.consumeMessage !== undefined ||
    (write.messagesOut?.length ?? 0) > 0 ||
    (write.stepsBegin?.length ?? 0) > 0 ||
    write.parentId !== undefined
  );
}

/**
 * A write with extra rows as one statement; `values` holds the plain statement's
 * parameters, the extras' are appended.
 *
 * - A consumed message is locked first (`mk`, `FOR UPDATE`): while it is locked
 *   nobody else can consume or drop it, so the actor row is written only if the
 *   message is still there, and the message is deleted only if the actor row was
 *   written. A write that finds it gone (delivered or dropped meanwhile) writes
 *   nothing. The message's row is the only lock taken before the actor's, and no
 *   statement holds an actor row while it waits for a message, so this order
 *   closes no cycle.
 * - Messages sent are inserted in their order (ids ascending), steps begun once
 *   per key, and a created child names its parent on its row.
 */
function withExtras(write: S.ActorWrite, values: unknown[]): WriteStatement {
  const param = (value: unknown) => `$${values.push(value)}`;
  const create = write.expectedVersion === 0;
  const consume = write.consumeMessage !== undefined;
  const out = write.messagesOut ?? [];
  const steps = write.stepsBegin ?? [];
  const ctes: string[] = [];
  let guard = '';
  if (consume) {
    const id = param(write.consumeMessage);
    ctes.push(`
  mk AS MATERIALIZED (
    SELECT id FROM messages WHERE id = ${id}::bigint AND to_actor = $1 FOR UPDATE)`);
    guard = ' AND EXISTS (SELECT 1 FROM mk)';
  }
  if (create) {
    const parent = param(write.parentId ?? null);
    ctes.push(`
  a AS (
    INSERT INTO actors (${ACTOR_COLUMNS}, parent_id)
    SELECT $1::text, $2::text, $3::integer, $4::integer, $5::text, $6::text, $7::text,
      $22::bigint, $8::bigint, $9::text, $10::bigint, $23::text, $16::bigint, ${parent}::text
    WHERE TRUE${guard}
    ON CONFLICT (id) DO NOTHING RETURNING id)`);
  } else {
    ctes.push(updateActor(write.lease !== undefined, guard));
  }
  if (consume) {
    ctes.push(`
  m AS (DELETE FROM messages WHERE id IN (SELECT id FROM mk) AND EXISTS (SELECT 1 FROM a)
    RETURNING 1)`);
  }
  if (out.length > 0) {
    const [to, idx, kind, body] = [
      param(out.map((m) => m.to)),
      param(out.map((m) => m.idx)),
      param(out.map((m) => m.kind)),
      param(out.map((m) => m.body)),
    ];
    ctes.push(`
  o AS (
    INSERT INTO messages (to_actor, from_actor, from_seq, idx, kind, body, at)
    SELECT x.to_actor, a.id, $11::integer, x.idx, x.kind, x.body, $16::bigint
    FROM a, unnest(${to}::text[], ${idx}::int[], ${kind}::text[], ${body}::text[])
      AS x (to_actor, idx, kind, body)
    ORDER BY x.idx RETURNING 1)`);
  }
  if (steps.length > 0) {
    const [key, name, startedAt] = [
      param(steps.map((st) => st.key)),
      param(steps.map((st) => st.name)),
      param(steps.map((st) => st.startedAt)),
    ];
    ctes.push(`
  s AS (
    INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at, attempts)
    SELECT x.key, a.id, x.name, 'executing', NULL, x.started_at, NULL, 0
    FROM a, unnest(${key}::text[], ${name}::text[], ${startedAt}::bigint[])
      AS x (key, name, started_at)
    ON CONFLICT (key) DO NOTHING RETURNING 1)`);
  }
  const text = `WITH${ctes.join(',')}${TRANSITION}`;
  const flags = [
    create ? 'c' : write.lease !== undefined ? 'f' : 'u',
    consume ? 'm' : '',
    out.length > 0 ? 'o' : '',
    steps.length > 0 ? 's' : '',
  ].join('');
  return { name: `ac_write_${flags}`, text, values };
}
