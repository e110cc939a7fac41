import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, test } from 'vitest';
import '../machines/index.ts'; // defining the charts makes their meaning known
import {
  classifyState,
  isActiveClass,
  isFinishedClass as isFinished,
} from '../src/core/meanings.ts';
import {
  activeAgentsForUser,
  collectionStatistics,
  toSeedStatistics,
} from '../src/observe/stats.ts';
import { openStore } from '../src/store/open.ts';
import { POSTGRES_MIGRATIONS } from '../src/store/postgres/schema.ts';
import { SQLITE_MIGRATIONS, migrateSqlite } from '../src/store/sqlite/schema.ts';
import type { ActorStatus, ActorWrite, Store } from '../src/store/types.ts';
import { postgresAvailable, startPostgres } from './support/postgres.ts';
import { seededRandom } from '../src/testing/random.ts';

const STATES: Record<string, string[]> = {
  'task-lifecycle': ['planned', 'running', 'paused', 'blocked', 'retrying', 'done', 'failed'],
  'agent-status': [
    'idle',
    'initializing',
    'running',
    'thinking',
    'paused',
    'completed',
    'failed',
    'terminated',
  ],
  'agent-lifecycle': [
    'idle',
    'active.planning',
    'active.executing',
    'active.waiting_input',
    'paused',
    'succeeded',
    'cancelled',
  ],
  'plan-workflow': ['IDLE', 'PLANNING', 'AWAITING_PLAN_APPROVAL', 'EXECUTION', 'COMPLETE'],
};
const MACHINES = Object.keys(STATES);
const USERS = ['u1', 'u2', 'u3'];

interface ModelActor {
  id: string;
  machineId: string;
  userId: string | null;
  state: string;
  status: ActorStatus;
  createdAt: number;
  updatedAt: number;
  stateSince: number;
  rows: Array<{ seq: number; from: string | null; to: string; at: number }>;
}

/** Random actors written through `commit`, and the same data kept as a plain model. */
async function populate(store: Store, seed: number, count: number): Promise<ModelActor[]> {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const model: ModelActor[] = [];
  for (let i = 0; i < count; i++) {
    const machineId = pick(MACHINES);
    const states = STATES[machineId] ?? [];
    const id = `a${String(i).padStart(4, '0')}`;
    const userId = rnd() < 0.7 ? pick(USERS) : null;
    const createdAt = 1_000 + Math.floor(rnd() * 100_000);
    const actor: ModelActor = {
      id,
      machineId,
      userId,
      state: '',
      status: 'active',
      createdAt,
      updatedAt: createdAt,
      stateSince: createdAt,
      rows: [],
    };
    const steps = 1 + Math.floor(rnd() * 6);
    let at = createdAt;
    const writes: ActorWrite[] = [];
    for (let v = 1; v <= steps; v++) {
      // Some steps stay in the state (a context-only transition).
      const to = v > 1 && rnd() < 0.25 ? actor.state : pick(states);
      const from = v === 1 ? null : actor.state;
      const status: ActorStatus =
        v === steps && isFinished(classifyState(machineId, to)) && rnd() < 0.7
          ? 'done'
          : v === steps && rnd() < 0.05
            ? 'error'
            : 'active';
      if (from !== to) actor.stateSince = at;
      actor.rows.push({ seq: v, from, to, at });
      actor.state = to;
      actor.status = status;
      actor.updatedAt = at;
      writes.push({
        actorId: id,
        expectedVersion: v - 1,
        actor: {
          id,
          machineId,
          chartVersion: 1,
          version: v,
          state: to,
          status,
          snapshot: '{}',
          createdAt,
          updatedAt: at,
          headHash: `h${v}`,
        },
        transition: {
          actorId: id,
          seq: v,
          fromState: from,
          toState: to,
          eventType: 'E',
          event: '{"type":"E"}',
          at,
          metadata: '{}',
          prevHash: `h${v - 1}`,
          hash: `h${v}`,
          chartVersion: null,
          snapshotHash: null,
        },
        ...(userId !== null && v === 1 ? { userId } : {}),
      });
      at += Math.floor(rnd() * 20_000);
    }
    expect(await store.commit(writes)).toEqual(writes.map(() => null));
    model.push(actor);
  }
  return model;
}

/** Seed 003 statistics computed the slow way, actor by actor. */
function bruteStatistics(actors: readonly ModelActor[]) {
  const statusCounts: Record<string, number> = {};
  let active = 0;
  let completed = 0;
  let failed = 0;
  let finished = 0;
  let age = 0;
  for (const a of actors) {
    statusCounts[a.state] = (statusCounts[a.state] ?? 0) + 1;
    const cls = classifyState(a.machineId, a.state, a.status);
    if (isActiveClass(cls)) active++;
    if (cls === 'completed') completed++;
    if (cls === 'failed') failed++;
    if (isFinished(cls)) {
      finished++;
      age += a.updatedAt - a.createdAt;
    }
  }
  return {
    status_counts: statusCounts,
    total_active: active,
    total_completed: completed,
    total_failed: failed,
    avg_execution_time: finished === 0 ? null : age / finished / 1000,
  };
}

const byId = (a: { id?: string; actorId?: string }, b: { id?: string; actorId?: string }) =>
  (a.id ?? a.actorId ?? '').localeCompare(b.id ?? b.actorId ?? '');

describe.each(['memory:', 'sqlite::memory:'])(
  'store statistics over %s against brute force',
  (url) => {
    const opened: Store[] = [];
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    test.each([1, 2, 3])('collection statistics match for random data (seed %i)', async (seed) => {
      const store = openStore(url);
      opened.push(store);
      const model = await populate(store, seed, 300);
      const check = async (
        filter: (a: ModelActor) => boolean,
        query: Parameters<typeof collectionStatistics>[1],
      ) => {
        const got = toSeedStatistics(await collectionStatistics(store, query));
        const want = bruteStatistics(model.filter(filter));
        expect({ ...got, avg_execution_time: null }).toEqual({ ...want, avg_execution_time: null });
        if (want.avg_execution_time === null) expect(got.avg_execution_time).toBeNull();
        else expect(got.avg_execution_time).toBeCloseTo(want.avg_execution_time, 6);
      };
      await check(() => true, {});
      await check((a) => a.machineId === 'task-lifecycle', { machineId: 'task-lifecycle' });
      await check((a) => a.userId === 'u2', { userId: 'u2' });
      await check((a) => a.updatedAt >= 60_000, { updatedSince: 60_000 });
      await check((a) => a.userId === 'u1' && a.machineId === 'agent-status', {
        userId: 'u1',
        machineId: 'agent-status',
      });
      const stats = await collectionStatistics(store);
      expect(stats.total).toBe(model.length);
      expect(Object.values(stats.classCounts).reduce((x, y) => x + y, 0)).toBe(model.length);
    });

    test.each([4, 5])("a user's active agents match brute force (seed %i)", async (seed) => {
      const store = openStore(url);
      opened.push(store);
      const model = await populate(store, seed, 300);
      for (const user of [...USERS, 'nobody']) {
        const want = model
          .filter(
            (a) =>
              a.userId === user && isActiveClass(classifyState(a.machineId, a.state, a.status)),
          )
          .sort((a, b) => a.stateSince - b.stateSince || byId(a, b));
        const got = await activeAgentsForUser(store, user, { limit: 1000 });
        expect(got.map((d) => [d.actorId, d.state, d.stateSince])).toEqual(
          want.map((a) => [a.id, a.state, a.stateSince]),
        );
        expect(want.every((a) => a.state !== 'paused' && !a.state.startsWith('idle'))).toBe(true);
      }
    });

    test.each([6, 7])(
      'time in state, state entries and the feed match brute force (seed %i)',
      async (seed) => {
        const store = openStore(url);
        opened.push(store);
        const model = await populate(store, seed, 250);
        const cutoff = 60_000;
        for (const states of [
          ['running'],
          ['paused', 'blocked', 'active.waiting_input'],
          ['IDLE'],
        ]) {
          const want = model
            .filter((a) => states.includes(a.state) && a.stateSince <= cutoff)
            .sort((a, b) => a.stateSince - b.stateSince || byId(a, b))
            .map((a) => [a.id, a.stateSince]);
          const got = await store.actorsInStates({ states, enteredBefore: cutoff, limit: 10_000 });
          expect(got.map((d) => [d.actorId, d.stateSince])).toEqual(want);
        }

        const since = 30_000;
        const entries = model
          .map((a) => ({
            actorId: a.id,
            count: a.rows.filter((r) => r.at >= since && r.to === 'running' && r.from !== r.to)
              .length,
          }))
          .filter((e) => e.count >= 2)
          .sort((a, b) => b.count - a.count || byId(a, b));
        const gotEntries = await store.countStateEntries({
          toStates: ['running'],
          since,
          minCount: 2,
          limit: 10_000,
        });
        expect(gotEntries.map((e) => [e.actorId, e.count])).toEqual(
          entries.map((e) => [e.actorId, e.count]),
        );

        const feed = model
          .flatMap((a) => a.rows.map((r) => ({ ...r, actorId: a.id })))
          .filter((r) => r.at >= since)
          .sort((a, b) => a.at - b.at || byId(a, b) || a.seq - b.seq)
          .map((r) => `${r.actorId}#${r.seq}`);
        const gotFeed = await store.transitionsSince({ since, limit: 100_000 });
        expect(gotFeed.map((r) => `${r.actorId}#${r.seq}`)).toEqual(feed);
      },
    );
  },
);

describe('state classes', () => {
  test("come from each chart's metadata, and a finished status wins", () => {
    const cases: Array<[string, string, ActorStatus, string]> = [
      ['task-lifecycle', 'planned', 'active', 'idle'],
      ['task-lifecycle', 'running', 'active', 'working'],
      ['agent-runtime', 'Processing.brain', 'active', 'working'],
      ['agent-lifecycle', 'active.waiting_input', 'active', 'waiting'],
      // Waiting for a person's approval is `paused` (it was `waiting` by name before
      // the charts carried their meaning).
      ['plan-workflow', 'AWAITING_PLAN_APPROVAL', 'active', 'paused'],
      ['team-workflow', 'EXECUTION.Blocked', 'active', 'waiting'],
      ['task-lifecycle', 'retrying', 'active', 'retrying'],
      ['agent-runtime', 'Paused', 'active', 'paused'],
      ['agent-lifecycle', 'succeeded', 'active', 'completed'],
      ['plan-workflow', 'COMPLETE', 'done', 'completed'],
      ['agent-runtime', 'Cancelled', 'done', 'terminated'],
      ['task-lifecycle', 'running', 'error', 'failed'],
      ['task-lifecycle', 'running', 'stopped', 'terminated'],
      ['task-lifecycle', 'failed', 'done', 'failed'],
      // A chart this process has never seen: only the status speaks.
      ['somebody-elses-chart', 'failed', 'active', 'working'],
      ['somebody-elses-chart', 'failed', 'error', 'failed'],
    ];
    expect(cases.map(([m, s, st]) => classifyState(m, s, st))).toEqual(cases.map((c) => c[3]));
  });
});

describe('migrating a database written before state entry times were kept', () => {
  /** Rows of three actors as version 1/2 wrote them: no user, no state_since. */
  const OLD_ROWS = (q: (table: string) => string) => `
    INSERT INTO ${q('actors')} (id, machine_id, chart_version, version, state, status, snapshot,
      created_at, updated_at, head_hash)
    VALUES ('a', 'm', 1, 3, 'running', 'active', '{}', 10, 50, 'h3'),
           ('b', 'm', 1, 1, 'planned', 'active', '{}', 20, 20, 'h1'),
           ('c', 'm', 1, 3, 'blocked', 'active', '{}', 30, 70, 'h3');
    INSERT INTO ${q('transitions')} (actor_id, seq, from_state, to_state, event_type, event, at,
      metadata, prev_hash, hash)
    VALUES ('a', 1, NULL, 'planned', 'xstate.init', '{}', 10, '{}', 'h0', 'h1'),
           ('a', 2, 'planned', 'running', 'START', '{}', 40, '{}', 'h1', 'h2'),
           ('a', 3, 'running', 'running', 'CHECKPOINT', '{}', 50, '{}', 'h2', 'h3'),
           ('b', 1, NULL, 'planned', 'xstate.init', '{}', 20, '{}', 'h0', 'h1'),
           ('c', 1, NULL, 'planned', 'xstate.init', '{}', 30, '{}', 'h0', 'h1'),
           ('c', 2, 'planned', 'running', 'START', '{}', 60, '{}', 'h1', 'h2'),
           ('c', 3, 'running', 'blocked', 'BLOCK', '{}', 70, '{}', 'h2', 'h3');`;

  const expectBackfilled = async (store: Store) => {
    const dwell = await store.actorsInStates({ states: ['running', 'planned', 'blocked'] });
    expect(dwell.map((d) => [d.actorId, d.state, d.stateSince, d.userId])).toEqual([
      ['b', 'planned', 20, null],
      ['a', 'running', 40, null],
      ['c', 'blocked', 70, null],
    ]);
    expect((await store.countActors()).map((c) => [c.state, c.count])).toEqual([
      ['blocked', 1],
      ['planned', 1],
      ['running', 1],
    ]);
  };

  test('SQLite backfills state_since from the audit trail', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentcharts-migrate-'));
    try {
      const file = join(dir, 'old.db');
      const db = new Database(file);
      const before = SQLITE_MIGRATIONS.findIndex((m) => /observability/.test(m.description));
      expect(before).toBeGreaterThan(0);
      migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, before));
      db.exec(OLD_ROWS((t) => t));
      db.close();
      const store = openStore(`sqlite:${file}`);
      try {
        await expectBackfilled(store);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL backfills state_since from the audit trail', async (context) => {
    if (!postgresAvailable()) {
      context.skip();
      return;
    }
    const server = await startPostgres();
    try {
      const before = POSTGRES_MIGRATIONS.findIndex((m) => /observability/.test(m.description));
      expect(before).toBeGreaterThan(0);
      const schema = 'before_observability';
      const setup = [
        `CREATE SCHEMA ${schema}`,
        `SET search_path TO ${schema}`,
        'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)',
        ...POSTGRES_MIGRATIONS.slice(0, before).flatMap((m) => [
          m.sql,
          `INSERT INTO schema_migrations VALUES (${m.version}, 'old', 0)`,
        ]),
        OLD_ROWS((t) => t),
      ].join(';\n');
      await server.sql(setup);
      const store = openStore(server.url({ schema }));
      try {
        await expectBackfilled(store);
      } finally {
        await store.close();
      }
    } finally {
      await server.destroy();
    }
  });
});
