/**
 * Applying ActorWrites to PostgreSQL: a lone write in one statement (the
 * compare-and-set of the actor row and its audit row); a batch in one transaction
 * of a statement per phase (its updates, then its creations: {@link phasesOf}),
 * or, when one of those fails on a write's data, a statement per write; writes
 * with extra rows (messages, steps, a parent) each in a transaction of their own.
 * Only what must survive a crash is written here; read models are derived later
 * (./read-models.ts).
 */
import type { PoolClient } from 'pg';
import { ConcurrencyError } from '../../core/errors.ts';
import * as rules from '../rules.ts';
import { actorValues, transitionValues } from '../sql-common.ts';
import type * as S from '../types.ts';
import { manyStatement, phasesOf } from './batch.ts';
import {
  asError,
  breaksConnection,
  failedOnData,
  ignore,
  ownFailure,
  toStoreError,
  type PostgresConnection,
  type Queryable,
} from './connection.ts';

/**
 * One write is one statement: the actor row (insert, or compare-and-set update)
 * and its audit row, the insert a data-modifying CTE that acts only when the actor
 * statement matched. A write that loses its race therefore writes nothing and
 * needs no savepoint, and a lone write needs no BEGIN/COMMIT. Timers need no
 * statement: they are in the snapshot, the row keeps the next one due. It does
 * not NOTIFY: PostgreSQL serialises the commits of every transaction that
 * notifies, through their WAL flush, on one lock; other processes are told after
 * the commit (./notifications.ts, CommitAnnouncer).
 *
 * Parameters shared by both statements: $1 id, $2 machine, $3 chart version,
 * $4 version, $5 state, $6 status, $7 snapshot, $8 updated_at, $9 head hash,
 * $10 next due time, $11-$21 the transition row.
 */
const TRANSITION = `
  t AS (
    INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
      metadata, prev_hash, hash, chart_version, snapshot_hash)
    SELECT id, $11::integer, $12::text, $13::text, $14::text, $15::text, $16::bigint,
      $17::text, $18::text, $19::text, $20::integer, $21::text FROM a
    RETURNING 1)
  SELECT (SELECT count(*) FROM a)::int AS written`;
/** Creation: $22 created_at, $23 user id. Nothing happens when the id exists. */
const CREATE_ACTOR = `WITH a AS (
    INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
      created_at, updated_at, head_hash, next_due_at, user_id, state_since)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $22, $8, $9, $10, $23, $16)
    ON CONFLICT (id) DO NOTHING RETURNING id),${TRANSITION}`;
/**
 * Update: compare-and-set on version $22; a fenced write also needs owner $23's
 * unexpired lease at $24. No index of `actors` holds a column a send changes, so
 * with the table's fillfactor the update stays a heap-only tuple.
 */
const UPDATE_ACTOR = (fenced: boolean) => `WITH a AS (
    UPDATE actors SET machine_id = $2, chart_version = $3, version = $4, state = $5,
      status = $6, snapshot = $7, updated_at = $8, head_hash = $9, next_due_at = $10,
      state_since = CASE WHEN state = $5 THEN state_since ELSE $16::bigint END
    WHERE id = $1 AND version = $22
      ${fenced ? 'AND owner = $23 AND lease_until >= $24' : ''}
    RETURNING id),${TRANSITION}`;

/**
 * The one statement that applies `write` (a prepared statement: `name`, `text`,
 * `values`); its single row's `written` is 1 when it matched, 0 when it wrote
 * nothing. Undefined for a write that cannot match: a fenced create (no lease
 * can be held on a row that does not exist yet). Exported for the benchmark's raw
 * baseline, which runs the very same SQL.
 *
 * @internal
 */
export function writeStatement(
  write: S.ActorWrite,
): { name: string; text: string; values: unknown[] } | undefined {
  const { expectedVersion, actor, transition: t, lease } = write;
  const values: unknown[] = [...actorValues(write), ...transitionValues(t)];
  if (expectedVersion === 0) {
    if (lease !== undefined) return undefined;
    values.push(actor.createdAt, write.userId ?? null);
    return { name: 'ac_create', text: CREATE_ACTOR, values };
  }
  values.push(expectedVersion);
  if (lease !== undefined) values.push(lease.owner, lease.now);
  return lease !== undefined
    ? { name: 'ac_update_fenced', text: UPDATE_ACTOR(true), values }
    : { name: 'ac_update', text: UPDATE_ACTOR(false), values };
}

/** Applies batches of writes; see {@link PostgresCommitter.commit}. */
export class PostgresCommitter {
  constructor(
    private readonly conn: PostgresConnection,
    /** Called after every commit that reached the database (read-model refresh). */
    private readonly committed: () => void,
  ) {}

  /** Applies each write atomically (see Store.commit). */
  commit(writes: readonly S.ActorWrite[]): Promise<Array<Error | null>> {
    const single = writes.length === 1 ? writes[0]?.actorId : undefined;
    const results: Array<Error | null> = writes.map((w) => rules.invalidWrite(w) ?? null);
    // Lock rows in one global order (actor id, bytes) so batches of different
    // workers never deadlock; writes to one actor keep their batch order (stable sort).
    const order = writes
      .map((write, index) => ({ write, index }))
      .filter(({ index }) => results[index] === null)
      .sort((a, b) => rules.compareText(a.write.actorId, b.write.actorId));
    const state = { inFlight: single };
    return this.conn.run('commit', single, async () => {
      // Writes that deliver or send messages, begin steps or link a parent go alone,
      // each in its own transaction with its extra statements.
      const plain = order.filter(({ write }) => !hasExtras(write));
      for (const { write, index } of order) {
        if (hasExtras(write)) results[index] = await this.commitWithExtras(write);
      }
      const outcome = await this.commitPlain(plain, results, state);
      this.committed();
      return outcome;
    });
  }

  private async commitPlain(
    // The writes sorted by actor; a batch of several is applied in the order of phasesOf.
    order: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
    state: { inFlight: string | undefined },
  ): Promise<Array<Error | null>> {
    {
      const [only] = order;
      if (only === undefined) return results;
      if (order.length === 1) {
        // One statement is atomic on its own: no BEGIN/COMMIT round trips.
        try {
          if (!(await this.applyWrite(this.conn.pool, only.write))) {
            await this.explainMisses(this.conn.pool, [only], results);
          }
        } catch (error) {
          const own = ownFailure(error, only.write.actorId);
          if (own === undefined) throw toStoreError(error, 'commit', only.write.actorId);
          results[only.index] = own;
        }
        return results;
      }
      const phases = phasesOf(order);
      if (await this.applyMany(phases, results)) return results;
      order = phases.flat();
      const client = await this.conn.pool.connect();
      // A connection that dies mid-batch also emits 'error' on the client; the
      // failing query reports it, so the event itself is only absorbed here.
      client.on('error', ignore);
      try {
        // A write that loses its race writes nothing, so no savepoints are needed
        // unless a statement fails (a constraint, bad data): then the batch runs
        // again with a savepoint per write, and that write alone is rolled back.
        const misses =
          (await this.applyBatch(client, order, results, state, false)) ??
          (await this.applyBatch(client, order, results, state, true)) ??
          [];
        // Explained after COMMIT: the batch's row locks are not held for it.
        await this.explainMisses(client, misses, results);
        client.removeListener('error', ignore);
        client.release();
        return results;
      } catch (error) {
        let broken = breaksConnection(error);
        if (!broken) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
        }
        client.removeListener('error', ignore);
        // A broken connection is destroyed, never handed out again.
        client.release(broken ? asError(error) : undefined);
        throw toStoreError(error, 'commit', state.inFlight);
      }
    }
  }

  /**
   * A batch in one statement per phase (./batch.ts): one round trip for the usual
   * batch, not one per write plus BEGIN and COMMIT. Returns false, having written nothing, when a statement
   * failed for some write's data (a constraint, a value out of range): the batch
   * then goes through {@link applyBatch}, which finds that write. Any other failure
   * is the batch's, and names no actor (one statement waited, timed out or lost
   * its connection for all of them).
   */
  private async applyMany(
    phases: ReadonlyArray<ReadonlyArray<{ write: S.ActorWrite; index: number }>>,
    results: Array<Error | null>,
  ): Promise<boolean> {
    const misses: Array<{ write: S.ActorWrite; index: number }> = [];
    const client = phases.length > 1 ? await this.conn.pool.connect() : undefined;
    client?.on('error', ignore);
    let broken = false;
    try {
      if (client) await client.query('BEGIN');
      for (const phase of phases) {
        // A fenced creation cannot match (no lease is held on a row not yet there).
        const writes = phase.filter(
          ({ write }) => write.expectedVersion > 0 || write.lease === undefined,
        );
        for (const entry of phase) if (!writes.includes(entry)) misses.push(entry);
        if (writes.length === 0) continue;
        const create = (writes[0] as { write: S.ActorWrite }).write.expectedVersion === 0;
        const statement = manyStatement(
          writes.map(({ write }) => write),
          create,
        );
        const { rows } = await (client ?? this.conn.pool).query<{ id: string }>(statement);
        const written = new Set(rows.map((row) => row.id));
        for (const entry of writes) if (!written.has(entry.write.actorId)) misses.push(entry);
      }
      if (client) await client.query('COMMIT');
    } catch (error) {
      broken = breaksConnection(error);
      if (client && !broken) await client.query('ROLLBACK').catch(() => (broken = true));
      if (failedOnData(error)) return false;
      throw toStoreError(error, 'commit');
    } finally {
      client?.removeListener('error', ignore);
      client?.release(broken ? new Error('connection broken') : undefined);
    }
    await this.explainMisses(this.conn.pool, misses, results);
    return true;
  }

  /**
   * A write with extra statements (messages, steps, parent) in a transaction of its
   * own: the write's statement, then the message it consumes (gone → the whole
   * write rolls back with ConcurrencyError), the messages it sends, the steps it
   * begins.
   */
  private async commitWithExtras(write: S.ActorWrite): Promise<Error | null> {
    const client = await this.conn.pool.connect();
    client.on('error', ignore);
    let broken = false;
    try {
      await client.query('BEGIN');
      const outcome = await this.applyExtras(client, write);
      await client.query(outcome === null ? 'COMMIT' : 'ROLLBACK');
      if (outcome === 'miss') {
        const results: Array<Error | null> = [null];
        await this.explainMisses(client, [{ write, index: 0 }], results);
        return results[0] ?? null;
      }
      return outcome;
    } catch (error) {
      broken = breaksConnection(error);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      const own = ownFailure(error, write.actorId);
      if (own === undefined) throw toStoreError(error, 'commit', write.actorId);
      return own;
    } finally {
      client.removeListener('error', ignore);
      client.release(broken ? new Error('connection broken') : undefined);
    }
  }

  private async applyExtras(
    client: PoolClient,
    write: S.ActorWrite,
  ): Promise<Error | null | 'miss'> {
    if (!(await this.applyWrite(client, write))) return 'miss';
    const { actorId } = write;
    if (write.consumeMessage !== undefined) {
      const deleted = await client.query('DELETE FROM messages WHERE id = $1 AND to_actor = $2', [
        write.consumeMessage,
        actorId,
      ]);
      if (deleted.rowCount !== 1) {
        return new ConcurrencyError({
          actorId,
          expectedVersion: write.expectedVersion,
          actualVersion: write.expectedVersion,
        });
      }
    }
    const out = write.messagesOut ?? [];
    if (out.length > 0) {
      await client.query(
        `INSERT INTO messages (to_actor, from_actor, from_seq, idx, kind, body, at)
         SELECT x.to_actor, $1, $2, x.idx, x.kind, x.body, $3
         FROM unnest($4::text[], $5::int[], $6::text[], $7::text[])
           AS x (to_actor, idx, kind, body)
         ORDER BY x.idx`,
        [
          actorId,
          write.transition.seq,
          write.transition.at,
          out.map((m) => m.to),
          out.map((m) => m.idx),
          out.map((m) => m.kind),
          out.map((m) => m.body),
        ],
      );
    }
    if (write.parentId !== undefined && write.expectedVersion === 0) {
      await client.query('UPDATE actors SET parent_id = $1 WHERE id = $2', [
        write.parentId,
        actorId,
      ]);
    }
    return null;
  }

  /**
   * One transaction over the batch; returns the writes that matched nothing
   * (they wrote nothing). Without savepoints it gives up (rolls back, returns
   * undefined) at the first statement that fails; with them it rolls back that
   * write alone.
   */
  private async applyBatch(
    client: PoolClient,
    order: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
    state: { inFlight: string | undefined },
    savepoints: boolean,
  ): Promise<Array<{ write: S.ActorWrite; index: number }> | undefined> {
    const misses: Array<{ write: S.ActorWrite; index: number }> = [];
    await client.query('BEGIN');
    for (const entry of order) {
      const { write, index } = entry;
      state.inFlight = write.actorId;
      if (savepoints) await client.query('SAVEPOINT w');
      try {
        results[index] = null;
        if (!(await this.applyWrite(client, write))) misses.push(entry);
        if (savepoints) await client.query('RELEASE SAVEPOINT w');
      } catch (error) {
        const own = ownFailure(error, write.actorId);
        if (own === undefined) throw error;
        // A failed statement aborted the transaction (or the savepoint).
        if (!savepoints) {
          await client.query('ROLLBACK');
          return undefined;
        }
        results[index] = own;
        await client.query('ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w');
      }
    }
    state.inFlight = undefined;
    await client.query('COMMIT');
    return misses;
  }

  /**
   * Applies one write as one statement (see {@link writeStatement}). Returns
   * false when it matched nothing, in which case it wrote nothing.
   */
  private async applyWrite(client: Queryable, write: S.ActorWrite): Promise<boolean> {
    const statement = writeStatement(write);
    if (statement === undefined) return false;
    const result = await client.query<{ written: number }>(statement);
    const written = result.rows[0]?.written === 1;
    const steps = write.stepsBegin ?? [];
    if (written && steps.length > 0) {
      // In the batch's transaction (a write that begins steps never goes alone).
      await client.query({
        name: 'ac_begin_steps',
        text: `INSERT INTO steps (key, actor_id, name, status, result, started_at, finished_at,
            attempts)
          SELECT x.key, $1, x.name, 'executing', NULL, x.started_at, NULL, 0
          FROM unnest($2::text[], $3::text[], $4::bigint[]) AS x (key, name, started_at)
          ON CONFLICT (key) DO NOTHING`,
        values: [
          write.actorId,
          steps.map((st) => st.key),
          steps.map((st) => st.name),
          steps.map((st) => st.startedAt),
        ],
      });
    }
    return written;
  }

  /**
   * Why writes matched nothing, from their rows as they stand now (one read, on
   * this slow path only): a lease not held, a missing actor, or a version that
   * moved.
   */
  private async explainMisses(
    client: Queryable,
    misses: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
  ): Promise<void> {
    if (misses.length === 0) return;
    const rows = await client.query<{
      id: string;
      version: number;
      owner: string | null;
      leaseUntil: number | null;
    }>({
      name: 'ac_explain',
      text: 'SELECT id, version, owner, lease_until AS "leaseUntil" FROM actors WHERE id = ANY($1::text[])',
      values: [[...new Set(misses.map((m) => m.write.actorId))]],
    });
    const current = new Map(rows.rows.map((r) => [r.id, r]));
    for (const { write, index } of misses) {
      const { actorId, expectedVersion } = write;
      const row = current.get(actorId);
      results[index] =
        rules.leaseViolation(write, row) ??
        (row === undefined && expectedVersion > 0
          ? rules.actorMissing(actorId)
          : new ConcurrencyError({ actorId, expectedVersion, actualVersion: row?.version }));
    }
  }
}

/** Whether a write needs statements beyond its one write statement. */
function hasExtras(write: S.ActorWrite): boolean {
  return (
    write.consumeMessage !== undefined ||
    (write.messagesOut?.length ?? 0) > 0 ||
    (write.stepsBegin?.length ?? 0) > 0 ||
    write.parentId !== undefined
  );
}
