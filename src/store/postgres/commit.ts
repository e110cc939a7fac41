/**
 * Applying ActorWrites to PostgreSQL: a lone write in one statement (the
 * compare-and-set of the actor row, its audit row, and the rows the transition
 * adds: ./statements.ts); a batch in one transaction of a statement per phase (its
 * creations, then its updates: {@link phasesOf}), or, when one of those fails on a
 * write's data, a statement per write. Writes with extra rows (messages, steps, a
 * parent) go alone, one statement each, and so do the other writes of their
 * actors (in batch order). A transaction or lone statement that PostgreSQL
 * rolls back for a deadlock or a serialization failure runs again (up to
 * `rollbackRetries` times). Only what must survive a crash is written
 * here; read models are derived later (./read-models.ts).
 */
import type { PoolClient } from 'pg';
import { ConcurrencyError } from '../../core/errors.ts';
import * as rules from '../rules.ts';
import type * as S from '../types.ts';
import { manyStatement, phasesOf } from './batch.ts';
import {
  asError,
  breaksConnection,
  failedOnData,
  ignore,
  ownFailure,
  toStoreError,
  transientConflict,
  type PostgresConnection,
  type Queryable,
} from './connection.ts';
import { hasExtras, writeStatement } from './statements.ts';

/** Applies batches of writes; see {@link PostgresCommitter.commit}. */
export class PostgresCommitter {
  constructor(
    private readonly conn: PostgresConnection,
    /** Called after every commit that reached the database (read-model refresh). */
    private readonly committed: () => void,
  ) {}

  /** Applies each write atomically (see Store.commit). */
  commit(writes: readonly S.ActorWrite[]): Promise<Array<Error | null>> {
    const [only] = writes;
    if (writes.length === 1 && only !== undefined && !hasExtras(only)) return this.commitOne(only);
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
      // each one statement with its extra rows; so do the other writes of their
      // actors, which must keep their place in batch order among them, and every
      // write of an actor the batch writes more than once (never the runtime's):
      // each is then refused, or explained, as the actor stands at its place in
      // the batch, and a creation that is not an actor's first write holds no
      // other row's lock while it waits (see phasesOf).
      const alone = new Set<string>();
      let previous: string | undefined;
      for (const { write } of order) {
        if (hasExtras(write) || write.actorId === previous) alone.add(write.actorId);
        previous = write.actorId;
      }
      const plain =
        alone.size === 0 ? order : order.filter(({ write }) => !alone.has(write.actorId));
      await this.commitEachAlone(
        alone.size === 0 ? [] : order.filter(({ write }) => alone.has(write.actorId)),
        results,
      );
      const outcome = await this.commitPlain(plain, results, state);
      this.committed();
      return outcome;
    });
  }

  /**
   * A lone write without extra rows, the one-at-a-time path: one statement, with
   * none of a batch's sorting and splitting around it.
   */
  private commitOne(write: S.ActorWrite): Promise<Array<Error | null>> {
    const results: Array<Error | null> = [rules.invalidWrite(write) ?? null];
    return this.conn.run('commit', write.actorId, async () => {
      if (results[0] === null) await this.commitAlone({ write, index: 0 }, results);
      this.committed();
      return results;
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
        await this.commitAlone(only, results);
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
        const misses = await this.conn.retrying(async () => {
          try {
            return (
              (await this.applyBatch(client, order, results, state, false)) ??
              (await this.applyBatch(client, order, results, state, true)) ??
              []
            );
          } catch (error) {
            // Rolled back whole by the server: end the aborted transaction to run it again.
            if (transientConflict(error)) await client.query('ROLLBACK');
            throw error;
          }
        });
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
   * Writes that go alone, each its own statement: those of different actors at
   * once, on connections of their own (a parent's spawns of a hundred children are
   * created together, not one round trip after another), those of one actor in
   * batch order. Every write is atomic on its own, and none waits for a row another
   * of them holds: each locks one actor row, and at most one message before it.
   * A failure of the connection or the server is thrown once all have settled.
   */
  private async commitEachAlone(
    // Sorted by actor, so one actor's writes are consecutive.
    alone: ReadonlyArray<{ write: S.ActorWrite; index: number }>,
    results: Array<Error | null>,
  ): Promise<void> {
    if (alone.length === 0) return;
    const chains: Array<Promise<void>> = [];
    let start = 0;
    for (let i = 1; i <= alone.length; i++) {
      if (i < alone.length && alone[i]?.write.actorId === alone[start]?.write.actorId) continue;
      const chain = alone.slice(start, i);
      chains.push(
        (async () => {
          for (const entry of chain) await this.commitAlone(entry, results);
        })(),
      );
      start = i;
    }
    const failed = (await Promise.allSettled(chains)).find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** One write as one statement, atomic on its own: no BEGIN/COMMIT round trips. */
  private async commitAlone(
    entry: { write: S.ActorWrite; index: number },
    results: Array<Error | null>,
  ): Promise<void> {
    try {
      const pool = this.conn.pool;
      if (!(await this.conn.retrying(() => this.applyWrite(pool, entry.write)))) {
        await this.explainMisses(this.conn.pool, [entry], results);
      }
    } catch (error) {
      const own = ownFailure(error, entry.write.actorId);
      if (own === undefined) throw toStoreError(error, 'commit', entry.write.actorId);
      results[entry.index] = own;
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
    let misses: Array<{ write: S.ActorWrite; index: number }> | undefined;
    try {
      misses = await this.conn.retrying(() => this.applyManyOnce(phases));
    } catch (error) {
      throw toStoreError(error, 'commit');
    }
    if (misses === undefined) return false;
    await this.explainMisses(this.conn.pool, misses, results);
    return true;
  }

  /**
   * One attempt of {@link applyMany}: the writes that matched nothing, or
   * undefined, having written nothing, when a statement failed for some write's data.
   */
  private async applyManyOnce(
    phases: ReadonlyArray<ReadonlyArray<{ write: S.ActorWrite; index: number }>>,
  ): Promise<Array<{ write: S.ActorWrite; index: number }> | undefined> {
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
      if (failedOnData(error)) return undefined;
      throw error;
    } finally {
      client?.removeListener('error', ignore);
      client?.release(broken ? new Error('connection broken') : undefined);
    }
    return misses;
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
    // The row count of the statement's audit-row INSERT: 1 when the actor row was written.
    return (await client.query(statement)).rowCount === 1;
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
          : new ConcurrencyError({
              actorId,
              expectedVersion,
              // A creation that found its message gone: delivered by another writer.
              actualVersion:
                row?.version ?? (write.consumeMessage === undefined ? undefined : expectedVersion),
            }));
    }
  }
}
