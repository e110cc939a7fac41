/**
 * SQLite's derived read models are kept off the commit path and stay exact: a
 * query between refreshes overlays what changed since, a refresh folds it in, a
 * read-only connection sees the same, and `agentcharts reindex` rebuilds them
 * from the authoritative tables.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import {
  ManualClock,
  createDurableActor,
  getRuntime,
  openStore,
  type Store,
} from '../src/index.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { runCli } from './support/cli.ts';

const task = catalog['task-lifecycle'];
let dir: string;
let file: string;
const stores: Store[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-read-models-'));
  file = join(dir, 'agentcharts.db');
});
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await getRuntime(s).close();
    await s.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Everything the read models answer, for comparing two moments or two connections. */
async function views(store: Store) {
  return {
    counts: await store.countActors(),
    running: await store.actorsInStates({ states: ['running', 'paused'] }),
    entries: await store.countStateEntries({ toStates: ['running'], since: 0 }),
    feed: await store.transitionsSince({ since: 0 }),
  };
}

async function workload(store: Store, clock: ManualClock, prefix: string): Promise<void> {
  for (let i = 0; i < 6; i++) {
    const a = await createDurableActor(task.machine, {
      id: `${prefix}${i}`,
      store,
      input: { taskId: `${prefix}${i}` },
      clock,
    });
    clock.advance(10);
    if (i % 3 === 0) continue;
    await a.send({ type: 'START' });
    clock.advance(10);
    if (i % 3 === 1) await a.send({ type: 'COMPLETE', result: 'ok' });
    else await a.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'limit', requestedAt: clock.now() });
  }
}

describe('SQLite read models', () => {
  test('are exact before a refresh, after it, after a rebuild and on a read-only connection', async () => {
    const store = openSqliteStore(file, { readModelRefreshMs: 0 });
    stores.push(store);
    const clock = new ManualClock(1_000);
    await workload(store, clock, 'a');
    await store.refreshReadModels();
    await workload(store, clock, 'b'); // not refreshed: answered through the overlay
    const overlaid = await views(store);
    expect(overlaid.counts.reduce((n, c) => n + c.count, 0)).toBe(12);
    expect(overlaid.running.map((d) => d.actorId)).toEqual(['a2', 'a5', 'b2', 'b5']);
    expect(overlaid.feed).toHaveLength(12 + 8 * 2);

    const reader = openStore(`sqlite:${file}?readonly=1`);
    stores.push(reader);
    expect(await views(reader)).toEqual(overlaid);

    await store.refreshReadModels();
    expect(await views(store)).toEqual(overlaid);
    expect(await store.rebuildReadModels()).toEqual({ actors: 12, entries: 28 });
    expect(await views(store)).toEqual(overlaid);
  });

  test('the commit writes none of them: they change only when refreshed', async () => {
    const store = openSqliteStore(file, { readModelRefreshMs: 0 });
    stores.push(store);
    const clock = new ManualClock(1_000);
    await workload(store, clock, 'a');
    const size = () =>
      store.db
        .prepare(
          `SELECT (SELECT COUNT(*) FROM actor_index) + (SELECT COUNT(*) FROM state_entries)
             + (SELECT COUNT(*) FROM transition_feed)`,
        )
        .pluck()
        .get();
    expect(size()).toBe(0);
    await store.refreshReadModels();
    expect(size()).toBe(6 + 14 + 14); // actors, state-changing rows (creations included), every row
  });
});

describe('agentcharts reindex', () => {
  test('rebuilds the read models and reports what it rebuilt', async () => {
    const store = openStore(`sqlite:${file}`);
    stores.push(store);
    await workload(store, new ManualClock(1_000), 'a');
    const result = await runCli(['reindex', '--db', file, '--json'], dir);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ actors: 6, entries: 14 });
  });
});
