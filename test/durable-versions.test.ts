/**
 * Chart versions under running actors: a migration runs once and is on the
 * record (a hash-chained `agentcharts.migrated` row with the new chart version on
 * the actor row), however many loads, sends, processes and store handles follow;
 * `verify` replays across it. The migration here is deliberately not idempotent:
 * it counts its runs in the context.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { createDurableActor, getRuntime, openStore, verify, type Store } from '../src/index.ts';
import { v1, v2, type Ctx } from './fixtures/counting-versions.ts';
import { MIGRATION_EVENT } from '../src/durable/migrate.ts';
import { noticesFromTrail } from '../src/observe/feed.ts';
import { usePostgres } from './support/postgres.ts';

/** `d1` loaded by version 2 of the chart (migrated if stored at version 1). */
const openAtVersion2 = (store: Store) =>
  createDurableActor(v2.machine, { id: 'd1', store, version: 2, migrations: v2.migrations });

async function closeAll(...stores: Store[]): Promise<void> {
  for (const store of stores) {
    await getRuntime(store).close();
    await store.close();
  }
}

/** The actor `d1` at version 1, in state b. */
async function storedAtVersion1(url: string): Promise<void> {
  const store = openStore(url);
  const actor = await createDurableActor(v1.machine, { id: 'd1', store });
  await actor.send({ type: 'NEXT' });
  expect(actor.getSnapshot().value).toBe('b');
  await closeAll(store);
}

function suite(name: string, url: () => string | undefined) {
  describe(name, () => {
    test('loading under version 2 migrates once, on the record; reloads and sends never again', async () => {
      const at = url();
      if (at === undefined) return;
      await storedAtVersion1(at);
      for (let load = 0; load < 3; load++) {
        const store = openStore(at);
        const actor = await openAtVersion2(store);
        expect(actor.getSnapshot().value).toBe('c');
        expect(actor.getSnapshot().context).toEqual({ runs: 1, migrated: 1 });
        const row = await store.loadActor('d1');
        expect(row?.chartVersion).toBe(2);
        await closeAll(store);
      }
      const store = openStore(at);
      const history = await store.history('d1');
      expect(history.map((r) => [r.eventType, r.chartVersion])).toEqual([
        ['xstate.init', 1],
        ['NEXT', 1],
        [MIGRATION_EVENT, 2],
      ]);
      const actor = await openAtVersion2(store);
      await actor.send({ type: 'NEXT' });
      expect(actor.getSnapshot().value).toBe('z');
      expect((await store.history('d1')).at(-1)?.chartVersion).toBe(2);

      // The feed (stream, dashboard) replays from the migration's snapshot.
      const row = await store.loadActor('d1');
      if (!row) throw new Error('no row');
      const notices = noticesFromTrail(v2, row, await store.history('d1'), 2);
      // (The migration counted in the context: a replay of the whole log with
      // version 2 would not have it.)
      expect(
        notices.map((n) => [n.eventType, n.snapshot.value, (n.snapshot.context as Ctx).migrated]),
      ).toEqual([
        [MIGRATION_EVENT, 'c', 1],
        ['NEXT', 'z', 1],
      ]);

      // Verify across the migration: with both versions the migration itself is
      // replayed; with version 2 only, replay restarts from its recorded snapshot.
      const both = await verify(store, { charts: [v1, v2] });
      expect(both.problems).toEqual([]);
      expect(both.checkpoints).toEqual([]);
      const current = await verify(store, { charts: [v2] });
      expect(current.problems).toEqual([]);
      expect(current.checkpoints).toEqual([
        expect.objectContaining({ actorId: 'd1', seq: 3, from: 1, to: 2 }),
      ]);
      // Stored at version 2, which is not registered: not verifiable here, not corrupt.
      const old = await verify(store, { charts: [v1] });
      expect(old.problems).toEqual([]);
      expect(old.notVerifiable).toEqual([
        expect.objectContaining({ actorId: 'd1', chartVersion: 2 }),
      ]);
      await closeAll(store);
    });

    test('two processes loading at the same moment migrate once (compare-and-set)', async () => {
      const at = url();
      if (at === undefined) return;
      await storedAtVersion1(at);
      const worker = join(import.meta.dirname, 'fixtures', 'counting-versions.ts');
      const startAt = Date.now() + 1_500;
      const outputs = await Promise.all(
        [1, 2].map(() =>
          run(process.execPath, ['--import', tsx, worker, at, String(startAt)], {
            encoding: 'utf8',
          }),
        ),
      );
      for (const { stdout } of outputs) {
        expect(JSON.parse(stdout)).toEqual({ runs: 1, migrated: 1 });
      }
      const store = openStore(at);
      const history = await store.history('d1');
      expect(history.filter((r) => r.eventType === MIGRATION_EVENT)).toHaveLength(1);
      expect((await verify(store, { charts: [v1, v2] })).problems).toEqual([]);
      await store.close();
    }, 60_000);

    test('two runtimes loading at once migrate once (compare-and-set)', async () => {
      const at = url();
      if (at === undefined) return;
      await storedAtVersion1(at);
      const first = openStore(at);
      const second = openStore(at);
      const [a, b] = await Promise.all([openAtVersion2(first), openAtVersion2(second)]);
      expect(a.getSnapshot().context).toEqual({ runs: 1, migrated: 1 });
      expect(b.getSnapshot().context).toEqual({ runs: 1, migrated: 1 });
      const history = await first.history('d1');
      expect(history.filter((r) => r.eventType === MIGRATION_EVENT)).toHaveLength(1);
      expect((await verify(first, { charts: [v1, v2] })).problems).toEqual([]);
      await closeAll(first, second);
    });
  });
}

const run = promisify(execFile);
const tsx = createRequire(import.meta.url).resolve('tsx');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-versions-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

suite('SQLite', () => `sqlite:${join(dir, 'doc.db')}`);

describe('PostgreSQL', () => {
  const server = usePostgres();
  suite('real server', () => server()?.freshUrl());
});

describe('verify across versions detects edits in either segment', () => {
  test.each([
    ['before the migration', 2],
    ['the migration row', 3],
    ['after the migration', 4],
  ])('an edited row %s', async (_where, seq) => {
    const file = join(dir, 'doc.db');
    await storedAtVersion1(`sqlite:${file}`);
    const store = openStore(`sqlite:${file}`);
    const actor = await openAtVersion2(store);
    await actor.send({ type: 'NEXT' });
    await closeAll(store);
    const raw = new Database(file);
    // An attacker with the file: the append-only trigger goes first.
    raw.exec('DROP TRIGGER transitions_no_update');
    raw.prepare('UPDATE transitions SET at = at + 1 WHERE actor_id = ? AND seq = ?').run('d1', seq);
    raw.close();
    const after = openStore(`sqlite:${file}`);
    for (const charts of [[v2], [v1, v2]]) {
      const report = await verify(after, { charts });
      expect(report.problems).toEqual([expect.objectContaining({ kind: 'chain', seq })]);
    }
    await after.close();
  });
});
