/**
 * The source documents' own SQL, run unchanged against the views that stand for
 * their tables: "Agent Task Lifecycle" (task_checkpoints, state_transitions, its
 * StatePersistence queries) and "Agent State Machine" (agent_states, its status
 * API query), on SQLite and on a real PostgreSQL server.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { ManualClock } from '../src/core/clock.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { usePostgres } from './support/postgres.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const task = catalog['task-lifecycle'];
const lifecycle = catalog['agent-lifecycle'];

/** Seed 001, StatePersistence.load_checkpoint / load_history. */
const LOAD_CHECKPOINT =
  'SELECT state, retry_count, checkpoint_data FROM task_checkpoints WHERE task_id = ?';
const LOAD_HISTORY =
  'SELECT task_id, from_state, to_state, event, timestamp, metadata FROM state_transitions WHERE task_id = ? ORDER BY id';
/** Seed 000, GET /api/agents/status: the user's agents in the seven active states. */
const ACTIVE_AGENTS = `SELECT agent_name, current_state, task_id, metadata FROM agent_states
  WHERE user_id = ? AND current_state IN ('initializing', 'planning', 'executing',
    'evaluating', 'adapting', 'waiting_input', 'waiting_agent')`;

/** A task through approval, a transient error and its retry; two agents of one user. */
async function populate(store: Store): Promise<void> {
  const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
  getRuntime(store, { clock });
  const t = await createDurableActor(task.machine, {
    id: 'refund-1',
    store,
    input: { taskId: 'refund-1', backoff: { baseMs: 10, capMs: 10 } },
    schemas: task.events,
  });
  await t.send({ type: 'START' });
  await t.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund over limit', requestedAt: 0 });
  await t.send({ type: 'APPROVAL_GRANTED', approver: 'manager@example.com' });
  await t.send({
    type: 'TRANSIENT_ERROR',
    error: 'HTTP 503',
    checkpoint: { step: 'refund', data: { attempt: 1 } },
  });
  clock.advance(60_000);
  await getRuntime(store).drain();
  for (const [id, events] of [
    [
      'interviewer-1',
      [
        { type: 'START', payload: { task_id: 'T-7', extra: { ticket: 'SUP-1' } } },
        { type: 'INIT_COMPLETE', payload: { context_loaded: true } },
        { type: 'PLAN_COMPLETE', payload: { plan_id: 'P-1', steps: 3 } },
      ],
    ],
    ['interviewer-2', []],
  ] as const) {
    const a = await createDurableActor(lifecycle.machine, {
      id,
      store,
      userId: 'user_2x',
      input: { agent_name: 'interviewer', user_id: 'user_2x' },
      schemas: lifecycle.events,
    });
    for (const e of events) await a.send(e);
  }
}

function expectDocumentAnswers(
  checkpoint: Record<string, unknown> | undefined,
  history: Array<Record<string, unknown>>,
  agents: Array<Record<string, unknown>>,
): void {
  expect(checkpoint).toMatchObject({ state: 'running', retry_count: 1 });
  expect(JSON.parse(String(checkpoint?.['checkpoint_data']))).toEqual({
    step: 'refund',
    data: { attempt: 1 },
  });
  expect(history.map((r) => [r['from_state'], r['event'], r['to_state']])).toEqual([
    ['planned', 'START', 'running'],
    ['running', 'PAUSE_FOR_APPROVAL', 'paused'],
    ['paused', 'APPROVAL_GRANTED', 'running'],
    ['running', 'TRANSIENT_ERROR', 'retrying'],
    // The timer's transition under the document's event name.
    ['retrying', 'RETRY', 'running'],
  ]);
  expect(history.every((r) => r['task_id'] === 'refund-1')).toBe(true);
  expect(agents).toHaveLength(1);
  expect(agents[0]).toMatchObject({
    agent_name: 'interviewer',
    current_state: 'executing',
    task_id: 'T-7',
  });
  const metadata = agents[0]?.['metadata'];
  expect(typeof metadata === 'string' ? JSON.parse(metadata) : metadata).toEqual({
    task_id: 'T-7',
    plan_id: 'P-1',
    iteration: 0,
    extra: { ticket: 'SUP-1' },
  });
}

describe("the documents' tables as views", () => {
  const dir = suiteTempDir('agentcharts-views-');

  test('SQLite: the documents’ queries run unchanged', async () => {
    const file = join(dir(), 'views.db');
    const store = openStore(`sqlite:${file}`);
    try {
      await populate(store);
    } finally {
      await getRuntime(store).close();
      await store.close();
    }
    const db = new Database(file, { readonly: true });
    try {
      const checkpoint = db.prepare(LOAD_CHECKPOINT).get('refund-1') as Record<string, unknown>;
      const history = db.prepare(LOAD_HISTORY).all('refund-1') as Array<Record<string, unknown>>;
      const agents = db.prepare(ACTIVE_AGENTS).all('user_2x') as Array<Record<string, unknown>>;
      expectDocumentAnswers(checkpoint, history, agents);
      expect(history[0]?.['timestamp']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const row = db
        .prepare('SELECT history FROM agent_states WHERE id = ?')
        .get('interviewer-1') as { history: string };
      expect((JSON.parse(row.history) as Array<{ to_state: string }>).length).toBe(3);
    } finally {
      db.close();
    }
  });

  describe('PostgreSQL', () => {
    const postgres = usePostgres();

    test('the documents’ queries run unchanged', async (context) => {
      const server = postgres();
      if (!server) {
        context.skip();
        return;
      }
      const url = server.freshUrl();
      const store = openStore(url);
      try {
        await populate(store);
      } finally {
        await getRuntime(store).close();
        await store.close();
      }
      const schema = new URL(url).searchParams.get('schema') ?? 'public';
      const client = new pg.Client({ connectionString: server.url() });
      await client.connect();
      try {
        await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);
        const numbered = (sql: string) => {
          let n = 0;
          return sql.replace(/\?/g, () => `$${++n}`);
        };
        const checkpoint = (await client.query(numbered(LOAD_CHECKPOINT), ['refund-1'])).rows[0];
        const history = (await client.query(numbered(LOAD_HISTORY), ['refund-1'])).rows;
        const agents = (await client.query(numbered(ACTIVE_AGENTS), ['user_2x'])).rows;
        expectDocumentAnswers(checkpoint, history, agents);
      } finally {
        await client.end();
      }
    });
  });
});
