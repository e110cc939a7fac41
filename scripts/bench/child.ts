/**
 * Measurements that need a process of their own (a clean heap, `global.gc`):
 *   node --expose-gc --import tsx scripts/bench/child.ts <mode> <sqlite file> [id prefix]
 * Modes:
 * - `recover`: times a raw scan of every active actor (baseline), then `recover()`;
 * - `heap-durable`: heap retained per loaded, idle durable actor;
 * - `heap-xstate`: heap retained per restored, started bare XState actor.
 * Prints one JSON line on stdout.
 */
import Database from 'better-sqlite3';
import { createActor } from 'xstate';
import { charts } from '../../machines/index.ts';
import { openDurableActor } from '../../src/durable/open.ts';
import { recover } from '../../src/durable/recover.ts';
import { getRuntime } from '../../src/durable/open.ts';
import { openStore } from '../../src/store/open.ts';
import { now } from './common.ts';

const [mode, file, prefix = ''] = process.argv.slice(2);
if (!mode || !file) {
  console.error('usage: child.ts <recover|heap-durable|heap-xstate> <sqlite file> [id prefix]');
  process.exit(64);
}
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('child.ts needs node --expose-gc');
  process.exit(64);
}

/** Collects until the heap stops shrinking, then returns heapUsed. */
function settledHeap(): number {
  let previous = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    gc?.();
    const used = process.memoryUsage().heapUsed;
    if (used >= previous - 1024) return used;
    previous = used;
  }
  return previous;
}

const WARM = 200;

async function measureRecover(): Promise<Record<string, number>> {
  const raw = new Database(file, { readonly: true });
  // Bring the file into the page cache once, so neither measurement pays for cold reads.
  raw.prepare('SELECT count(*), sum(length(snapshot)) FROM actors').get();
  // Unfinished actors through the index of them (a projection the store keeps off the
  // commit path; fresh after seeding), their timers in their snapshots.
  const page = raw.prepare(
    `SELECT a.id, a.machine_id, a.state, a.snapshot, a.updated_at
     FROM actor_index i JOIN actors a ON a.id = i.actor_id
     WHERE i.status = 'active' AND i.actor_id > ? ORDER BY i.actor_id LIMIT 500`,
  );
  let start = now();
  let scanned = 0;
  for (let after = ''; ;) {
    const rows = page.all(after) as Array<{ id: string; snapshot: string }>;
    if (rows.length === 0) break;
    for (const row of rows) {
      JSON.parse(row.snapshot);
      scanned++;
    }
    after = (rows.at(-1) as { id: string }).id;
  }
  const rawMs = now() - start;
  raw.close();

  const store = openStore(`sqlite:${file}`);
  start = now();
  const report = await recover(store, { charts });
  const recoverMs = now() - start;
  const heapMb = process.memoryUsage().heapUsed / 1_048_576;
  await getRuntime(store).close();
  await store.close();
  return {
    scanned,
    rawMs,
    recoverMs,
    actors: report.counts.actors,
    failed: report.counts.failed,
    sent: report.counts.sent,
    heapMb,
  };
}

function idsOf(): string[] {
  const raw = new Database(file, { readonly: true });
  const ids = raw
    .prepare(`SELECT id FROM actors WHERE id LIKE ? ORDER BY id`)
    .pluck()
    .all(`${prefix}%`) as string[];
  raw.close();
  return ids;
}

async function measureHeapDurable(): Promise<Record<string, number>> {
  const ids = idsOf();
  const store = openStore(`sqlite:${file}`);
  getRuntime(store, { charts });
  const kept: unknown[] = [];
  for (const id of ids.slice(0, WARM)) kept.push(await openDurableActor(store, id));
  const before = settledHeap();
  for (const id of ids.slice(WARM)) kept.push(await openDurableActor(store, id));
  const after = settledHeap();
  const count = ids.length - WARM;
  const result = { count, bytesPerActor: (after - before) / count, kept: kept.length };
  await getRuntime(store).close();
  await store.close();
  return result;
}

function measureHeapXState(): Record<string, number> {
  const ids = idsOf();
  const raw = new Database(file, { readonly: true });
  const row = raw.prepare('SELECT machine_id AS machineId, snapshot FROM actors WHERE id = ?');
  const machines = new Map(charts.map((c) => [c.machine.id, c.machine]));
  const kept: unknown[] = [];
  const load = (id: string) => {
    const { machineId, snapshot } = row.get(id) as { machineId: string; snapshot: string };
    const machine = machines.get(machineId);
    if (!machine) throw new Error(`unknown machine ${machineId}`);
    kept.push(createActor(machine, { snapshot: JSON.parse(snapshot) as never }).start());
  };
  ids.slice(0, WARM).forEach(load);
  const before = settledHeap();
  ids.slice(WARM).forEach(load);
  const after = settledHeap();
  const count = ids.length - WARM;
  raw.close();
  return { count, bytesPerActor: (after - before) / count, kept: kept.length };
}

const result =
  mode === 'recover'
    ? await measureRecover()
    : mode === 'heap-durable'
      ? await measureHeapDurable()
      : mode === 'heap-xstate'
        ? measureHeapXState()
        : undefined;
if (!result) {
  console.error(`unknown mode ${mode}`);
  process.exit(64);
}
process.stdout.write(`${JSON.stringify(result)}\n`);
