/**
 * The raw minimal durable write, the baseline of the durable figures: what a
 * hand-written loop must do at least to keep an actor durable — a compare-and-set
 * UPDATE of the actor row and one INSERT of the transition row, in one
 * transaction (an INSERT of both on creation) — with better-sqlite3 on a minimal
 * schema (the two tables and their primary keys), WAL and synchronous=FULL, the
 * same payloads (snapshot and event JSON) the runtime wrote.
 */
import Database from 'better-sqlite3';
import type { ActorWrite } from '../../src/store/types.ts';

/** One transition as a hand-written program has it: the actor's new row and its log row. */
export interface MinimalTransition {
  id: string;
  /** 0 for a creation (the actor row inserted), else the version the row must still have. */
  expectedVersion: number;
  fromState: string | null;
  state: string;
  snapshot: string;
  event: string;
  at: number;
}

export interface MinimalWriter {
  commitOne(write: ActorWrite): void;
  commitBatch(writes: readonly ActorWrite[]): void;
  /** The same rows as {@link commitOne}, from a hand-written program's own values. */
  commitTransition(t: MinimalTransition): void;
  commitTransitions(ts: readonly MinimalTransition[]): void;
  db: Database.Database;
}

export function openMinimal(file: string): MinimalWriter {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS actors (
      id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,
      snapshot TEXT NOT NULL, updated_at INTEGER NOT NULL) STRICT;
    CREATE TABLE IF NOT EXISTS transitions (
      actor_id TEXT NOT NULL, seq INTEGER NOT NULL, from_state TEXT, to_state TEXT NOT NULL,
      event TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (actor_id, seq)) STRICT;`);
  const insertActor = db.prepare('INSERT INTO actors VALUES (?, ?, ?, ?, ?)');
  const update = db.prepare(
    'UPDATE actors SET version = ?, state = ?, snapshot = ?, updated_at = ? WHERE id = ? AND version = ?',
  );
  const insertTransition = db.prepare('INSERT INTO transitions VALUES (?, ?, ?, ?, ?, ?)');
  const apply = (w: ActorWrite): void => {
    const { actor, transition: t } = w;
    if (w.expectedVersion === 0) {
      insertActor.run(actor.id, actor.version, actor.state, actor.snapshot, actor.updatedAt);
    } else if (
      update.run(
        actor.version,
        actor.state,
        actor.snapshot,
        actor.updatedAt,
        actor.id,
        w.expectedVersion,
      ).changes !== 1
    ) {
      throw new Error(`minimal baseline: version conflict on ${w.actorId}`);
    }
    insertTransition.run(t.actorId, t.seq, t.fromState, t.toState, t.event, t.at);
  };
  const applyTransition = (t: MinimalTransition): void => {
    const version = t.expectedVersion + 1;
    if (t.expectedVersion === 0) {
      insertActor.run(t.id, version, t.state, t.snapshot, t.at);
    } else if (
      update.run(version, t.state, t.snapshot, t.at, t.id, t.expectedVersion).changes !== 1
    ) {
      throw new Error(`minimal baseline: version conflict on ${t.id}`);
    }
    insertTransition.run(t.id, version, t.fromState, t.state, t.event, t.at);
  };
  const one = db.transaction(apply);
  const batch = db.transaction((writes: readonly ActorWrite[]) => writes.forEach(apply));
  const oneTransition = db.transaction(applyTransition);
  const transitions = db.transaction((ts: readonly MinimalTransition[]) =>
    ts.forEach(applyTransition),
  );
  return {
    db,
    commitOne: (w) => one.immediate(w),
    commitBatch: (ws) => batch.immediate(ws),
    commitTransition: (t) => oneTransition.immediate(t),
    commitTransitions: (ts) => transitions.immediate(ts),
  };
}
