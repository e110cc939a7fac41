/**
 * Stores written by earlier releases (test/fixtures/legacy-stores, SQL dumps of
 * stores those releases made; see make.ts there) open with this build, migrate
 * once, and keep every pending timer: its due time, its order, its firing.
 * Timers moved from rows of a timers table into the actor's snapshot, with the
 * next due time on the actor row.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { catalog } from '../machines/index.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { recover } from '../src/durable/recover.ts';
import { verify } from '../src/durable/verify.ts';
import { openStore } from '../src/store/open.ts';
import { POSTGRES_MIGRATIONS, migratePostgres } from '../src/store/postgres/schema.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { SQLITE_SCHEMA_VERSION, sqliteSchemaVersion } from '../src/store/sqlite/schema.ts';
import type { Store, TimerRow } from '../src/store/types.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const charts = Object.values(catalog);
/**
 * The last release (bea8089). Snapshots that carried timers as well as timer rows
 * were only ever written by unreleased commits of this change.
 */
const FIXTURES = [
  { name: 'timers only as rows (bea8089)', dump: 'before-ledger.sql', legacyRows: 3 },
] as const;
/** The source documents' tables, as a user's own queries read them. */
const VIEWS = [
  'SELECT * FROM state_transitions ORDER BY id',
  "SELECT * FROM state_transitions WHERE task_id = 'task-approved' ORDER BY id",
  'SELECT * FROM task_checkpoints ORDER BY task_id',
  'SELECT * FROM agent_states ORDER BY id',
];
/** When every actor of the fixtures was written (their manual clock). */
const T0 = 1_780_000_000_000;
const temp = suiteTempDir('legacy-stores-');
let files = 0;
/** A file of its own in the suite's temp directory. */
const freshFile = () => join(temp(), `store-${++files}.db`);

/** The fixture as the file its release wrote, and the timer rows that release kept. */
function loadFixture(dump: string, file: string): { timers: TimerRow[]; actors: string[] } {
  const db = new Database(file);
  db.exec(readFileSync(join(import.meta.dirname, 'fixtures', 'legacy-stores', dump), 'utf8'));
  const timers = db
    .prepare(
      `SELECT actor_id AS actorId, timer_id AS timerId, event, due_at AS dueAt FROM timers
       ORDER BY due_at, actor_id`,
    )
    .all() as TimerRow[];
  const actors = db.prepare('SELECT id FROM actors ORDER BY id').pluck().all() as string[];
  db.close();
  return { timers, actors };
}

/** What a store says is pending, actor by actor. */
async function pending(store: Store, actors: readonly string[]): Promise<TimerRow[]> {
  const all: TimerRow[] = [];
  for (const id of actors) all.push(...(await store.timers(id)));
  return all.sort((a, b) => a.dueAt - b.dueAt || a.actorId.localeCompare(b.actorId));
}

/**
 * The same story on any store: the timers are those the release kept, found due
 * exactly; recovery fires the overdue one; the others fire when due; verify
 * agrees throughout.
 */
async function keepsItsTimers(
  store: Store,
  expected: { timers: TimerRow[]; actors: string[] },
): Promise<void> {
  expect(await pending(store, expected.actors)).toEqual(expected.timers);
  const [first, second] = expected.timers;
  expect(first?.actorId).toBe('task-retrying');
  expect(await store.nextTimerDue()).toBe(first?.dueAt);
  expect(await store.dueTimers((first?.dueAt ?? 0) - 1, 10)).toEqual([]);
  expect(await store.dueTimers(first?.dueAt ?? 0, 10)).toEqual([first]);
  expect((await verify(store, { charts })).problems).toEqual([]);

  const clock = new ManualClock((first?.dueAt ?? 0) + 1);
  const report = await recover(store, { charts, clock });
  expect(report.counts).toMatchObject({ failed: 0, timersFired: 1 });
  expect((await store.loadActor('task-retrying'))?.state).toBe('running');
  expect(await store.timers('task-retrying')).toEqual([]);
  // The paused task was left as it was (the running ones got their chart's recovery).
  const paused = expected.timers.filter((t) => t.actorId === 'task-paused');
  expect(await store.timers('task-paused')).toEqual(paused);

  // The paused task's timers were armed by recovery: they fire when due.
  clock.advance((second?.dueAt ?? 0) - clock.now());
  await getRuntime(store).drain();
  const fired = (await store.history('task-paused')).filter((row) =>
    row.metadata.includes('"source":"timer"'),
  );
  expect(fired.map((row) => row.eventType)).toHaveLength(1);
  expect((await pending(store, ['task-paused'])).map((t) => t.timerId)).toEqual(
    expected.timers.slice(2).map((t) => t.timerId),
  );
  await store.refreshReadModels();
  expect((await verify(store, { charts })).problems).toEqual([]);
  await getRuntime(store).close();
}

/** Opened again: nothing left to migrate, every version recorded once, verify clean. */
async function opensAgainUnchanged(file: string): Promise<void> {
  const again = openSqliteStore(file, { readModelRefreshMs: 0 });
  const applied = again.db.prepare('SELECT version FROM schema_migrations').pluck().all();
  expect(applied).toEqual(Array.from({ length: SQLITE_SCHEMA_VERSION }, (_, i) => i + 1));
  expect((await verify(again, { charts })).problems).toEqual([]);
  await again.close();
}

describe.each(FIXTURES)('a SQLite store written by an earlier release: $name', (fixture) => {
  it('opens, migrates once, and keeps every pending timer (due times, order, firing, verify)', async () => {
    const file = freshFile();
    const expected = loadFixture(fixture.dump, file);
    expect(expected.timers).toHaveLength(3);
    expect(expected.timers.every((t) => t.dueAt > T0)).toBe(true);

    const store = openSqliteStore(file, { readModelRefreshMs: 0 });
    expect(sqliteSchemaVersion(store.db)).toBe(SQLITE_SCHEMA_VERSION);
    const legacy = () => store.db.prepare('SELECT COUNT(*) FROM legacy_timers').pluck().get();
    expect(legacy()).toBe(fixture.legacyRows);
    expect(
      store.db.prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'timers'").pluck().get(),
    ).toBe(0);
    await keepsItsTimers(store, expected);
    // Every actor with timer rows committed since: its snapshot keeps them now.
    expect(legacy()).toBe(0);
    await store.close();

    await opensAgainUnchanged(file);
  });

  it('refuses nothing it cannot read: a snapshot that is not JSON keeps its timer rows', async () => {
    const file = freshFile();
    const { timers } = loadFixture(fixture.dump, file);
    const db = new Database(file);
    db.prepare(`UPDATE actors SET snapshot = '{not json' WHERE id = 'task-paused'`).run();
    db.close();
    const store = openSqliteStore(file, { readModelRefreshMs: 0 });
    expect(await store.timers('task-paused')).toEqual(
      timers.filter((t) => t.actorId === 'task-paused'),
    );
    await store.close();
  });
});

describe('a SQLite store of schema version 7 (a366ecf): the log keyed by (actor, seq)', () => {
  it('migrates once: every log row keeps its id, every actor loads from its head, logs, views and verify as before', async () => {
    const file = freshFile();
    const db = new Database(file);
    db.exec(
      readFileSync(join(import.meta.dirname, 'fixtures/legacy-stores/v7-two-rows.sql'), 'utf8'),
    );
    expect(sqliteSchemaVersion(db)).toBe(7);
    const all = (sql: string) => db.prepare(sql).all() as Array<Record<string, unknown>>;
    const before = {
      log: all('SELECT rowid AS tx, * FROM transitions ORDER BY rowid'),
      actors: all('SELECT * FROM actors ORDER BY id'),
      views: VIEWS.map((sql) => all(sql)),
      due: db.prepare('SELECT MIN(next_due_at) FROM actors').pluck().get() as number,
    };
    db.close();
    expect(before.log).toHaveLength(19);
    expect(before.views.every((rows) => rows.length > 0)).toBe(true);

    const store = openSqliteStore(file, { readModelRefreshMs: 0 });
    const read = (sql: string) => store.db.prepare(sql).all() as Array<Record<string, unknown>>;
    expect(sqliteSchemaVersion(store.db)).toBe(SQLITE_SCHEMA_VERSION);
    // The same rows under the same ids; the log has no key but its own.
    expect(read('SELECT * FROM transitions ORDER BY tx')).toEqual(before.log);
    expect(read(`SELECT name FROM pragma_index_list('transitions')`)).toEqual([]);
    expect(
      read('SELECT * FROM actors ORDER BY id').map(({ head_tx, ...row }) => {
        // Each actor names its row at its version.
        const head = before.log.find((t) => t['tx'] === head_tx);
        expect([head?.['actor_id'], head?.['seq']]).toEqual([row['id'], row['version']]);
        return row;
      }),
    ).toEqual(before.actors);
    for (const id of before.actors.map((a) => String(a['id']))) {
      const hashes = before.log.filter((t) => t['actor_id'] === id).map((t) => t['hash']);
      expect((await store.history(id)).map((t) => t.hash)).toEqual(hashes);
    }
    // The documents' views answer as they did, before and after a refresh.
    expect(VIEWS.map((sql) => read(sql))).toEqual(before.views);
    await store.refreshReadModels();
    expect(VIEWS.map((sql) => read(sql))).toEqual(before.views);
    expect((await verify(store, { charts })).problems).toEqual([]);

    // Every unfinished actor loads from its head; the overdue backoff fires.
    const clock = new ManualClock(before.due + 1);
    const report = await recover(store, { charts, clock });
    expect(report.counts).toMatchObject({ failed: 0, timersFired: 1 });
    expect((await store.loadActor('task-retrying'))?.state).toBe('running');
    await getRuntime(store).close();
    await store.refreshReadModels();
    expect((await verify(store, { charts })).problems).toEqual([]);
    await store.close();

    await opensAgainUnchanged(file);
  });
});

const postgres = postgresAvailable();

describe.runIf(postgres)('a PostgreSQL store written by an earlier release', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server.destroy();
  });
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  /** The fixture's rows in a schema at the release's version (7). */
  async function seed(
    dump: string,
  ): Promise<{ url: string; expected: ReturnType<typeof loadFixture> }> {
    const file = freshFile();
    const expected = loadFixture(dump, file);
    const url = server.freshUrl();
    const schema = new URL(url).searchParams.get('schema') ?? '';
    const client = new pg.Client({
      connectionString: server.url(),
      options: `-c search_path=${schema}`,
    });
    await client.connect();
    try {
      await migratePostgres(client, { schema, migrations: POSTGRES_MIGRATIONS.slice(0, 7) });
      const db = new Database(file, { readonly: true });
      for (const table of ['actors', 'transitions', 'timers', 'steps']) {
        for (const row of db.prepare(`SELECT * FROM ${table}`).all() as Array<
          Record<string, unknown>
        >) {
          const columns = Object.keys(row);
          await client.query(
            `INSERT INTO ${table} (${columns.join(', ')})
             VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
            Object.values(row),
          );
        }
      }
      db.close();
    } finally {
      await client.end();
    }
    return { url, expected };
  }

  it.each(FIXTURES)(
    'opens, migrates once, and keeps every pending timer: $name',
    async (fixture) => {
      const { url, expected } = await seed(fixture.dump);
      const store = openStore(url);
      opened.push(store);
      await keepsItsTimers(store, expected);
      const schema = new URL(url).searchParams.get('schema') ?? '';
      const versions = await server.sql<{ version: number }>(
        `SELECT version FROM ${schema}.schema_migrations ORDER BY version`,
      );
      expect(versions.map((v) => v.version)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.version));
      const left = await server.sql<{ n: number }>(
        `SELECT COUNT(*)::int AS n FROM ${schema}.legacy_timers`,
      );
      expect(left[0]?.n).toBe(0);
    },
  );
});
