/**
 * Seeds a SQLite store with many valid actors quickly. Real actors are made once
 * through the runtime (on a memory store) as templates — one per chart in its
 * creation state, and one task taken to `done` — then cloned under new ids with
 * raw inserts: the same snapshots and timers, every transition row rebuilt with a
 * correct hash chain for its new id.
 */
import Database from 'better-sqlite3';
import { charts } from '../../machines/index.ts';
import { createDurableActor, getRuntime } from '../../src/durable/open.ts';
import { GENESIS_HASH, hashTransition } from '../../src/durable/row.ts';
import { openStore } from '../../src/store/open.ts';
import type { ActorRow, TimerRow, TransitionRow } from '../../src/store/types.ts';
import { runTask } from './workload.ts';

interface Template {
  chart: string;
  actor: ActorRow;
  rows: TransitionRow[];
  timers: TimerRow[];
}

async function templates(): Promise<{ idle: Template[]; done: Template }> {
  const store = openStore('memory:');
  const take = async (chart: string, id: string): Promise<Template> => {
    const actor = await store.loadActor(id);
    if (!actor) throw new Error(`seed: template ${id} was not stored`);
    return { chart, actor, rows: await store.history(id), timers: await store.timers(id) };
  };
  const idle: Template[] = [];
  for (const chart of charts) {
    const id = `template-${chart.name}`;
    await createDurableActor(chart.machine, {
      id,
      store,
      input: chart.defaultInput as never,
      schemas: chart.events,
    });
    idle.push(await take(chart.name, id));
  }
  await runTask(store, 'template-done');
  const done = await take('task-lifecycle', 'template-done');
  await getRuntime(store).close();
  await store.close();
  return { idle, done };
}

/** Id of the `i`-th seeded actor: `<chart>/<zero-padded i>`. */
export function seededId(chart: string, i: number): string {
  return `${chart}/${String(i).padStart(7, '0')}`;
}

/**
 * Writes `total` actors into the store at `file` (created with the store's schema
 * and pragmas): `unfinished` of them in their creation state, spread over the six
 * charts, the rest finished tasks with their whole history. Returns the ids per chart.
 */
export async function seedActors(
  file: string,
  total: number,
  unfinished = total,
): Promise<Map<string, string[]>> {
  const { idle, done } = await templates();
  await openStore(`sqlite:${file}`).close(); // the store's schema
  const db = new Database(file);
  // Seeding is setup, not measured: durability traded for speed here only.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insertActor = db.prepare(
    `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
       created_at, updated_at, head_hash, state_since, next_due_at)
     VALUES (@id, @machineId, @chartVersion, @version, @state, @status, @snapshot,
       @createdAt, @updatedAt, @headHash, @updatedAt, @nextDueAt)`,
  );
  const insertTransition = db.prepare(
    `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
       metadata, prev_hash, hash, chart_version, snapshot_hash)
     VALUES (@actorId, @seq, @fromState, @toState, @eventType, @event, @at,
       @metadata, @prevHash, @hash, @chartVersion, @snapshotHash)`,
  );
  const setHead = db.prepare('UPDATE actors SET head_tx = ? WHERE id = ?');
  const ids = new Map<string, string[]>([...idle, done].map((t) => [t.chart, []]));
  const clone = (tpl: Template, id: string) => {
    let prevHash = GENESIS_HASH;
    const rows = tpl.rows.map(({ hash: _template, ...row }) => {
      // The clone's snapshots are the template's, so each row keeps its snapshot hash.
      const content = { ...row, actorId: id, prevHash };
      prevHash = hashTransition(content);
      return { ...content, hash: prevHash };
    });
    // Its timers are in the snapshot; the row keeps the next one due.
    const nextDueAt = tpl.timers.length > 0 ? Math.min(...tpl.timers.map((t) => t.dueAt)) : null;
    insertActor.run({ ...tpl.actor, id, headHash: prevHash, nextDueAt });
    let head: number | bigint = 0;
    for (const row of rows) head = insertTransition.run(row).lastInsertRowid;
    // The actor row names its newest log row (the log has no (actor, seq) key).
    setHead.run(head, id);
    ids.get(tpl.chart)?.push(id);
  };
  const insertMany = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const tpl = i < unfinished ? (idle[i % idle.length] as Template) : done;
      clone(tpl, seededId(tpl.chart, i));
    }
  });
  for (let from = 0; from < total; from += 5_000) insertMany(from, Math.min(total, from + 5_000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const store = openStore(`sqlite:${file}`);
  await store.rebuildReadModels();
  await store.close();
  return ids;
}
