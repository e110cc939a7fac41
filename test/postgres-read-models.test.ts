/**
 * PostgreSQL's read models off the commit path, against a real server: exact
 * while a transaction stays open across a refresh (the transaction-id watermark
 * never skips a row), rebuilt from the authoritative tables, and every commit
 * transaction announced once on `agentcharts_commits`. Recovery pages through the
 * partial index of unfinished actors.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.ts';
import { PostgresStore } from '../src/store/postgres/store.ts';
import type { Store } from '../src/store/types.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';
import { write } from './support/writes.ts';

const run = postgresAvailable() ? describe : describe.skip;

run('PostgreSQL read models and commit notifications', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server.destroy();
  });

  async function views(store: Store) {
    return {
      counts: await store.countActors(),
      states: await store.actorsInStates({ states: ['s1', 's2', 's3'] }),
      entries: await store.countStateEntries({ toStates: ['s2'], since: 0 }),
    };
  }

  it('stay exact while a transaction is open across a refresh, and after a rebuild', async () => {
    const url = server.freshUrl();
    const store = new PostgresStore(url, { readModelRefreshMs: 0 });
    const other = new PostgresStore(url, { readModelRefreshMs: 0 });
    try {
      expect(await store.commit([write('a', 1)])).toEqual([null]);
      // A writer whose transaction stays open across the refresh (a lower xid).
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
           created_at, updated_at, head_hash)
         VALUES ('slow', 'm', 1, 1, 's1', 'active', '{}', 1, 1, 'h')`,
      );
      await client.query(
        `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
           metadata, prev_hash, hash)
         VALUES ('slow', 1, NULL, 's1', 'NEXT', '{}', 1, '{}', 'h0', 'h')`,
      );
      expect(await other.commit([write('b', 1), write('a', 2)])).toEqual([null, null]);
      await store.refreshReadModels(); // the open transaction holds the watermark back
      await client.query('COMMIT');
      await client.end();
      const expected = await views(store);
      expect(expected.counts.reduce((n, c) => n + c.count, 0)).toBe(3);
      expect(expected.states.map((d) => d.actorId).sort()).toEqual(['a', 'b', 'slow']);
      await store.refreshReadModels();
      expect(await views(store)).toEqual(expected);
      expect(await store.rebuildReadModels()).toEqual({ actors: 3, entries: 4 });
      expect(await views(store)).toEqual(expected);
    } finally {
      await store.close();
      await other.close();
    }
  });

  it('announce every commit transaction once on agentcharts_commits', async () => {
    const url = server.freshUrl();
    const store = openStore(url);
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const notes: string[] = [];
    listener.on('notification', (n) => notes.push(n.channel));
    await listener.query('LISTEN agentcharts_commits');
    try {
      await store.commit([write('x', 1)]); // a lone write: one statement
      await store.commit([write('y', 1), write('z', 1), write('x', 2)]); // a batch
      const deadline = Date.now() + 5000;
      while (notes.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 50));
      expect(notes).toEqual(['agentcharts_commits', 'agentcharts_commits']);
    } finally {
      await listener.end();
      await store.close();
    }
  });

  it('recovery pages through the partial index of unfinished actors', async () => {
    // The index is on the projection, off the commit path (a commit writes the
    // actor row and its transition, no index of unfinished actors).
    const url = server.freshUrl();
    const store = new PostgresStore(url);
    try {
      await store.connect();
      const plan = await store.pool.query(
        `EXPLAIN SELECT actor_id FROM actor_index WHERE status = 'active' AND actor_id > 'a'
         ORDER BY actor_id LIMIT 500`,
      );
      const text = plan.rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n');
      expect(text).toMatch(/actor_index_active/);
    } finally {
      await store.close();
    }
  });
});
