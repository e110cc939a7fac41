/**
 * What only the PostgreSQL store has, against a real throwaway server: schema
 * migrations under an advisory lock, several stores (workers) sharing one
 * database, and faults: a wrong URL, a refused connection, a statement timeout, a
 * connection killed mid-transaction, a server that goes away and comes back.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { getRuntime } from '../src/durable/open.ts';
import { createMetrics } from '../src/observe/metrics.ts';
import { ConcurrencyError, StoreError } from '../src/core/errors.ts';
import { openStore } from '../src/store/open.ts';
import { PostgresStore, classifyPostgresError } from '../src/store/postgres/store.ts';
import {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  migratePostgres,
  postgresSchemaVersion,
} from '../src/store/postgres/schema.ts';
import type { Store, StoreRetry } from '../src/store/types.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';
import { write } from './support/writes.ts';

async function rejection(promise: Promise<unknown>): Promise<StoreError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

async function persisted(store: Store, actorId: string) {
  return {
    actor: await store.loadActor(actorId),
    history: await store.history(actorId),
    timers: await store.timers(actorId),
  };
}

describe('classifyPostgresError', () => {
  it.each([
    ['57014', 'timeout'],
    ['40001', 'conflict'],
    ['40P01', 'conflict'],
    ['53100', 'full'],
    ['25006', 'readonly'],
    ['57P01', 'connection'],
    ['08006', 'connection'],
    ['23505', 'constraint'],
    ['22021', 'invalid_data'],
    ['28P01', 'permission'],
    ['3D000', 'cantopen'],
    ['ECONNREFUSED', 'connection'],
    ['ENOTFOUND', 'connection'],
    ['XX000', 'internal'],
  ])('classifies %s as %s', (code, kind) => {
    expect(classifyPostgresError({ code })).toBe(kind);
  });

  it("classifies pg's dropped-connection messages and refused multi-address connects", () => {
    expect(classifyPostgresError(new Error('Connection terminated unexpectedly'))).toBe(
      'connection',
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(classifyPostgresError(new AggregateError([refused]))).toBe('connection');
    expect(classifyPostgresError(new TypeError('boom'))).toBe('internal');
  });
});

const available = postgresAvailable();

describe.runIf(available)('PostgreSQL store against a real server', () => {
  let server: PostgresServer;
  const opened: Store[] = [];
  const raws: pg.Client[] = [];

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server.destroy();
  });
  afterEach(async () => {
    for (const client of raws.splice(0)) await client.end().catch(() => undefined);
    for (const store of opened.splice(0)) await store.close();
  });

  function open(url: string): PostgresStore {
    const store = openStore(url);
    expect(store).toBeInstanceOf(PostgresStore);
    opened.push(store);
    return store as PostgresStore;
  }

  /** Waits until some statement of the server waits for a row lock. */
  async function blockedOnLock(client: pg.Client): Promise<void> {
    for (let i = 0; i < 500; i++) {
      // Inside a transaction the activity view is read once and then cached: read it anew.
      await client.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
      );
      if ((rows[0]?.n ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('no statement ever waited for the lock');
  }

  /** A raw superuser connection, in the schema of `url` when it names one. */
  async function raw(url?: string): Promise<pg.Client> {
    const schema = url === undefined ? undefined : new URL(url).searchParams.get('schema');
    const client = new pg.Client({
      connectionString: server.url(),
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    client.on('error', () => undefined);
    await client.connect();
    raws.push(client);
    return client;
  }

  describe('schema migrations', () => {
    it('creates a fresh schema at the current version on first use', async () => {
      const url = server.freshUrl();
      const store = open(url);
      await store.connect();
      const client = await raw(url);
      expect(await postgresSchemaVersion(client)).toBe(POSTGRES_SCHEMA_VERSION);
      const versions = await client.query<{ version: number }>(
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(versions.rows.map((r) => r.version)).toEqual(
        POSTGRES_MIGRATIONS.map((m) => m.version),
      );
    });

    it('lets several workers open a fresh database at once, migrating it exactly once', async () => {
      const url = server.freshUrl();
      const stores = Array.from({ length: 6 }, () => open(url));
      await Promise.all(stores.map((s) => s.connect()));
      const client = await raw(url);
      const count = await client.query<{ n: number }>(
        'SELECT COUNT(*)::int AS n FROM schema_migrations',
      );
      expect(count.rows[0]?.n).toBe(POSTGRES_SCHEMA_VERSION);
      expect(await stores[0]?.commit([write('a', 1)])).toEqual([null]);
    });

    it('upgrades a version 1 schema in place, keeping its rows', async () => {
      const url = server.freshUrl();
      const schema = new URL(url).searchParams.get('schema') ?? '';
      const client = await raw(url);
      expect(
        await migratePostgres(client, { schema, migrations: POSTGRES_MIGRATIONS.slice(0, 1) }),
      ).toEqual({ from: 0, to: 1 });
      await client.query(
        `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
           created_at, updated_at, head_hash) VALUES ('a', 'm', 1, 1, 's1', 'active', '{}', 1, 1, 'h1')`,
      );

      const store = open(url);
      expect((await store.loadActor('a'))?.version).toBe(1);
      expect(await postgresSchemaVersion(client)).toBe(POSTGRES_SCHEMA_VERSION);
      const next = write('a', 2);
      expect(await store.commit([next])).toEqual([null]);
      expect(await store.loadActor('a')).toEqual({ ...next.actor, createdAt: 1 });
    });

    it('applies a newer migration list in place and reports both versions', async () => {
      const url = server.freshUrl();
      await open(url).connect();
      const client = await raw(url);
      const next = [
        ...POSTGRES_MIGRATIONS,
        {
          version: POSTGRES_SCHEMA_VERSION + 1,
          description: 'test: a note per actor',
          sql: `ALTER TABLE actors ADD COLUMN note TEXT NOT NULL DEFAULT 'kept'`,
        },
      ];
      expect(await migratePostgres(client, { migrations: next })).toEqual({
        from: POSTGRES_SCHEMA_VERSION,
        to: POSTGRES_SCHEMA_VERSION + 1,
      });
      expect(await migratePostgres(client, { migrations: next })).toEqual({
        from: POSTGRES_SCHEMA_VERSION + 1,
        to: POSTGRES_SCHEMA_VERSION + 1,
      });
    });

    it('refuses a newer schema with an error naming both versions, on every operation', async () => {
      const url = server.freshUrl();
      await open(url).connect();
      const client = await raw(url);
      await client.query(
        `INSERT INTO schema_migrations (version, description, applied_at) VALUES (99, 'future', 0)`,
      );
      const store = open(url);
      const error = await rejection(store.connect());
      expect(error).toMatchObject({ operation: 'migrate', kind: 'schema_too_new' });
      expect(error.message).toContain('99');
      expect(error.message).toContain(`version ${POSTGRES_SCHEMA_VERSION} supported`);
      expect(await rejection(store.commit([write('a', 1)]))).toMatchObject({
        kind: 'schema_too_new',
      });
      expect(await client.query('SELECT 1 FROM actors')).toMatchObject({ rowCount: 0 });
    });

    it('refuses a migration list with a gap', async () => {
      const client = await raw();
      const gap = [{ ...POSTGRES_MIGRATIONS[0]!, version: 2 }];
      await expect(migratePostgres(client, { migrations: gap })).rejects.toMatchObject({
        operation: 'migrate',
        kind: 'bad_migration',
      });
    });
  });

  describe('the audit log and the data PostgreSQL refuses', () => {
    it('refuses UPDATE, DELETE and TRUNCATE on transitions', async () => {
      const url = server.freshUrl();
      const store = open(url);
      await store.commit([write('a', 1)]);
      const client = await raw(url);
      for (const sql of [
        `UPDATE transitions SET to_state = 'edited'`,
        'DELETE FROM transitions',
        'TRUNCATE transitions CASCADE',
      ]) {
        const error: unknown = await client.query(sql).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ code: '23001' });
        expect((error as Error).message).toContain('append-only');
        expect(classifyPostgresError(error)).toBe('constraint');
      }
      expect((await store.history('a'))[0]?.toState).toBe('s1');
    });

    it('rejects a write PostgreSQL cannot store (a NUL byte) alone, and commits the rest', async () => {
      const store = open(server.freshUrl());
      const [bad, fine] = await store.commit([write('a\u0000b', 1), write('c', 1)]);
      expect(bad).toMatchObject({ name: 'StoreError', kind: 'invalid_data', actorId: 'a\u0000b' });
      expect(fine).toBeNull();
      expect((await store.listActors()).map((a) => a.id)).toEqual(['c']);
    });

    it('commits a batch as one statement per phase: a conflict, a second write of one actor, a fenced write and creations each as alone', async () => {
      const store = open(server.freshUrl());
      await store.commit([write('a', 1), write('b', 1), write('c', 1), write('d', 1)]);
      await store.commit([write('a', 2)]);
      const fenced = { ...write('d', 2), lease: { owner: 'w1', now: 5_000 } };
      const results = await store.commit([
        write('c', 2),
        write('a', 2), // a is at 2 already
        write('b', 2),
        write('b', 3), // b's second write, after its first
        fenced, // d has no lease
        write('e', 1),
        write('a', 1), // a exists
        write('e', 2), // e's update, after its creation
        { ...write('f', 1), lease: { owner: 'w1', now: 5_000 } }, // no lease on a new row
      ]);
      expect(results[0]).toBeNull();
      expect(results[1]).toMatchObject({
        name: 'ConcurrencyError',
        actorId: 'a',
        expectedVersion: 1,
        actualVersion: 2,
      });
      expect(results.slice(2, 4)).toEqual([null, null]);
      expect(results[4]).toMatchObject({ name: 'LeaseLostError', actorId: 'd' });
      expect(results[5]).toBeNull();
      expect(results[6]).toMatchObject({
        name: 'ConcurrencyError',
        actorId: 'a',
        actualVersion: 2,
      });
      expect(results[7]).toBeNull();
      expect(results[8]).toMatchObject({ name: 'LeaseLostError', actorId: 'f' });
      expect((await store.history('e')).map((t) => t.seq)).toEqual([1, 2]);
      expect(await store.loadActor('f')).toBeUndefined();
      expect((await store.history('b')).map((t) => t.seq)).toEqual([1, 2, 3]);
      expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2]);
      expect((await store.loadActor('c'))?.state).toBe('s2');
      expect((await store.loadActor('d'))?.version).toBe(1);
    });

    it('rejects an update PostgreSQL cannot store (a NUL byte) alone from a batch of updates, and commits the rest', async () => {
      const store = open(server.freshUrl());
      await store.commit([write('a', 1), write('c', 1)]);
      const [bad, fine] = await store.commit([write('a', 2, '{"value":"\u0000"}'), write('c', 2)]);
      expect(bad).toMatchObject({ name: 'StoreError', kind: 'invalid_data', actorId: 'a' });
      expect(fine).toBeNull();
      expect((await store.loadActor('a'))?.version).toBe(1);
      expect((await store.loadActor('c'))?.version).toBe(2);
    });
  });

  describe('workers sharing one database', () => {
    it('orders two workers on one actor by compare-and-set: the loser gets ConcurrencyError', async () => {
      const url = server.freshUrl();
      const [one, two] = [open(url), open(url)];
      await one.commit([write('a', 1)]);
      const results = await Promise.all([one.commit([write('a', 2)]), two.commit([write('a', 2)])]);
      const errors = results.flat().filter((r) => r !== null);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(ConcurrencyError);
      expect(errors[0]).toMatchObject({ actorId: 'a', expectedVersion: 1, actualVersion: 2 });
      expect((await two.history('a')).map((t) => t.seq)).toEqual([1, 2]);
    });

    /**
     * Two workers that never run a statement again: a deadlock between their
     * batches fails one of them (kind `conflict`) instead of being hidden by a retry.
     */
    const unretried = () => server.freshUrl({ rollback_retries: '0' });

    it('never deadlocks when two workers batch the same actors in opposite orders', async () => {
      const url = unretried();
      const [one, two] = [open(url), open(url)];
      const ids = Array.from({ length: 6 }, (_, i) => `actor-${i}`);
      await one.commit(ids.map((id) => write(id, 1)));
      for (let version = 2; version <= 30; version++) {
        const forward = ids.map((id) => write(id, version));
        const backward = [...forward].reverse();
        const [a, b] = await Promise.all([one.commit(forward), two.commit(backward)]);
        // Every actor moved exactly once per round: one batch won it, the other conflicted.
        ids.forEach((_, i) => {
          const wins = [a[i], b[ids.length - 1 - i]].filter((r) => r === null);
          expect(wins).toHaveLength(1);
        });
      }
      for (const id of ids) expect((await one.loadActor(id))?.version).toBe(30);
    });

    it('never deadlocks when two workers batch creations and updates of the same actors in opposite orders', async () => {
      const url = unretried();
      const [one, two] = [open(url), open(url)];
      const ids = Array.from({ length: 6 }, (_, i) => `actor-${i}`);
      await one.commit(ids.map((id) => write(id, 1)));
      for (let version = 2; version <= 20; version++) {
        // New ids that sort before and after the existing ones.
        const fresh = ['a', 'z'].flatMap((p) =>
          [1, 2].map((i) => write(`${p}-${version}-${i}`, 1)),
        );
        const forward = [...ids.map((id) => write(id, version)), ...fresh];
        const backward = [...forward].reverse();
        const [a, b] = await Promise.all([one.commit(forward), two.commit(backward)]);
        // Each write went to one batch; the other lost it to compare-and-set.
        forward.forEach((_, i) => {
          const pair = [a[i], b[forward.length - 1 - i]];
          expect(pair.filter((r) => r === null)).toHaveLength(1);
          expect(pair.find((r) => r !== null)).toBeInstanceOf(ConcurrencyError);
        });
      }
      for (const id of ids) expect((await one.loadActor(id))?.version).toBe(20);
      expect(await one.listActors({ limit: 1000 })).toHaveLength(6 + 19 * 4);
    });

    it('never deadlocks when each of two workers updates one actor and, in the same batch, creates the other, which exists', async () => {
      // A creation decided before another process created the actor inserts an id
      // that exists, and waits for the transaction updating it. With a batch's
      // updates before its creations, these two batches waited on each other until
      // PostgreSQL broke the deadlock by failing one of them whole.
      const url = unretried();
      const [one, two] = [open(url), open(url)];
      for (let round = 0; round < 10; round++) {
        const [x, y] = [`x-${round}`, `y-${round}`];
        await one.commit([write(x, 1), write(y, 1)]);
        const [a, b] = await Promise.all([
          one.commit([write(x, 2), write(y, 1)]),
          two.commit([write(y, 2), write(x, 1)]),
        ]);
        // Each update commits; each stale creation is refused by compare-and-set.
        for (const [updated, created] of [a, b]) {
          expect(updated).toBeNull();
          expect(created).toBeInstanceOf(ConcurrencyError);
          expect(created).toMatchObject({ expectedVersion: 0, actualVersion: expect.any(Number) });
        }
        expect((await one.loadActor(x))?.version).toBe(2);
        expect((await one.loadActor(y))?.version).toBe(2);
      }
    });

    it('creates a batch of actors in byte order of their ids, as every other statement locks them', async () => {
      // The test database sorts text by ICU's en-US rules, where "a" comes before "Z";
      // in byte order "Z" comes first, as actors.id and the JavaScript side sort them.
      const url = server.freshUrl();
      const store = open(url);
      const ids = ['a-1', 'Z-1', 'é-1', 'B-1'];
      const results = await store.commit(ids.map((id) => write(id, 1)));
      expect(results).toEqual([null, null, null, null]);
      const client = await raw(url);
      const { rows } = await client.query<{ id: string }>('SELECT id FROM actors ORDER BY ctid');
      expect(rows.map((r) => r.id)).toEqual(['B-1', 'Z-1', 'a-1', 'é-1']);
      const icu = await client.query<{ id: string }>(
        'SELECT id FROM unnest($1::text[]) AS u (id) ORDER BY id',
        [ids],
      );
      expect(icu.rows.map((r) => r.id)).not.toEqual(['B-1', 'Z-1', 'a-1', 'é-1']);
    });

    it.each([
      ['an update', 'r', 2],
      ['a creation (a spawned child)', 'kid', 1],
    ] as const)(
      'delivers a message once when it is dropped while %s consuming it waits: the drop wins, or, rolled back, the write does',
      async (_, actorId, version) => {
        const url = server.freshUrl();
        const store = open(url);
        await store.commit([write('p', 1), write('r', 1)]);
        const message = (to: string, idx: number) => ({
          to,
          kind: 'event' as const,
          body: '{}',
          idx,
        });
        await store.commit([
          { ...write('p', 2), messagesOut: [message(actorId, 0), message(actorId, 1)] },
        ]);
        const [first, second] = (await store.pendingMessages({ limit: 10 })).map((m) => m.id);
        const consuming = (id: number | undefined) => ({
          ...write(actorId, version),
          consumeMessage: id,
          messagesOut: [message('p', 0)],
          ...(version === 1 ? { parentId: 'p' } : {}),
        });
        const client = await raw(url);
        for (const [id, outcome] of [
          [first, 'COMMIT'],
          [second, 'ROLLBACK'],
        ] as const) {
          await client.query('BEGIN');
          await client.query('DELETE FROM messages WHERE id = $1', [id]);
          const pending = store.commit([consuming(id)]);
          await blockedOnLock(client);
          await client.query(outcome);
          const [result] = await pending;
          if (outcome === 'COMMIT') {
            // Dropped: the write conflicts and writes nothing, its own message neither.
            expect(result).toBeInstanceOf(ConcurrencyError);
            expect(result).toMatchObject({ actorId, expectedVersion: version - 1 });
            expect((await store.loadActor(actorId))?.version).toBe(version - 1 || undefined);
            expect(await store.pendingMessages({ to: 'p', limit: 10 })).toEqual([]);
          } else {
            // The drop rolled back: the write consumed the message.
            expect(result).toBeNull();
            expect((await store.loadActor(actorId))?.version).toBe(version);
            expect(await store.pendingMessages({ to: 'p', limit: 10 })).toHaveLength(1);
          }
        }
        expect(await store.pendingMessages({ to: actorId, limit: 10 })).toEqual([]);
      },
    );

    it('creates a spawned child once when two workers deliver its message at once', async () => {
      const url = server.freshUrl();
      const [one, two] = [open(url), open(url)];
      await one.commit([write('p', 1)]);
      await one.commit([
        { ...write('p', 2), messagesOut: [{ to: 'kid', kind: 'spawn', body: '{}', idx: 0 }] },
      ]);
      const [spawn] = await one.pendingMessages({ limit: 1 });
      const create = { ...write('kid', 1), consumeMessage: spawn?.id, parentId: 'p' };
      const results = (await Promise.all([one.commit([create]), two.commit([create])])).flat();
      expect(results.filter((r) => r === null)).toHaveLength(1);
      expect(results.find((r) => r !== null)).toBeInstanceOf(ConcurrencyError);
      expect((await one.childrenOf('p')).map((row) => row.id)).toEqual(['kid']);
      expect(await one.history('kid')).toHaveLength(1);
      expect(await one.pendingMessages({ limit: 10 })).toEqual([]);
    });

    it('claims the next due actor when the earliest is locked by another worker, and that one once it is free', async () => {
      const url = server.freshUrl();
      const store = open(url);
      const due = (id: string, dueAt: number) => ({
        ...write(
          id,
          1,
          JSON.stringify({
            value: 's',
            agentcharts: {
              timers: [{ key: 't', sendId: 't', event: { type: 'xstate.after.t' }, due: dueAt }],
            },
          }),
        ),
        nextDueAt: dueAt,
      });
      await store.commit([due('early', 10), due('late', 20)]);
      const client = await raw(url);
      await client.query('BEGIN');
      await client.query("SELECT id FROM actors WHERE id = 'early' FOR UPDATE");
      const claim = async (owner: string) =>
        (await store.claimDueTimers({ owner, now: 100, claimUntil: 1_000, limit: 1 })).map(
          (t) => t.actorId,
        );
      expect(await claim('A')).toEqual(['late']);
      await client.query('ROLLBACK');
      expect(await claim('B')).toEqual(['early']);
      expect(await claim('C')).toEqual([]);
    });

    it('splits expired leases among concurrent workers without overlap', async () => {
      const url = server.freshUrl();
      const workers = Array.from({ length: 4 }, () => open(url));
      await workers[0]!.commit(Array.from({ length: 40 }, (_, i) => write(`a${i}`, 1)));
      const taken = await Promise.all(
        workers.map((w, i) =>
          w.acquireLeases({ owner: `w${i}`, now: 10, leaseUntil: 1_000, limit: 15 }),
        ),
      );
      const all = taken.flat().map((l) => l.actorId);
      expect(new Set(all).size).toBe(all.length);
      expect(all).toHaveLength(40);
    });
  });

  describe('faults', () => {
    it('refuses a malformed URL synchronously as bad_url, without echoing the password', () => {
      let error: unknown;
      try {
        openStore('postgres://admin:hunter2@[::1/db');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ operation: 'open', kind: 'bad_url' });
      expect((error as Error).message).not.toContain('hunter2');
    });

    it('fails as connection, naming the actor, when nothing listens on the port', async () => {
      const store = open('postgres://agentcharts:hunter2@127.0.0.1:1/db?connect_timeout=2');
      const error = await rejection(store.commit([write('a', 1)]));
      expect(error).toMatchObject({ operation: 'commit', kind: 'connection', actorId: 'a' });
      expect(error.message).not.toContain('hunter2');
      expect(await rejection(store.loadActor('a'))).toMatchObject({
        operation: 'load',
        kind: 'connection',
        actorId: 'a',
      });
    });

    it('fails as permission on a wrong password and cantopen on a missing database', async () => {
      const wrong = server.url().replace(`:${server.password}@`, ':hunter2@');
      const denied = await rejection(open(wrong).loadActor('a'));
      expect(denied).toMatchObject({ operation: 'load', kind: 'permission' });
      expect(denied.message).not.toContain('hunter2');
      const missing = await rejection(open(server.url({}, 'no_such_db')).loadActor('a'));
      expect(missing).toMatchObject({ kind: 'cantopen' });
    });

    /**
     * Runs `commit` while a raw transaction holds the row `held` locks, waits
     * until the store's statement waits for it, then locks `wanted`, which that
     * statement holds: a deadlock. The store's backend detects it first
     * (`deadlock_timeout` 1 s; the raw session's is a minute) and rolls its own
     * transaction back, which lets the raw one lock `wanted`; the raw one then
     * rolls back. So the raw lock returning proves the store's attempt was
     * rolled back for a deadlock.
     */
    async function deadlocked<T>(
      url: string,
      held: string,
      wanted: string,
      commit: () => Promise<T>,
    ) {
      const client = await raw(url);
      await client.query("SET deadlock_timeout = '60s'");
      await client.query('BEGIN');
      await client.query(held);
      const pending = commit();
      await blockedOnLock(client);
      await client.query(wanted);
      await client.query('ROLLBACK');
      return pending;
    }

    /** What the control's and the store's onRetry hear, in order. */
    function retriesTold(control: Store, store: Store): Array<[string, StoreRetry]> {
      const told: Array<[string, StoreRetry]> = [];
      control.onRetry?.((retry) => told.push(['control', retry]));
      store.onRetry?.((retry) => told.push(['store', retry]));
      return told;
    }

    it.each([
      ['a batch (one statement)', [] as string[]],
      // Its statement fails on c's data: the batch then runs a statement per write
      // in one transaction, and that transaction deadlocks.
      ['a batch with an update PostgreSQL cannot store (a statement per write)', ['c']],
    ])(
      'runs %s PostgreSQL rolled back for a deadlock again, and commits it; with rollback_retries=0 it fails as conflict, writing nothing',
      async (_, bad) => {
        // The batch locks a, then waits for b, which the raw transaction holds.
        const lockA = `SELECT 1 FROM actors WHERE id = 'a' FOR UPDATE`;
        const lockB = `SELECT 1 FROM actors WHERE id = 'b' FOR UPDATE`;
        const ids = ['a', 'b', ...bad];
        const batch = () =>
          ids.map((id) => write(id, 2, bad.includes(id) ? '{"value":"\u0000"}' : undefined));
        const controlUrl = server.freshUrl({ rollback_retries: '0' });
        const url = server.freshUrl();
        const [control, store] = [open(controlUrl), open(url)];
        const told = retriesTold(control, store);
        for (const s of [control, store]) await s.commit(ids.map((id) => write(id, 1)));
        const before = { a: await persisted(control, 'a'), b: await persisted(control, 'b') };

        const failed = await deadlocked(controlUrl, lockB, lockA, () =>
          rejection(control.commit(batch())),
        );
        expect(failed).toMatchObject({ operation: 'commit', kind: 'conflict' });
        expect((failed.cause as { code?: string }).code).toBe('40P01');
        expect({ a: await persisted(control, 'a'), b: await persisted(control, 'b') }).toEqual(
          before,
        );

        const results = await deadlocked(url, lockB, lockA, () => store.commit(batch()));
        expect(results.slice(0, 2)).toEqual([null, null]);
        expect(told).toEqual([
          ['store', { code: '40P01', attempt: 1, detail: 'deadlock detected' }],
        ]);
        for (const error of results.slice(2)) {
          expect(error).toMatchObject({ name: 'StoreError', kind: 'invalid_data', actorId: 'c' });
        }
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2]);
        expect((await store.history('b')).map((t) => t.seq)).toEqual([1, 2]);
        for (const id of bad) expect((await store.loadActor(id))?.version).toBe(1);
      },
    );

    it('runs a lone write PostgreSQL rolled back for a deadlock again, and commits it; with rollback_retries=0 it fails as conflict, naming the actor', async () => {
      // A write delivering a message locks the message, then its actor's row.
      const setUp = async (store: Store) => {
        await store.commit([write('p', 1), write('r', 1)]);
        await store.commit([
          { ...write('p', 2), messagesOut: [{ to: 'r', kind: 'event', body: '{}', idx: 0 }] },
        ]);
        const [message] = await store.pendingMessages({ limit: 1 });
        if (message === undefined) throw new Error('no message was written');
        return {
          delivery: { ...write('r', 2), consumeMessage: message.id },
          lockMessage: `SELECT 1 FROM messages WHERE id = ${message.id} FOR UPDATE`,
        };
      };
      const lockR = `SELECT 1 FROM actors WHERE id = 'r' FOR UPDATE`;
      const controlUrl = server.freshUrl({ rollback_retries: '0' });
      const url = server.freshUrl();
      const [control, store] = [open(controlUrl), open(url)];
      const told = retriesTold(control, store);
      // The runtime logs each run again at WARN.
      const logged: string[] = [];
      const runtime = getRuntime(store, {
        logger: pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) }),
      });
      // And the metrics count each, by code.
      const metrics = createMetrics(runtime, { store: false });
      const rollbackRetries = async () =>
        (await metrics.registry.getSingleMetric('agentcharts_store_rollback_retries_total')?.get())
          ?.values;

      const refused = await setUp(control);
      const failed = await deadlocked(controlUrl, lockR, refused.lockMessage, () =>
        rejection(control.commit([refused.delivery])),
      );
      expect(failed).toMatchObject({ operation: 'commit', kind: 'conflict', actorId: 'r' });
      expect((await control.loadActor('r'))?.version).toBe(1);
      expect(await control.pendingMessages({ limit: 10 })).toHaveLength(1);

      const delivered = await setUp(store);
      const results = await deadlocked(url, lockR, delivered.lockMessage, () =>
        store.commit([delivered.delivery]),
      );
      expect(results).toEqual([null]);
      expect((await store.loadActor('r'))?.version).toBe(2);
      expect(await store.pendingMessages({ limit: 10 })).toEqual([]);
      expect(told).toEqual([['store', { code: '40P01', attempt: 1, detail: 'deadlock detected' }]]);
      expect(await rollbackRetries()).toMatchObject([{ labels: { code: '40P01' }, value: 1 }]);
      metrics.stop();
      await runtime.close();
      expect(logged.map((line) => JSON.parse(line) as Record<string, unknown>)).toMatchObject([
        {
          level: 40,
          code: '40P01',
          attempt: 1,
          msg: 'the store ran a statement again: the database rolled it back',
        },
      ]);
    });

    it('runs a commit and a message drop again on a server whose transactions are serializable when a concurrent update made them fail; with rollback_retries=0 they fail as conflict', async () => {
      await server.sql('CREATE DATABASE serial_db');
      await server.sql(
        `ALTER DATABASE serial_db SET default_transaction_isolation = 'serializable'`,
      );
      const other = new pg.Client({ connectionString: server.url({}, 'serial_db') });
      other.on('error', () => undefined);
      await other.connect();
      raws.push(other);
      // The other transaction updates the row the store's statement waits for,
      // then commits: at serializable, that statement fails with 40001.
      const concurrently = async <T>(row: string, statement: () => Promise<T>) => {
        await other.query('BEGIN');
        await other.query(row);
        const pending = statement();
        await blockedOnLock(other);
        await other.query('COMMIT');
        return pending;
      };
      const outcomes = async (
        store: Store,
        a: string,
        settle: <T>(p: Promise<T>) => Promise<unknown>,
      ) => {
        await store.commit([write(a, 1)]);
        await store.commit([
          { ...write(a, 2), messagesOut: [{ to: 'b', kind: 'event', body: '{}', idx: 0 }] },
        ]);
        const message = (await store.pendingMessages({ limit: 10 })).find((m) => m.from === a);
        if (message === undefined) throw new Error('no message was written');
        return {
          commit: await concurrently(
            `UPDATE actors SET updated_at = updated_at WHERE id = '${a}'`,
            () => settle(store.commit([write(a, 3)])),
          ),
          drop: await concurrently(`UPDATE messages SET body = body WHERE id = ${message.id}`, () =>
            settle(store.dropMessage(message.id)),
          ),
        };
      };
      const control = open(server.url({ rollback_retries: '0' }, 'serial_db'));
      const store = open(server.url({}, 'serial_db'));
      const told = retriesTold(control, store);
      const refused = await outcomes(control, 'a', (p) => rejection(p));
      expect(refused.commit).toMatchObject({ operation: 'commit', kind: 'conflict', actorId: 'a' });
      expect(refused.drop).toMatchObject({ operation: 'commit', kind: 'conflict' });
      expect(((refused.drop as StoreError).cause as { code?: string }).code).toBe('40001');

      const served = await outcomes(store, 'c', (p) => p);
      expect(served).toEqual({ commit: [null], drop: true });
      const serialization = {
        code: '40001',
        attempt: 1,
        detail: 'could not serialize access due to concurrent update',
      };
      expect(told).toEqual([
        ['store', serialization],
        ['store', serialization],
      ]);
      expect((await store.history('c')).map((t) => t.seq)).toEqual([1, 2, 3]);
      // The control's message stays; this one was dropped.
      expect((await store.pendingMessages({ limit: 10 })).map((m) => m.from)).toEqual(['a']);
    });

    it('fails a commit that outlives statement_timeout as timeout, writing nothing, then recovers', async () => {
      const url = server.freshUrl({ statement_timeout: '200' });
      const store = open(url);
      await store.commit([write('a', 1), write('b', 1)]);
      const before = await persisted(store, 'a');
      const locker = await raw(url);
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM actors WHERE id = 'b' FOR UPDATE`);

      const single = await rejection(store.commit([write('b', 2)]));
      expect(single).toMatchObject({ operation: 'commit', kind: 'timeout', actorId: 'b' });
      // A batch of updates is one statement: its failure is the batch's, naming no actor.
      const batch = await rejection(store.commit([write('a', 2), write('b', 2)]));
      expect(batch).toMatchObject({ operation: 'commit', kind: 'timeout', actorId: undefined });
      expect(await persisted(store, 'a')).toEqual(before);

      await locker.query('ROLLBACK');
      expect(await store.commit([write('a', 2), write('b', 2)])).toEqual([null, null]);
    });

    it.each([
      ['updates', []],
      ['updates and a creation (two statements in one transaction)', ['n']],
    ])(
      'fails a batch of %s whose connection is killed mid-batch, writing nothing, then the next commit works',
      async (_, created: string[]) => {
        const batch = () => [write('a', 2), write('b', 2), ...created.map((id) => write(id, 1))];
        const url = server.freshUrl();
        const store = open(url);
        await store.commit([write('a', 1), write('b', 1)]);
        const before = { a: await persisted(store, 'a'), b: await persisted(store, 'b') };
        const admin = await raw(url);
        await admin.query('BEGIN');
        await admin.query(`SELECT 1 FROM actors WHERE id = 'b' FOR UPDATE`);

        // The batch's update statement locks a, then waits on b's row lock: kill that backend.
        const pending = rejection(store.commit(batch()));
        const killer = await raw();
        let killed = false;
        for (let i = 0; i < 200 && !killed; i++) {
          const result = await killer.query<{ killed: boolean }>(
            `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
           WHERE application_name = 'agentcharts' AND wait_event_type = 'Lock'`,
          );
          killed = result.rows.some((r) => r.killed);
          if (!killed) await new Promise((r) => setTimeout(r, 10));
        }
        expect(killed).toBe(true);
        const error = await pending;
        expect(error).toMatchObject({
          operation: 'commit',
          kind: 'connection',
          actorId: undefined,
        });
        await admin.query('ROLLBACK');

        expect({ a: await persisted(store, 'a'), b: await persisted(store, 'b') }).toEqual(before);
        for (const id of created) expect(await store.loadActor(id)).toBeUndefined();
        expect(await store.commit(batch())).toEqual(batch().map(() => null));
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2]);
        for (const id of created) expect((await store.history(id)).map((t) => t.seq)).toEqual([1]);
      },
    );

    it('lets a durable actor fail a send while the server is down, unchanged, and send again once it is back', async () => {
      const pause = taskLifecycle.chart.eventSamples.PAUSE_FOR_APPROVAL?.[0];
      if (pause === undefined) throw new Error('task-lifecycle has no PAUSE_FOR_APPROVAL sample');
      const store = open(server.freshUrl({ connect_timeout: '2' }));
      const task = await createDurableActor(taskLifecycle.machine, {
        id: 'refund-7',
        store,
        input: { taskId: 'refund-7' },
      });
      await task.send({ type: 'START' });
      await server.stop();
      try {
        const error = await rejection(task.send(pause));
        expect(error).toMatchObject({
          operation: 'commit',
          kind: 'connection',
          actorId: 'refund-7',
        });
        expect(task.state).toBe('running');
      } finally {
        await server.start();
      }
      await task.send(pause);
      expect(task.state).toBe('paused');
      expect((await store.history('refund-7')).map((t) => t.toState)).toEqual([
        'planned',
        'running',
        'paused',
      ]);
      await getRuntime(store).close();
    });

    it('fails while the server is down and keeps going once it is back', async () => {
      const url = server.freshUrl({ connect_timeout: '2' });
      const store = open(url);
      await store.commit([write('a', 1)]);
      await server.stop();
      try {
        const error = await rejection(store.commit([write('a', 2)]));
        expect(error).toMatchObject({ operation: 'commit', kind: 'connection', actorId: 'a' });
        expect(await rejection(store.loadActor('a'))).toMatchObject({ kind: 'connection' });
      } finally {
        await server.start();
      }
      expect(await store.commit([write('a', 2)])).toEqual([null]);
      expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2]);
    });
  });
});

if (!available) {
  describe('PostgreSQL store against a real server', () => {
    it.skip('SKIPPED: PostgreSQL not installed', () => undefined);
  });
}
