/**
 * Seeds a SQLite store with many valid, idle actors quickly: one real actor per
 * chart is created through the runtime (on a memory store) as a template, then
 * cloned under new ids with raw inserts — a correct creation row (hash chain
 * included) per actor, the same snapshot, the same timers.
 */
import { charts } from '../../machines/index.ts';
import { buildTransitionRow } from '../../src/durable/row.ts';
import { createDurableActor } from '../../src/durable/open.ts';
import { GENESIS_HASH } from '../../src/durable/row.ts';
import { getRuntime } from '../../src/durable/open.ts';
import { openStore } from '../../src/store/open.ts';
import type { ActorRow, TimerRow, TransitionRow } from '../../src/store/types.ts';
import { openRawDatabase } from './common.ts';

interface Template {
  chart: string;
  actor: ActorRow;
  creation: TransitionRow;
  timers: TimerRow[];
}

async function templates(): Promise<Template[]> {
  const store = openStore('memory:');
  const result: Template[] = [];
  for (const chart of charts) {
    const id = `template-${chart.name}`;
    await createDurableActor(chart.machine, {
      id,
      store,
      input: chart.defaultInput as never,
      schemas: chart.events,
    });
    const actor = await store.loadActor(id);
    const creation = (await store.history(id))[0];
    if (!actor || !creation) throw new Error(`seed: template of ${chart.name} was not stored`);
    result.push({ chart: chart.name, actor, creation, timers: await store.timers(id) });
  }
  await getRuntime(store).close();
  await store.close();
  return result;
}

/** Id of the `i`-th seeded actor: `<chart>/<zero-padded i>`, charts in turn. */
export function seededId(chart: string, i: number): string {
  return `${chart}/${String(i).padStart(7, '0')}`;
}

/**
 * Writes `count` actors spread evenly over the six charts into the store at `file`
 * (created with the store's schema). Returns the ids per chart.
 */
export async function seedActors(file: string, count: number): Promise<Map<string, string[]>> {
  const tpls = await templates();
  const db = await openRawDatabase(file);
  // Seeding is setup, not measured: trade durability for speed here only.
  db.pragma('synchronous = OFF');
  const insertActor = db.prepare(
    `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
       created_at, updated_at, head_hash)
     VALUES (@id, @machineId, @chartVersion, @version, @state, @status, @snapshot,
       @createdAt, @updatedAt, @headHash)`,
  );
  const insertTransition = db.prepare(
    `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
       metadata, prev_hash, hash, chart_version, snapshot_hash)
     VALUES (@actorId, @seq, @fromState, @toState, @eventType, @event, @at,
       @metadata, @prevHash, @hash, @chartVersion, @snapshotHash)`,
  );
  const insertTimer = db.prepare(
    `INSERT INTO timers (actor_id, timer_id, event, due_at) VALUES (@actorId, @timerId, @event, @dueAt)`,
  );
  const ids = new Map<string, string[]>(tpls.map((t) => [t.chart, []]));
  const insertMany = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const tpl = tpls[i % tpls.length] as Template;
      const id = seededId(tpl.chart, i);
      const creation = buildTransitionRow({
        actorId: id,
        seq: 1,
        fromState: null,
        toState: tpl.creation.toState,
        eventType: tpl.creation.eventType,
        event: tpl.creation.event,
        at: tpl.creation.at,
        metadata: tpl.creation.metadata,
        prevHash: GENESIS_HASH,
        chartVersion: tpl.actor.chartVersion,
        snapshot: tpl.actor.snapshot,
      });
      insertActor.run({ ...tpl.actor, id, headHash: creation.hash });
      insertTransition.run(creation);
      for (const timer of tpl.timers) insertTimer.run({ ...timer, actorId: id });
      ids.get(tpl.chart)?.push(id);
    }
  });
  for (let from = 0; from < count; from += 5_000) insertMany(from, Math.min(count, from + 5_000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return ids;
}
