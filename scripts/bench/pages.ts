/**
 * WAL pages per commit, by kind of send, on SQLite: how many pages each commit
 * appends to the write-ahead log (frames of page size + 24 bytes, with automatic
 * checkpoints off while measuring), for the durable store and for the raw minimal
 * durable write of the same rows. Read models are refreshed off the commit path and
 * are not counted here.
 */
import { statSync } from 'node:fs';
import { getRuntime } from '../../src/index.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import type { ActorWrite } from '../../src/store/types.ts';
import { judge, recordingStore, type BenchOptions, type BenchRow } from './common.ts';
import { openMinimal } from './minimal.ts';
import { TASK_EVENTS, createTask } from './workload.ts';

/** What each send of the task workload changes. */
const KINDS: Readonly<Record<string, string>> = {
  create: 'creation',
  START: 'no timer changed',
  PAUSE_FOR_APPROVAL: 'sets 2 timers',
  APPROVAL_GRANTED: 'cancels 2 timers',
  TRANSIENT_ERROR: 'sets 1 timer',
  RETRY: 'cancels 1 timer',
  COMPLETE: 'finishes (status changes)',
};

export async function benchPages(options: BenchOptions): Promise<BenchRow[]> {
  const tasks = options.quick ? 150 : 600;
  const file = `${options.dir}/pages.db`;
  const batches: ActorWrite[][] = [];
  const inner = openSqliteStore(file, { readModelRefreshMs: 0 });
  inner.db.pragma('wal_autocheckpoint = 0');
  const store = recordingStore(inner, batches);
  const walPages = (f: string) => statSync(`${f}-wal`).size / (4096 + 24);
  const ours = new Map<string, number[]>();
  const add = (kind: string, pages: number) =>
    (ours.get(kind) ?? ours.set(kind, []).get(kind))?.push(pages);
  for (let i = 0; i < tasks; i++) {
    let before = walPages(file);
    const actor = await createTask(store, `pages-${i}`);
    add('create', walPages(file) - before);
    for (const event of TASK_EVENTS) {
      before = walPages(file);
      await actor.send(event as never);
      add(event.type, walPages(file) - before);
    }
    actor.detach();
  }
  await getRuntime(store).close();
  await inner.close();

  const minimalFile = `${options.dir}/pages-minimal.db`;
  const minimal = openMinimal(minimalFile);
  minimal.db.pragma('wal_autocheckpoint = 0');
  const raw = new Map<string, number[]>();
  const kinds = ['create', ...TASK_EVENTS.map((e) => e.type)];
  batches.forEach((batch, i) => {
    const before = walPages(minimalFile);
    minimal.commitOne(batch[0] as ActorWrite);
    const kind = kinds[i % kinds.length] as string;
    (raw.get(kind) ?? raw.set(kind, []).get(kind))?.push(walPages(minimalFile) - before);
  });
  minimal.db.close();

  // The first tasks fill fresh pages; the steady state is what a running store pays.
  const mean = (xs: number[] = []) => {
    const tail = xs.slice(Math.floor(xs.length / 4));
    return tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
  };
  options.log(
    `  WAL pages per commit: ${kinds.map((k) => `${k} ${mean(ours.get(k)).toFixed(2)} (minimal ${mean(raw.get(k)).toFixed(2)})`).join(', ')}`,
  );
  return kinds.map((kind) =>
    judge({
      id: `wal-pages-${kind}`,
      name: `WAL pages per commit: ${kind} (${KINDS[kind] ?? ''})`,
      unit: 'pages',
      value: mean(ours.get(kind)),
      baseline: mean(raw.get(kind)),
      baselineName: 'raw minimal durable write of the same rows',
      // Two rows per transition, whatever it does to timers: every kind, creation too.
      target: { on: 'value', op: '<=', value: 4, unit: 'pages' },
    }),
  );
}
