/**
 * Shared pieces of `npm run bench`: result rows, timing, temp directories, and the
 * raw better-sqlite3 writer the durable figures are compared with.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.ts';
import type { ActorWrite, Store } from '../../src/store/types.ts';

/** How a row's figure is judged. `ratio` is ours ÷ baseline for rates, baseline ÷ ours for times. */
export interface Target {
  on: 'ratio' | 'value';
  op: '>=' | '<=';
  value: number;
  unit?: string;
}

export interface BenchRow {
  id: string;
  name: string;
  unit: string;
  /** Our figure. */
  value: number;
  /** The baseline's figure in the same unit, run in this process on the same disk. */
  baseline?: number;
  baselineName?: string;
  /** Higher is better for us (rates, speed ratio), lower for heap. */
  ratio?: number;
  target?: Target;
  /** Undefined when the row has no target (reported for information). */
  pass?: boolean;
  details?: Record<string, unknown>;
}

export interface BenchOptions {
  quick: boolean;
  /** Temp directory for this run's databases. */
  dir: string;
  log: (line: string) => void;
}

export function judge(row: Omit<BenchRow, 'pass'>): BenchRow {
  if (!row.target) return row;
  const figure = row.target.on === 'ratio' ? row.ratio : row.value;
  if (figure === undefined) return { ...row, pass: false };
  const pass = row.target.op === '>=' ? figure >= row.target.value : figure <= row.target.value;
  return { ...row, pass };
}

export function makeTempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agentcharts-bench-'));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One interleaved pair: our block and the baseline's block of the same work. */
export interface PairedBlock {
  /** Operations in the block (the same on both sides). */
  count: number;
  oursMs: number;
  baseMs: number;
}

/**
 * Rates and ratio over paired blocks, each the median over blocks: a block that
 * another process preempted or an fsync that stalled skews one pair, not the figure.
 */
export function pairedFigures(blocks: readonly PairedBlock[]): {
  value: number;
  baseline: number;
  ratio: number;
  blocks: number;
} {
  return {
    value: median(blocks.map((b) => (b.count / b.oursMs) * 1000)),
    baseline: median(blocks.map((b) => (b.count / b.baseMs) * 1000)),
    ratio: median(blocks.map((b) => b.baseMs / b.oursMs)),
    blocks: blocks.length,
  };
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function now(): number {
  return performance.now();
}

/**
 * A store that records every write the runtime commits, batch by batch, so the raw
 * baseline can write byte-identical rows grouped the same way.
 */
export function recordingStore(inner: Store, batches: ActorWrite[][]): Store {
  const wrapper = Object.create(inner) as Store;
  wrapper.commit = (writes: readonly ActorWrite[]) => {
    batches.push([...writes]);
    return inner.commit(writes);
  };
  return wrapper;
}

/**
 * A database with the store's schema (created by the store's own migrations),
 * opened raw with the store's pragmas: WAL, synchronous=FULL, foreign keys.
 */
export async function openRawDatabase(file: string): Promise<Database.Database> {
  await openStore(`sqlite:${file}`).close();
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * The writes of one transition in plain better-sqlite3, with the rows precomputed:
 * the compare-and-set update of the actor (or its insert), the timer deletes and
 * upserts, the audit row. The same SQL the SQLite store runs, without its
 * error mapping (kept identical when the store's statements change).
 */
export function rawWriter(db: Database.Database): {
  apply: (write: ActorWrite) => void;
  commitOne: (write: ActorWrite) => void;
  commitBatch: (writes: readonly ActorWrite[]) => void;
} {
  const insertActor = db.prepare(
    `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
       created_at, updated_at, head_hash, user_id, state_since)
     VALUES (@id, @machineId, @chartVersion, @version, @state, @status, @snapshot,
       @createdAt, @updatedAt, @headHash, @userId, @enteredAt)`,
  );
  const updateActor = db.prepare(
    `UPDATE actors SET machine_id = @machineId, chart_version = @chartVersion,
       version = @version, state = @state, status = @status, snapshot = @snapshot,
       updated_at = @updatedAt, head_hash = @headHash,
       state_since = CASE WHEN state = @state THEN state_since ELSE @enteredAt END
     WHERE id = @id AND version = @expectedVersion`,
  );
  const deleteTimer = db.prepare('DELETE FROM timers WHERE actor_id = ? AND timer_id = ?');
  const upsertTimer = db.prepare(
    `INSERT INTO timers (actor_id, timer_id, event, due_at)
     VALUES (@actorId, @timerId, @event, @dueAt)
     ON CONFLICT (actor_id, timer_id) DO UPDATE SET event = excluded.event,
       due_at = excluded.due_at, claimed_by = NULL, claim_until = NULL`,
  );
  const insertTransition = db.prepare(
    `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
       metadata, prev_hash, hash)
     VALUES (@actorId, @seq, @fromState, @toState, @eventType, @event, @at,
       @metadata, @prevHash, @hash)`,
  );
  const apply = (write: ActorWrite): void => {
    if (write.expectedVersion === 0) {
      insertActor.run({
        ...write.actor,
        userId: write.userId ?? null,
        enteredAt: write.transition.at,
      });
    } else if (
      updateActor.run({
        ...write.actor,
        expectedVersion: write.expectedVersion,
        enteredAt: write.transition.at,
      }).changes !== 1
    ) {
      throw new Error(`raw baseline: version conflict on ${write.actorId}`);
    }
    if (write.consumeTimer !== undefined) deleteTimer.run(write.actorId, write.consumeTimer);
    for (const timerId of write.timersCancel) deleteTimer.run(write.actorId, timerId);
    for (const timer of write.timersSet) upsertTimer.run(timer);
    insertTransition.run(write.transition);
  };
  const one = db.transaction(apply);
  const batch = db.transaction((writes: readonly ActorWrite[]) => writes.forEach(apply));
  return {
    apply,
    commitOne: (write) => one.immediate(write),
    commitBatch: (writes) => batch.immediate(writes),
  };
}

/** Formats a number for the table: 3 significant digits, thousands separated. */
export function fmt(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return '—';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}
