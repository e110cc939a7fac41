/**
 * The team workflow run as durable actors: one durable actor per task, spawned
 * on dispatch, with its own log, timers (retry backoff, timeout) and row, so
 * workers finishing different tasks never write the same row; the workflow
 * learns of each task through durable messages. Checked against a plain XState
 * run of the same steps, and with two worker processes on SQLite and PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createActor, type AnyActorRef } from 'xstate';
import { charts } from '../machines/index.ts';
import { defaultInput, machine, type TeamWorkflowEvent } from '../machines/team-workflow/index.ts';
import type { TeamTaskEvent } from '../machines/team-workflow/team-workflow.types.ts';
import {
  ManualClock,
  createDurableActor,
  getRuntime,
  openStore,
  verify,
  type Store,
} from '../src/index.ts';
import { createServer } from '../src/server/app.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';

const TOKEN = 'read-token-0123456789abcdef';

const WORKER = fileURLToPath(new URL('./fixtures/team-worker.ts', import.meta.url));
const TASK_TYPES = new Set([
  'TASK_STARTED',
  'TASK_DONE',
  'TASK_FAILED',
  'BLOCKER_RAISED',
  'BLOCKER_RESOLVED',
]);
type Step = TeamWorkflowEvent | TeamTaskEvent;
const isTaskEvent = (step: Step): step is TeamTaskEvent => TASK_TYPES.has(step.type);

const vote = (voterId: string, decision: 'approve' | 'request_changes' = 'approve'): Step => ({
  type: 'VOTE',
  voterId,
  decision,
});
const toParallelWork: Step[] = [
  { type: 'START', request: 'Dark mode' },
  { type: 'PLAN_DRAFTED', by: 'arch', plan: 'v1' },
  vote('arch'),
  vote('dev'),
  {
    type: 'TASKS_DRAFTED',
    by: 'arch',
    tasks: [
      { taskId: 't1', title: 'Toggle', role: 'developer' },
      { taskId: 't2', title: 'Checklist', role: 'qa' },
    ],
  },
  vote('arch'),
  vote('dev'),
  {
    type: 'TASKS_ASSIGNED',
    assignments: [
      { taskId: 't1', assignee: 'dev' },
      { taskId: 't2', assignee: 'qa' },
    ],
  },
];

let dir: string;
const stores: Store[] = [];
function open(url = `sqlite:${join(dir, 'team.db')}`, clock?: ManualClock): Store {
  const store = openStore(url);
  stores.push(store);
  getRuntime(store, { charts, ...(clock ? { clock } : {}) });
  return store;
}
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-team-'));
});
afterEach(async () => {
  for (const store of stores.splice(0)) {
    await getRuntime(store).close();
    await store.close();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Lets committed messages reach their receivers (children spawned, reports delivered). */
async function settle(store: Store): Promise<void> {
  for (let i = 0; i < 6; i++) {
    await getRuntime(store).drain();
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Sends each step to the workflow, or to the task's own actor, settling after each. */
async function run(store: Store, workflowId: string, steps: readonly Step[]): Promise<void> {
  const runtime = getRuntime(store);
  for (const step of steps) {
    const target = isTaskEvent(step) ? `${workflowId}/${step.taskId}` : workflowId;
    await (await runtime.actor(target)).send(step);
    await settle(store);
  }
}

test('each assigned task is a durable actor of its own; the workflow moves on when every task is final', async () => {
  const store = open();
  const workflow = await createDurableActor(machine, {
    id: 'wf-1',
    store,
    input: defaultInput,
  });
  await run(store, 'wf-1', toParallelWork);
  for (const taskId of ['t1', 't2']) {
    const row = await store.loadActor(`wf-1/${taskId}`);
    expect(row).toMatchObject({ machineId: 'team-task', state: 'ASSIGNED', status: 'active' });
  }
  const runtime = getRuntime(store);
  const [t1, t2] = await Promise.all([runtime.actor('wf-1/t1'), runtime.actor('wf-1/t2')]);
  // Both workers at once: different rows, so both commits succeed.
  await Promise.all([
    t1.send({ type: 'TASK_STARTED', taskId: 't1' }),
    t2.send({ type: 'TASK_STARTED', taskId: 't2' }),
  ]);
  await Promise.all([
    t1.send({ type: 'TASK_DONE', taskId: 't1', summary: 'merged' }),
    t2.send({ type: 'TASK_DONE', taskId: 't2' }),
  ]);
  await settle(store);
  expect(workflow.getSnapshot().value).toEqual({ VERIFICATION: 'QA_Review' });
  expect(workflow.getSnapshot().context.tasks.t1).toMatchObject({
    status: 'DONE',
    outcome: 'merged',
  });
  // Each report is a message the task wrote in its commit and the workflow consumed in its own;
  // the tasks' completions, which the workflow has no transition for, are consumed and not
  // recorded as rejections (plain XState ignores them too).
  const types = (await store.history('wf-1')).map((r) => r.eventType);
  expect(types.filter((t) => t === 'TASK_STATUS')).toHaveLength(4);
  expect(await store.pendingMessages({ limit: 10 })).toEqual([]);
  expect(await store.listRejections({ actorId: 'wf-1' })).toEqual([]);
  expect((await verify(store, { charts })).problems).toEqual([]);

  // The server lists the workflow's task actors, each readable at its own (encoded) id.
  const server = createServer({ store, charts, keys: [], accessToken: TOKEN, pollMs: 0 });
  try {
    const read = async (path: string) => {
      const response = await server.app.request(path, {
        headers: { authorization: `Bearer ${TOKEN}`, host: 'localhost' },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const page = await read('/api/actors/wf-1');
    expect(page.status).toBe(200);
    expect(
      (page.body['children'] as Array<Record<string, unknown>>).map((c) => [c['id'], c['state']]),
    ).toEqual([
      ['wf-1/t1', 'DONE'],
      ['wf-1/t2', 'DONE'],
    ]);
    const child = await read(`/api/actors/${encodeURIComponent('wf-1/t1')}`);
    expect(child.status).toBe(200);
    expect(child.body['actor']).toMatchObject({ id: 'wf-1/t1', machineId: 'team-task' });
    expect(child.body['diagram']).not.toBeNull();
  } finally {
    await server.close();
  }
});

test('a task retries a retryable failure after its backoff, fails after its last retry, and times out on its own clock', async () => {
  const clock = new ManualClock(Date.parse('2026-11-25T00:00:00Z'));
  const store = open(`sqlite:${join(dir, 'timers.db')}`, clock);
  const workflow = await createDurableActor(machine, {
    id: 'wf-2',
    store,
    input: { ...defaultInput, maxTaskRetries: 1, taskTimeoutMs: 60_000 },
  });
  await run(store, 'wf-2', [
    ...toParallelWork,
    { type: 'TASK_STARTED', taskId: 't1' },
    { type: 'TASK_STARTED', taskId: 't2' },
    { type: 'TASK_FAILED', taskId: 't1', reason: 'flaky', retryable: true },
  ]);
  expect((await store.loadActor('wf-2/t1'))?.state).toBe('RETRYING');
  expect(workflow.getSnapshot().context.tasks.t1).toMatchObject({
    status: 'IN_PROGRESS',
    outcome: 'flaky',
  });
  clock.advance(2_000); // the first backoff is at most 1 s
  await settle(store);
  expect((await store.loadActor('wf-2/t1'))?.state).toBe('IN_PROGRESS');
  await run(store, 'wf-2', [
    { type: 'TASK_FAILED', taskId: 't1', reason: 'flaky again', retryable: true },
  ]);
  expect((await store.loadActor('wf-2/t1'))?.state).toBe('FAILED');
  clock.advance(60_000); // t2 has been in progress for its whole timeout
  await settle(store);
  expect((await store.loadActor('wf-2/t2'))?.state).toBe('FAILED');
  expect(workflow.getSnapshot().value).toEqual({ VERIFICATION: 'QA_Review' });
  expect(workflow.getSnapshot().context.tasks).toMatchObject({
    t1: { status: 'FAILED', outcome: 'flaky again' },
    t2: { status: 'FAILED', outcome: 'timed out' },
  });
  expect((await verify(store, { charts })).problems).toEqual([]);
});

test('the durable run goes through the same states and contexts as plain XState, step by step', async () => {
  const steps: Step[] = [
    ...toParallelWork,
    { type: 'TASK_STARTED', taskId: 't1' },
    { type: 'TASK_STARTED', taskId: 't2' },
    { type: 'BLOCKER_RAISED', taskId: 't1', description: 'tokens' },
    { type: 'BLOCKER_RESOLVED', taskId: 't1' },
    { type: 'TASK_DONE', taskId: 't1', summary: 'merged' },
    { type: 'TASK_FAILED', taskId: 't2', reason: 'no device' },
    { type: 'QA_FAIL', by: 'qa', taskIds: ['t2'], report: 'redo t2' },
    { type: 'TASKS_ASSIGNED', assignments: [{ taskId: 't2', assignee: 'qa' }] },
    { type: 'TASK_STARTED', taskId: 't2' },
    { type: 'TASK_DONE', taskId: 't2' },
    { type: 'QA_PASS', by: 'qa' },
    { type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'qa', decision: 'approve' },
    { type: 'CROSS_REVIEW', taskId: 't2', reviewerId: 'dev', decision: 'approve' },
  ];
  const plain = createActor(machine, { input: defaultInput }).start();
  const store = open(`sqlite:${join(dir, 'differential.db')}`);
  const durable = await createDurableActor(machine, { id: 'wf-3', store, input: defaultInput });
  for (const [i, step] of steps.entries()) {
    if (isTaskEvent(step)) {
      (plain.getSnapshot().children as Record<string, AnyActorRef>)[step.taskId]?.send(step);
    } else plain.send(step);
    await run(store, 'wf-3', [step]);
    const label = `step ${i} ${step.type}`;
    expect(durable.getSnapshot().value, label).toEqual(plain.getSnapshot().value);
    expect(durable.getSnapshot().context, label).toEqual(plain.getSnapshot().context);
  }
  expect(durable.getSnapshot().value).toBe('COMPLETE');
});

/** Runs one worker process to completion; its RESULT line. */
function worker(args: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(args)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AGENTCHARTS_LOG_LEVEL: 'silent' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = /^RESULT (\{.*\})$/m.exec(out);
      if (code !== 0 || !line?.[1]) reject(new Error(`worker exited ${code}\n${out}\n${err}`));
      else resolve(JSON.parse(line[1]) as Record<string, unknown>);
    });
  });
}

let postgres: PostgresServer | undefined;
afterAll(async () => {
  await postgres?.destroy();
});

describe.each([
  ['SQLite', () => Promise.resolve(`sqlite:${join(dir, 'processes.db')}`)],
  [
    'PostgreSQL',
    async () => {
      postgres ??= await startPostgres();
      return postgres.url();
    },
  ],
] as const)('two worker processes on %s', (name, urlOf) => {
  test.runIf(name === 'SQLite' || postgresAvailable())(
    'finish two tasks of one workflow at the same moment: both succeed, and the workflow sees both',
    async () => {
      const url = await urlOf();
      const store = open(url);
      const workflow = await createDurableActor(machine, {
        id: 'wf-p',
        store,
        input: defaultInput,
      });
      await run(store, 'wf-p', [
        ...toParallelWork,
        { type: 'TASK_STARTED', taskId: 't1' },
        { type: 'TASK_STARTED', taskId: 't2' },
      ]);
      // Messages written by the workers' commits are delivered by whoever looks first.
      getRuntime(store).startTimerPolling(50);
      const at = Date.now() + 2_500;
      const results = await Promise.all(
        ['t1', 't2'].map((taskId) => worker({ url, workflowId: 'wf-p', taskId, at })),
      );
      expect(results.map((r) => r['ok'])).toEqual([true, true]);
      // A generous wait: under a loaded CI machine the poller may need a while.
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const row = await store.loadActor('wf-p');
        if (row?.state === 'VERIFICATION.QA_Review') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await workflow.reload();
      // What is still in flight, if it did not get there (shown by the assertion).
      const pending = await store.pendingMessages({ limit: 20 });
      const rows = (await store.history('wf-p')).map((r) => r.eventType);
      expect(
        { state: workflow.getSnapshot().value, pending, rows: rows.slice(-6) },
        'the workflow did not reach QA',
      ).toMatchObject({ state: { VERIFICATION: 'QA_Review' }, pending: [] });
      expect(Object.values(workflow.getSnapshot().context.tasks).map((t) => t.status)).toEqual([
        'DONE',
        'DONE',
      ]);
      const history = await store.history('wf-p');
      expect(history.filter((r) => r.eventType === 'TASK_STATUS')).toHaveLength(4);
      expect((await verify(store, { charts })).problems).toEqual([]);
    },
    120_000,
  );
});
