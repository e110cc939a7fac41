/**
 * What only the SQLite store has: pragmas, schema migrations, the append-only
 * trigger, and fault injection (busy, full, read-only, corrupt files).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { ConcurrencyError, StoreError } from '../src/core/errors.ts';
import { openStore } from '../src/store/open.ts';
import { SqliteStore, classifySqliteError, openSqliteStore } from '../src/store/sqlite/store.ts';
import {
  SQLITE_MIGRATIONS,
  SQLITE_SCHEMA_VERSION,
  migrateSqlite,
  sqliteSchemaVersion,
} from '../src/store/sqlite/schema.ts';
import type { Store } from '../src/store/types.ts';
import { write } from './support/writes.ts';
import { createDurableActor, verify } from '../src/index.ts';
import { catalog } from '../machines/index.ts';

const scratch = mkdtempSync(join(tmpdir(), 'agentcharts-sqlite-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(scratch, `${++files}.db`);

/** Everything to close after each test, stores and raw connections alike. */
const opened: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const handle of opened.splice(0).reverse()) await handle.close();
});

function open(url: string): SqliteStore {
  const store = openStore(url);
  expect(store).toBeInstanceOf(SqliteStore);
  opened.push(store);
  return store as SqliteStore;
}

function raw(file: string, options?: Database.Options): Database.Database {
  const db = new Database(file, options);
  opened.push(db);
  return db;
}

/** Durable task-lifecycle actors `ids` on `store`, each sent `events` in order. */
async function runTasks(
  store: Store,
  ids: readonly string[],
  events: ReadonlyArray<Record<string, unknown> & { type: string }>,
): Promise<void> {
  for (const id of ids) {
    const task = await createDurableActor(catalog['task-lifecycle'].machine, {
      id,
      store,
      input: { taskId: id },
    });
    for (const event of events) await task.send(event as never);
  }
}

async function rejection(promise: Promise<unknown>): Promise<StoreError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

/** The StoreError that opening `url` throws. */
function openFailure(url: string): StoreError {
  let error: unknown;
  try {
    opened.push(openStore(url));
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

async function persisted(store: Store, actorId: string) {
  return { actor: await store.loadActor(actorId), history: await store.history(actorId) };
}

describe('SQLite connection settings', () => {
  it('runs a file database in WAL mode with synchronous=FULL, foreign keys and a 5 s busy timeout', () => {
    const store = open(`sqlite:${freshFile()}`);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2);
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000);
  });

  it('opts into synchronous=NORMAL and another busy timeout through URL parameters', () => {
    const store = open(`sqlite:${freshFile()}?synchronous=normal&busy_timeout=250`);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1);
    expect(store.db.pragma('busy_timeout', { simple: true })).toBe(250);
  });

  it('drops a message without a sync of its own and stays at synchronous=FULL for commits', async () => {
    const store = open(`sqlite:${freshFile()}`);
    const sender = {
      ...write('s', 1),
      messagesOut: [{ to: 'r', kind: 'event' as const, body: '{"type":"X"}', idx: 0 }],
    };
    expect(await store.commit([sender])).toEqual([null]);
    const [message] = await store.pendingMessages({ limit: 5 });
    expect(await store.dropMessage(message?.id ?? -1)).toBe(true);
    expect(await store.dropMessage(message?.id ?? -1)).toBe(false);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2);
    expect(await store.pendingMessages({ limit: 5 })).toEqual([]);
  });

  it('lists actors by status the same through the folded projection and through its overlay', async () => {
    const store = openSqliteStore(freshFile(), { readModelRefreshMs: 0 });
    onTestFinished(() => store.close());
    const finished = (w: ReturnType<typeof write>) => ({
      ...w,
      actor: { ...w.actor, status: 'done' as const },
    });
    await store.commit([write('a', 1), write('b', 1), write('c', 1)]);
    await store.commit([finished(write('b', 2))]);
    await store.refreshReadModels();
    const ids = async () => (await store.listActors({ status: 'active' })).map((a) => a.id);
    expect(await ids()).toEqual(['a', 'c']); // folded: the projection's index alone
    await store.commit([finished(write('c', 2)), write('d', 1)]);
    expect(await ids()).toEqual(['a', 'd']); // not folded yet: the overlay
    await store.refreshReadModels();
    expect(await ids()).toEqual(['a', 'd']);
    expect(
      (await store.listActors({ status: 'active', afterId: 'a', limit: 1 })).map((a) => a.id),
    ).toEqual(['d']);
  });

  it('keeps committed data across close and reopen, visible to other connections', async () => {
    const file = freshFile();
    const first = open(`sqlite:${file}`);
    expect(await first.commit([write('a', 1), write('a', 2)])).toEqual([null, null]);
    await first.close();
    expect(raw(file).prepare('SELECT version FROM actors WHERE id = ?').pluck().get('a')).toBe(2);
    const second = open(`sqlite:${file}`);
    expect((await second.history('a')).map((t) => t.seq)).toEqual([1, 2]);
  });
});

describe('SQLite schema migrations', () => {
  it('creates a fresh database at the current schema version', () => {
    const store = open(`sqlite:${freshFile()}`);
    expect(sqliteSchemaVersion(store.db)).toBe(SQLITE_SCHEMA_VERSION);
    const versions = store.db.prepare('SELECT version FROM schema_migrations').pluck().all();
    expect(versions).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
  });

  it('reopens a current database without applying anything again', async () => {
    const file = freshFile();
    await open(`sqlite:${file}`).close();
    const db = raw(file);
    expect(migrateSqlite(db)).toEqual({ from: SQLITE_SCHEMA_VERSION, to: SQLITE_SCHEMA_VERSION });
    expect(db.prepare('SELECT COUNT(*) FROM schema_migrations').pluck().get()).toBe(
      SQLITE_SCHEMA_VERSION,
    );
  });

  it('upgrades an older schema in place, keeping its rows', async () => {
    const file = freshFile();
    const store = open(`sqlite:${file}`);
    await store.commit([write('a', 1)]);
    await store.close();
    const next = [
      ...SQLITE_MIGRATIONS,
      {
        version: SQLITE_SCHEMA_VERSION + 1,
        description: 'test: a note per actor',
        sql: `ALTER TABLE actors ADD COLUMN note TEXT NOT NULL DEFAULT 'kept'`,
      },
    ];
    const db = raw(file);
    expect(migrateSqlite(db, next)).toEqual({
      from: SQLITE_SCHEMA_VERSION,
      to: SQLITE_SCHEMA_VERSION + 1,
    });
    expect(db.prepare('SELECT id, version, note FROM actors').all()).toEqual([
      { id: 'a', version: 1, note: 'kept' },
    ]);
  });

  it('upgrades a version 1 database in place to leases and timer claims, keeping its rows', async () => {
    const file = freshFile();
    const v1 = raw(file);
    migrateSqlite(v1, SQLITE_MIGRATIONS.slice(0, 1));
    v1.prepare(
      `INSERT INTO actors VALUES ('a', 'm', 1, 1, 's1', 'active', '{}', 1, 1, 'h1')`,
    ).run();
    v1.prepare(`INSERT INTO timers VALUES ('a', 't', '{}', 5)`).run();
    v1.close();

    const store = open(`sqlite:${file}`);
    expect(sqliteSchemaVersion(store.db)).toBe(SQLITE_SCHEMA_VERSION);
    expect((await store.loadActor('a'))?.version).toBe(1);
    expect(await store.acquireLeases({ owner: 'w1', now: 10, leaseUntil: 20, limit: 5 })).toEqual([
      { actorId: 'a', owner: 'w1', leaseUntil: 20 },
    ]);
    expect(
      await store.claimDueTimers({ owner: 'w1', now: 10, claimUntil: 20, limit: 5 }),
    ).toMatchObject([{ actorId: 'a', timerId: 't', claimedBy: 'w1' }]);
  });

  it('migrates a database file that predates the schema', async () => {
    const file = freshFile();
    raw(file).exec('CREATE TABLE unrelated (x INTEGER)');
    const store = open(`sqlite:${file}`);
    expect(sqliteSchemaVersion(store.db)).toBe(SQLITE_SCHEMA_VERSION);
    expect(await store.commit([write('a', 1)])).toEqual([null]);
  });

  it('refuses a newer schema with an error naming both versions', async () => {
    const file = freshFile();
    await open(`sqlite:${file}`).close();
    const db = raw(file);
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(99, 0);
    const error = openFailure(`sqlite:${file}`);
    expect(error).toMatchObject({ operation: 'migrate', kind: 'schema_too_new' });
    expect(error.message).toContain('99');
    expect(error.message).toContain(`version ${SQLITE_SCHEMA_VERSION} supported`);
  });

  it('refuses a migration list with a gap', () => {
    const db = raw(':memory:');
    const gap = [{ ...SQLITE_MIGRATIONS[0]!, version: 2 }];
    expect(() => migrateSqlite(db, gap)).toThrow(
      expect.objectContaining({ operation: 'migrate', kind: 'bad_migration' }),
    );
  });
});

describe('SQLite append-only audit log', () => {
  it('refuses UPDATE and DELETE on transitions', async () => {
    const store = open(`sqlite:${freshFile()}`);
    await store.commit([write('a', 1)]);
    for (const sql of [`UPDATE transitions SET to_state = 'edited'`, 'DELETE FROM transitions']) {
      let error: unknown;
      try {
        store.db.prepare(sql).run();
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'SQLITE_CONSTRAINT_TRIGGER' });
      expect((error as Error).message).toContain('append-only');
      expect(classifySqliteError(error)).toBe('constraint');
    }
    expect((await store.history('a'))[0]?.toState).toBe('s1');
  });

  it('returns a stored snapshot that is not JSON exactly as stored', async () => {
    const store = open(`sqlite:${freshFile()}`);
    await store.commit([write('a', 1)]);
    store.db.prepare(`UPDATE actors SET snapshot = '{"value":' WHERE id = 'a'`).run();
    expect((await store.loadActor('a'))?.snapshot).toBe('{"value":');
  });

  it('rejects a write that fails a constraint alone, and commits the rest of its batch', async () => {
    const store = open(`sqlite:${freshFile()}`);
    // A constraint of a damaged or hand-edited file that refuses one actor's rows.
    store.db.exec(`CREATE TRIGGER refuse_ghost BEFORE INSERT ON transitions
      WHEN NEW.actor_id = 'ghost' BEGIN SELECT RAISE(ABORT, 'no ghosts'); END`);
    const [collision, fine] = await store.commit([write('ghost', 1), write('b', 1)]);
    expect(collision).toMatchObject({ name: 'StoreError', kind: 'constraint', actorId: 'ghost' });
    expect(fine).toBeNull();
    expect(await store.loadActor('ghost')).toBeUndefined();
    expect(await store.loadActor('b')).toBeDefined();
  });

  it('shows an orphan log row beside the actor it names, and verify names that actor', async () => {
    // The log has no (actor, seq) key (version 8): an orphan row, as a damaged or
    // hand-edited file could hold, does not refuse the actor's write at that seq,
    // but both rows are in the actor's log and verify reports it.
    const store = open(`sqlite:${freshFile()}`);
    store.db.pragma('foreign_keys = OFF');
    store.db
      .prepare(
        `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
           metadata, prev_hash, hash)
         VALUES ('ghost', 1, NULL, 's1', 'NEXT', '{}', 0, '{}', 'h0', 'x')`,
      )
      .run();
    store.db.pragma('foreign_keys = ON');
    await runTasks(store, ['ghost', 'b'], [{ type: 'START' }]);
    const rows = async () => (await store.history('ghost')).map((r) => [r.seq, r.hash === 'x']);
    const both = [
      [1, true],
      [1, false],
      [2, false],
    ];
    expect(await rows()).toEqual(both);
    await store.refreshReadModels();
    expect(await rows()).toEqual(both);
    const report = await verify(store, { charts: Object.values(catalog) });
    // The control: the actor written beside it, alone in its log, is no problem.
    expect(report.actorsChecked).toBe(2);
    expect(report.problems.map((p) => p.actorId)).toEqual(['ghost']);
  });
});

describe('SQLite log read through its read model', () => {
  it('verify judges the log, not the read model of its keys: a damaged projection leaves an honest log clean, an edited log is named', async () => {
    const store = open(`sqlite:${freshFile()}`);
    await runTasks(
      store,
      ['honest', 'edited'],
      [{ type: 'START' }, { type: 'COMPLETE', result: { ok: true } }],
    );
    await store.refreshReadModels();
    // The read model loses a key of the honest actor: paged reads miss that row...
    store.db.prepare(`DELETE FROM transition_keys WHERE actor_id = 'honest' AND seq = 1`).run();
    expect((await store.history('honest')).map((r) => r.seq)).toEqual([2, 3]);
    // ...but the log read whole is the log, and verify finds nothing wrong with it.
    expect((await store.readActorLog('honest'))?.rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    // The control: a row of the other actor's log edited in place is named.
    store.db.exec(`DROP TRIGGER transitions_no_update;
      UPDATE transitions SET event = '{"type":"COMPLETE","result":{"ok":false}}'
      WHERE actor_id = 'edited' AND seq = 3;`);
    const report = await verify(store, { charts: Object.values(catalog) });
    expect(report.problems.map((p) => [p.actorId, p.kind])).toEqual([['edited', 'chain']]);
  });
});

describe('SQLite fault injection', () => {
  it('fails a commit as busy while another connection holds the write lock, then recovers', async () => {
    const file = freshFile();
    const store = open(`sqlite:${file}?busy_timeout=50`);
    await store.commit([write('a', 1)]);
    const other = raw(file);
    other.exec('BEGIN EXCLUSIVE');

    const single = await rejection(store.commit([write('a', 2)]));
    expect(single).toMatchObject({ operation: 'commit', kind: 'busy', actorId: 'a' });
    const batch = await rejection(store.commit([write('a', 2), write('b', 1)]));
    expect(batch).toMatchObject({ operation: 'commit', kind: 'busy', actorId: undefined });
    expect((await store.loadActor('a'))?.version).toBe(1);

    other.exec('ROLLBACK');
    expect(await store.commit([write('a', 2), write('b', 1)])).toEqual([null, null]);
    expect((await store.loadActor('a'))?.version).toBe(2);
  });

  it('fails a whole batch as full when the database cannot grow, writing nothing', async () => {
    const store = open(`sqlite:${freshFile()}`);
    await store.commit([write('a', 1)]);
    const before = await persisted(store, 'a');
    const pages = store.db.pragma('page_count', { simple: true }) as number;
    store.db.pragma(`max_page_count = ${pages}`);

    const big = JSON.stringify({ value: 'x'.repeat(256 * 1024) });
    const error = await rejection(store.commit([write('a', 2), write('big', 1, big)]));
    expect(error).toMatchObject({ operation: 'commit', kind: 'full' });
    expect(await persisted(store, 'a')).toEqual(before);
    expect(await persisted(store, 'big')).toEqual({ actor: undefined, history: [] });

    store.db.pragma(`max_page_count = ${pages * 1000}`);
    expect(await store.commit([write('a', 2), write('big', 1, big)])).toEqual([null, null]);
  });

  it('serves reads but fails writes as readonly when opened with readonly=1', async () => {
    const file = freshFile();
    const writer = open(`sqlite:${file}`);
    await writer.commit([write('a', 1)]);
    await writer.close();

    const store = open(`sqlite:${file}?readonly=1`);
    expect((await store.loadActor('a'))?.version).toBe(1);
    expect(await rejection(store.commit([write('a', 2)]))).toMatchObject({
      operation: 'commit',
      kind: 'readonly',
      actorId: 'a',
    });
    expect(
      await rejection(store.beginStep({ key: 'a:s', actorId: 'a', name: 's', startedAt: 1 })),
    ).toMatchObject({ operation: 'step', kind: 'readonly' });
    expect((await store.loadActor('a'))?.version).toBe(1);
  });

  it('refuses to open a file that is not a database as corrupt', () => {
    const file = freshFile();
    writeFileSync(file, 'this is not a database '.repeat(100));
    expect(openFailure(`sqlite:${file}`)).toMatchObject({
      operation: 'open',
      kind: 'corrupt',
    });
  });

  it('refuses to open a file in a missing directory, or a missing file read-only', () => {
    const missing = join(scratch, 'no-such-dir', 'x.db');
    expect(openFailure(`sqlite:${missing}`)).toMatchObject({ kind: 'cantopen' });
    expect(openFailure(`sqlite:${freshFile()}?readonly=1`)).toMatchObject({
      kind: 'cantopen',
    });
  });

  it('still reports a version conflict as a ConcurrencyError, not a store failure', async () => {
    const store = openSqliteStore(':memory:', { busyTimeoutMs: 10 });
    opened.push(store);
    await store.commit([write('a', 1)]);
    const [error] = await store.commit([write('a', 1)]);
    expect(error).toBeInstanceOf(ConcurrencyError);
  });
});

describe('classifySqliteError', () => {
  it.each([
    ['SQLITE_BUSY', 'busy'],
    ['SQLITE_BUSY_SNAPSHOT', 'busy'],
    ['SQLITE_LOCKED', 'busy'],
    ['SQLITE_FULL', 'full'],
    ['SQLITE_READONLY_DBMOVED', 'readonly'],
    ['SQLITE_IOERR_WRITE', 'io'],
    ['SQLITE_CORRUPT', 'corrupt'],
    ['SQLITE_NOTADB', 'corrupt'],
    ['SQLITE_CONSTRAINT_PRIMARYKEY', 'constraint'],
    ['SQLITE_WHATEVER', 'internal'],
  ])('classifies %s as %s', (code, kind) => {
    expect(classifySqliteError({ code })).toBe(kind);
  });

  it('classifies an error without a SQLite code as internal', () => {
    expect(classifySqliteError(new TypeError('boom'))).toBe('internal');
    expect(classifySqliteError(undefined)).toBe('internal');
  });
});
