/**
 * Applying ActorWrites to SQLite: the compare-and-set of the actor row and its
 * audit row (plus the steps and messages a transition has, when it has them), for
 * a batch of writes in one transaction (group commit). Only what must survive a
 * crash is written here: timers are in the snapshot, the row keeps the next one
 * due, and every index that finds due or unfinished actors is a read model
 * derived later (./read-models.ts).
 */
import type Database from 'better-sqlite3';
import { ConcurrencyError, LeaseLostError, StoreError } from '../../core/errors.ts';
import { actorMissing, invalidWrite, leaseViolation } from '../rules.ts';
import type { ActorWrite } from '../types.ts';
import { classifySqliteError, toStoreError, type Statements } from './connection.ts';

const INSERT_ACTOR = `INSERT INTO actors (id, machine_id, chart_version, version, state, status,
    snapshot, created_at, updated_at, head_hash, user_id, state_since, parent_id, next_due_at)
  VALUES (@id, @machineId, @chartVersion, @version, @state, @status, @snapshot,
    @createdAt, @updatedAt, @headHash, @userId, @enteredAt, @parentId, @nextDueAt)
  ON CONFLICT (id) DO NOTHING`;

const INSERT_MESSAGE = `INSERT INTO messages (to_actor, from_actor, from_seq, idx, kind, body, at)
  VALUES (@to, @from, @fromSeq, @idx, @kind, @body, @at)`;

const INSERT_TRANSITION = `INSERT INTO transitions (actor_id, seq, from_state, to_state,
    event_type, event, at, metadata, prev_hash, hash, chart_version, snapshot_hash)
  VALUES (@actorId, @seq, @fromState, @toState, @eventType, @event, @at, @metadata,
    @prevHash, @hash, @chartVersion, @snapshotHash)`;

const BEGIN_STEP = `INSERT INTO steps (key, actor_id, name, status, result, started_at,
    finished_at, attempts)
  VALUES (@key, @actorId, @name, 'executing', NULL, @startedAt, NULL, 0)
  ON CONFLICT (key) DO NOTHING`;

/**
 * The UPDATE of the actor row, setting only the columns that change. SQLite
 * rewrites an index entry when the UPDATE names one of its columns, whether or not
 * the value changes; no index of `actors` holds a column a send changes, and this
 * keeps it so should one be added.
 */
function updateActorSql(write: ActorWrite): string {
  const previous = write.previous;
  const set = ['version = @version', 'snapshot = @snapshot', 'updated_at = @updatedAt'];
  set.push('head_hash = @headHash', 'next_due_at = @nextDueAt');
  if (previous === undefined) {
    set.push(
      'state = @state',
      'status = @status',
      'chart_version = @chartVersion',
      'state_since = CASE WHEN state = @state THEN state_since ELSE @enteredAt END',
    );
  } else {
    if (previous.state !== write.actor.state)
      set.push('state = @state', 'state_since = @enteredAt');
    if (previous.status !== write.actor.status) set.push('status = @status');
    if (previous.chartVersion !== write.actor.chartVersion) {
      set.push('chart_version = @chartVersion');
    }
  }
  return `UPDATE actors SET ${set.join(', ')} WHERE id = @id AND version = @expectedVersion`;
}

/** Applies batches of writes; see {@link SqliteCommitter.commit}. */
export class SqliteCommitter {
  private readonly one: Database.Transaction<(write: ActorWrite) => void>;
  private readonly batch: Database.Transaction<
    (writes: readonly ActorWrite[]) => Array<Error | null>
  >;
  private readonly fast: Database.Transaction<(writes: readonly ActorWrite[]) => void>;

  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
  ) {
    // Called inside `batch`, better-sqlite3 runs `one` as a SAVEPOINT: a failed
    // write rolls back alone and the batch goes on.
    this.one = db.transaction((write: ActorWrite) => this.apply(write));
    this.batch = db.transaction((writes: readonly ActorWrite[]) =>
      writes.map((write) => this.applyInSavepoint(write)),
    );
    // The common case, every write succeeding, needs no savepoints (a SAVEPOINT per
    // write doubled the cost of a batch). When one write fails, the transaction
    // rolls back whole and the batch is applied again, a savepoint per write.
    this.fast = db.transaction((writes: readonly ActorWrite[]) => {
      for (const write of writes) {
        const invalid = invalidWrite(write);
        if (invalid) throw invalid;
        this.apply(write);
      }
    });
  }

  /**
   * Applies each write atomically, all in one IMMEDIATE transaction (the write lock
   * taken up front, so busy_timeout applies). Per write: null, or the error that
   * rejected it alone. A failure of the whole transaction throws.
   */
  commit(writes: readonly ActorWrite[]): Array<Error | null> {
    if (writes.length === 0) return [];
    try {
      this.fast.immediate(writes);
      return writes.map(() => null);
    } catch (error) {
      if (!isOwnFailure(error)) throw error;
      return this.batch.immediate(writes);
    }
  }

  private version(actorId: string): number | undefined {
    const row = this.sql.get('SELECT version FROM actors WHERE id = ?').get(actorId) as
      { version: number } | undefined;
    return row?.version;
  }

  private applyInSavepoint(write: ActorWrite): Error | null {
    const invalid = invalidWrite(write);
    if (invalid) return invalid;
    try {
      this.one(write);
      return null;
    } catch (error) {
      if (error instanceof Error && isOwnFailure(error) && !isConstraint(error)) return error;
      // A constraint failure is this write's own; anything else (busy, full, io)
      // fails the whole batch, and SQLite may already have rolled it back.
      if (isConstraint(error) && this.db.inTransaction) {
        return toStoreError(error, 'commit', write.actorId);
      }
      throw error;
    }
  }

  private apply(write: ActorWrite): void {
    const { actorId, expectedVersion, actor, transition } = write;
    if (write.lease !== undefined) {
      // Checked under the write lock IMMEDIATE took: no other worker can take the
      // lease between this check and the commit.
      const current = this.sql
        .get('SELECT owner, lease_until AS leaseUntil FROM actors WHERE id = ?')
        .get(actorId) as { owner: string | null; leaseUntil: number | null } | undefined;
      const lost = leaseViolation(write, current);
      if (lost) throw lost;
    }
    if (expectedVersion === 0) {
      const { changes } = this.sql.get(INSERT_ACTOR).run({
        ...actor,
        userId: write.userId ?? null,
        enteredAt: transition.at,
        parentId: write.parentId ?? null,
        nextDueAt: write.nextDueAt ?? null,
      });
      if (changes === 0) {
        throw new ConcurrencyError({
          actorId,
          expectedVersion,
          actualVersion: this.version(actorId),
        });
      }
    } else {
      const { changes } = this.sql.get(updateActorSql(write)).run({
        id: actor.id,
        version: actor.version,
        snapshot: actor.snapshot,
        updatedAt: actor.updatedAt,
        headHash: actor.headHash,
        state: actor.state,
        status: actor.status,
        chartVersion: actor.chartVersion,
        enteredAt: transition.at,
        nextDueAt: write.nextDueAt ?? null,
        expectedVersion,
      });
      if (changes === 0) {
        const actualVersion = this.version(actorId);
        if (actualVersion === undefined) throw actorMissing(actorId);
        throw new ConcurrencyError({ actorId, expectedVersion, actualVersion });
      }
    }
    this.applyMessages(write);
    if (write.stepsBegin !== undefined && write.stepsBegin.length > 0) {
      const begin = this.sql.get(BEGIN_STEP);
      for (const step of write.stepsBegin) begin.run({ ...step, actorId });
    }
    this.sql.get(INSERT_TRANSITION).run(transition);
  }

  private applyMessages(write: ActorWrite): void {
    const { actorId, expectedVersion, transition } = write;
    if (
      write.consumeMessage !== undefined &&
      this.sql
        .get('DELETE FROM messages WHERE id = ? AND to_actor = ?')
        .run(write.consumeMessage, actorId).changes !== 1
    ) {
      // Delivered by another writer at this version.
      throw new ConcurrencyError({ actorId, expectedVersion, actualVersion: expectedVersion });
    }
    if (write.messagesOut === undefined || write.messagesOut.length === 0) return;
    const insert = this.sql.get(INSERT_MESSAGE);
    for (const m of write.messagesOut) {
      insert.run({ ...m, from: actorId, fromSeq: transition.seq, at: transition.at });
    }
  }
}

function isConstraint(error: unknown): boolean {
  return classifySqliteError(error) === 'constraint';
}

/** A failure that belongs to one write (a lost race, a lease, a bad row), not the batch. */
function isOwnFailure(error: unknown): boolean {
  return (
    error instanceof ConcurrencyError ||
    error instanceof LeaseLostError ||
    error instanceof StoreError ||
    isConstraint(error)
  );
}
