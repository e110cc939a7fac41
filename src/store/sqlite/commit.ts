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
import { actorValues, transitionValues } from '../sql-common.ts';
import type { ActorWrite } from '../types.ts';
import { classifySqliteError, toStoreError, type Statements } from './connection.ts';
import { NEXT_TX } from './log.ts';

/**
 * Every statement of a commit binds positional parameters, in the order their
 * columns are listed: binding by name makes better-sqlite3 look up each name on
 * the parameter object, on every write.
 */
const INSERT_ACTOR = `INSERT INTO actors (id, machine_id, chart_version, version, state, status,
    snapshot, updated_at, head_hash, next_due_at, created_at, user_id, state_since, parent_id,
    head_tx)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${NEXT_TX})
  ON CONFLICT (id) DO NOTHING`;

const INSERT_MESSAGE = `INSERT INTO messages (to_actor, from_actor, from_seq, idx, kind, body, at)
  VALUES (?, ?, ?, ?, ?, ?, ?)`;

const INSERT_TRANSITION = `INSERT INTO transitions (actor_id, seq, from_state, to_state,
    event_type, event, at, metadata, prev_hash, hash, chart_version, snapshot_hash)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const BEGIN_STEP = `INSERT INTO steps (key, actor_id, name, status, result, started_at,
    finished_at, attempts)
  VALUES (?, ?, ?, 'executing', NULL, ?, NULL, 0)
  ON CONFLICT (key) DO NOTHING`;

/** Which columns of the actor row an UPDATE sets beyond those every send changes. */
const STATE_CHANGES = 1;
const STATUS_CHANGES = 2;
const CHART_CHANGES = 4;
const MACHINE_CHANGES = 8;
/** The row's previous values are unknown: every column that may change is set. */
const UNKNOWN_PREVIOUS = STATE_CHANGES | STATUS_CHANGES | CHART_CHANGES | MACHINE_CHANGES | 16;

/**
 * The UPDATE of the actor row, setting only the columns that change. SQLite
 * rewrites an index entry when the UPDATE names one of its columns, whether or not
 * the value changes; no index of `actors` holds a column a send changes, and this
 * keeps it so should one be added. The row is written only at the expected
 * version and head hash (the transition's `prevHash`): a write computed on top of
 * another that was refused (an earlier one of the same batch, say) finds the
 * version it expects written by someone else, and the chain refuses it.
 * Parameters, in order: version, snapshot, updated_at, head_hash, next_due_at,
 * then those of the columns it sets, then id, the expected version and the
 * expected head hash ({@link updateParams}).
 */
function updateActorSql(changes: number): string {
  const set = [
    'version = ?',
    'snapshot = ?',
    'updated_at = ?',
    'head_hash = ?',
    'next_due_at = ?',
    `head_tx = ${NEXT_TX}`,
  ];
  if (changes === UNKNOWN_PREVIOUS) {
    set.push(
      'state = ?',
      'status = ?',
      'chart_version = ?',
      'machine_id = ?',
      'state_since = CASE WHEN state = ? THEN state_since ELSE ? END',
    );
  } else {
    if (changes & STATE_CHANGES) set.push('state = ?', 'state_since = ?');
    if (changes & STATUS_CHANGES) set.push('status = ?');
    if (changes & CHART_CHANGES) set.push('chart_version = ?');
    if (changes & MACHINE_CHANGES) set.push('machine_id = ?');
  }
  return `UPDATE actors SET ${set.join(', ')} WHERE id = ? AND version = ? AND head_hash = ?`;
}

/** What an UPDATE of the actor row for `write` sets (see {@link updateActorSql}). */
function changesOf(write: ActorWrite): number {
  const previous = write.previous;
  if (previous === undefined) return UNKNOWN_PREVIOUS;
  const actor = write.actor;
  return (
    (previous.state !== actor.state ? STATE_CHANGES : 0) |
    (previous.status !== actor.status ? STATUS_CHANGES : 0) |
    (previous.chartVersion !== actor.chartVersion ? CHART_CHANGES : 0) |
    // Absent from `previous` (written by hand): set, as when nothing is known.
    (previous.machineId !== actor.machineId ? MACHINE_CHANGES : 0)
  );
}

/** The parameters of {@link updateActorSql}`(changes)` for `write`. */
function updateParams(write: ActorWrite, changes: number): unknown[] {
  const { actor } = write;
  const params: unknown[] = [
    actor.version,
    actor.snapshot,
    actor.updatedAt,
    actor.headHash,
    write.nextDueAt ?? null,
  ];
  if (changes === UNKNOWN_PREVIOUS) {
    params.push(
      actor.state,
      actor.status,
      actor.chartVersion,
      actor.machineId,
      actor.state,
      write.transition.at,
    );
  } else {
    if (changes & STATE_CHANGES) params.push(actor.state, write.transition.at);
    if (changes & STATUS_CHANGES) params.push(actor.status);
    if (changes & CHART_CHANGES) params.push(actor.chartVersion);
    if (changes & MACHINE_CHANGES) params.push(actor.machineId);
  }
  params.push(actor.id, write.expectedVersion, write.transition.prevHash);
  return params;
}

/** Applies batches of writes; see {@link SqliteCommitter.commit}. */
export class SqliteCommitter {
  private readonly one: Database.Transaction<(write: ActorWrite) => void>;
  private readonly batch: Database.Transaction<
    (writes: readonly ActorWrite[]) => Array<Error | null>
  >;
  private readonly fast: Database.Transaction<(writes: readonly ActorWrite[]) => void>;
  private readonly insertActor: Database.Statement;
  private readonly insertTransition: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly sql: Statements,
  ) {
    this.insertActor = sql.get(INSERT_ACTOR);
    this.insertTransition = sql.get(INSERT_TRANSITION);
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

  /** The UPDATE of the actor row by what it sets, prepared once each. */
  private readonly updates: Array<Database.Statement | undefined> = [];

  private update(changes: number): Database.Statement {
    let statement = this.updates[changes];
    if (statement === undefined) {
      statement = this.sql.get(updateActorSql(changes));
      this.updates[changes] = statement;
    }
    return statement;
  }

  private apply(write: ActorWrite): void {
    const { actorId, expectedVersion, actor, transition: t } = write;
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
      const { changes } = this.insertActor.run(
        ...actorValues(write),
        actor.createdAt,
        write.userId ?? null,
        t.at,
        write.parentId ?? null,
      );
      if (changes === 0) {
        throw new ConcurrencyError({
          actorId,
          expectedVersion,
          actualVersion: this.version(actorId),
        });
      }
    } else {
      const changed = changesOf(write);
      const { changes } = this.update(changed).run(...updateParams(write, changed));
      if (changes === 0) {
        const actualVersion = this.version(actorId);
        if (actualVersion === undefined) throw actorMissing(actorId);
        throw new ConcurrencyError({ actorId, expectedVersion, actualVersion });
      }
    }
    this.applyMessages(write);
    if (write.stepsBegin !== undefined && write.stepsBegin.length > 0) {
      const begin = this.sql.get(BEGIN_STEP);
      for (const step of write.stepsBegin) begin.run(step.key, actorId, step.name, step.startedAt);
    }
    this.insertTransition.run(t.actorId, ...transitionValues(t));
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
      insert.run(m.to, actorId, transition.seq, m.idx, m.kind, m.body, transition.at);
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
