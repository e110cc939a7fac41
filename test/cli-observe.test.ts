import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { agentStatus, taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { parseNdjson, type ParsedLine } from '../src/observe/stream.ts';
import { openStore } from '../src/store/open.ts';
import type { ActorWrite, Store } from '../src/store/types.ts';
import { runCli, type CliResult } from './support/cli.ts';
import { chart as shiftChart } from './fixtures/shift-chart.ts';

const cli = (...args: string[]): Promise<CliResult> => runCli(args);

const root = process.cwd();
const dir = mkdtempSync(join(tmpdir(), 'agentcharts-cli-observe-'));
const db = join(dir, 'observe.db');
/** Two hours ago, so that times in state are real durations on the CLI's clock. */
const T = Date.now() - 2 * 3_600_000;
const MIN = 60_000;

const json = <T>(r: CliResult): T => {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
};

/** A raw actor of `user`, written as the runtime would create it (the runtime has no user option yet). */
function userActor(id: string, userId: string, state: string, at: number): ActorWrite {
  return {
    actorId: id,
    expectedVersion: 0,
    userId,
    actor: {
      id,
      machineId: 'agent-status',
      chartVersion: 1,
      version: 1,
      state,
      status: 'active',
      snapshot: '{}',
      createdAt: at,
      updatedAt: at,
      headHash: 'h1',
    },
    transition: {
      actorId: id,
      seq: 1,
      fromState: null,
      toState: state,
      eventType: 'xstate.init',
      event: '{"type":"xstate.init"}',
      at,
      metadata: '{"source":"create"}',
      prevHash: 'h0',
      hash: 'h1',
      chartVersion: null,
      snapshotHash: null,
    },
  };
}

beforeAll(async () => {
  const store = openStore(`sqlite:${db}`);
  const clock = new ManualClock(T);
  getRuntime(store, { clock });
  const task = (id: string) =>
    createDurableActor(taskLifecycle.machine, {
      id,
      store,
      input: { taskId: id, approvalTimeoutMs: 30 * 86_400_000 },
      clock,
    });
  const running = await task('t-run');
  const paused = await task('t-paused');
  const done = await task('t-done');
  const failed = await task('t-failed');
  for (const t of [running, paused, done, failed]) await t.send({ type: 'START' });
  await paused.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: T });
  clock.advance(10 * MIN);
  await done.send({ type: 'COMPLETE' });
  clock.advance(10 * MIN);
  await failed.send({ type: 'FATAL_ERROR', error: 'config' });
  const agent = await createDurableActor(agentStatus.machine, {
    id: 'agent-1',
    store,
    clock,
    input: {
      agentId: 'agent-1',
      name: 'analyzer',
      task: 'Analyze',
      modelBackend: 'anthropic',
      createdAt: T,
    },
  });
  await agent.send({ type: 'STATUS_UPDATE', status: 'initializing', at: T });
  await agent.send({ type: 'STATUS_UPDATE', status: 'thinking', at: T });
  await agent.send({ type: 'THOUGHT_UPDATE', thought: 'Reading the code', at: T });
  expect(
    await store.commit([
      userActor('u1-thinking', 'u1', 'thinking', T),
      userActor('u1-idle', 'u1', 'idle', T),
      userActor('u2-running', 'u2', 'running', T),
    ]),
  ).toEqual([null, null, null]);
  await getRuntime(store).close();
  await store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('agentcharts status', () => {
  test('prints counts per machine and state and the seed 003 totals as a table', async () => {
    const r = await cli('status', '--db', db);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^status sqlite:.*observe\.db\n/);
    // 8 actors: t-run, t-paused, 3 user actors and agent-1 are not finished (5 active, idle u1 and paused are not).
    expect(r.stdout).toContain(
      'total 8   active 4   completed 1   failed 1   terminated 0   avg execution 15.0 min',
    );
    expect(r.stdout).toMatch(/task-lifecycle\s+running\s+active\s+working\s+1/);
    expect(r.stdout).toMatch(/task-lifecycle\s+paused\s+active\s+paused\s+1/);
    expect(r.stdout).toMatch(/agent-status\s+thinking\s+active\s+working\s+2/);
  });

  test('prints seed 003 statistics as JSON for programs', async () => {
    const out = json<{
      statistics: Record<string, unknown> & { groups: unknown[] };
      actors?: unknown;
    }>(await cli('status', '--db', db, '--json'));
    expect(out.statistics).toMatchObject({
      total: 8,
      total_active: 4,
      total_completed: 1,
      total_failed: 1,
      avg_execution_time: 900,
      status_counts: { running: 2, paused: 1, done: 1, failed: 1, thinking: 2, idle: 1 },
    });
    expect(out.actors).toBeUndefined();
  });

  test('lists the actors in a state, longest in state first, as a table and as JSON', async () => {
    const table = await cli(
      'status',
      '--db',
      db,
      '--state',
      'running',
      '--machine',
      'task-lifecycle',
    );
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/Actors in running, longest in state first:/);
    expect(table.stdout).toMatch(/t-run\s+task-lifecycle\s+running\s+2\.0 h/);
    expect(table.stdout).not.toContain('u2-running');
    const out = json<{ actors: Array<{ agent_id: string; time_in_state_ms: number }> }>(
      await cli('status', '--db', db, '--state', 'running', '--json'),
    );
    expect(out.actors.map((a) => a.agent_id)).toEqual(['t-run', 'u2-running']);
    expect(out.actors[0]?.time_in_state_ms).toBeGreaterThanOrEqual(2 * 3_600_000 - 1000);
  });

  test("lists a user's active agents (seed 000), leaving out idle ones", async () => {
    const out = json<{ actors: Array<{ agent_id: string; user_id: string }> }>(
      await cli('status', '--db', db, '--user', 'u1', '--json'),
    );
    expect(out.actors).toEqual([
      expect.objectContaining({ agent_id: 'u1-thinking', user_id: 'u1' }),
    ]);
    const table = await cli('status', '--db', db, '--user', 'u1');
    expect(table.stdout).toContain('Active agents of user u1');
    expect(table.stdout).toContain('total 2   active 1');
  });

  test('refuses a bad --limit and a missing database with one clear line', async () => {
    const bad = await cli('status', '--db', db, '--limit', 'lots');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--limit/);
    const missing = await cli('status', '--db', join(dir, 'nope.db'));
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no database at/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('agentcharts history', () => {
  test("prints an actor's audit trail as a table and as JSON", async () => {
    const table = await cli('history', 't-paused', '--db', db);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /history t-paused \(task-lifecycle, now paused, active, 3 transition\(s\)\)/,
    );
    expect(table.stdout).toMatch(/1 .*\(new\)\s+create\s+planned\s+create/);
    expect(table.stdout).toMatch(/3 .*running\s+PAUSE_FOR_APPROVAL\s+paused\s+send/);
    const out = json<{ transitions: Array<{ seq: number; event_type: string; event: unknown }> }>(
      await cli('history', 't-paused', '--db', db, '--json'),
    );
    expect(out.transitions.map((t) => t.event_type)).toEqual([
      'xstate.init',
      'START',
      'PAUSE_FOR_APPROVAL',
    ]);
    expect(out.transitions[2]?.event).toMatchObject({ reason: 'refund' });
  });

  test('fails clearly for an unknown actor', async () => {
    const r = await cli('history', 'ghost', '--db', db);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/StoreError: .*ghost/);
    expect(r.stdout).toBe('');
  });
});

describe('agentcharts alerts', () => {
  const at = new Date(T + 31 * MIN).toISOString();

  test('shows which rules fire, with the actors, as a table', async () => {
    const r = await cli('alerts', '--db', db, '--at', at);
    expect(r.code, r.stderr).toBe(0);
    // Any chart's `running` counts: the task and the agent-status actor of user u2.
    expect(r.stdout).toMatch(/task_in_running_too_long\s+critical\s+FIRING\s+2\s+maxMs=30\.0 min/);
    expect(r.stdout).toMatch(/task_paused_abandoned\s+warning\s+ok\s+0/);
    expect(r.stdout).toContain('task-lifecycle t-run: running for 31.0 min (limit 30.0 min)');
    expect(r.stdout).toContain('agent-status u2-running: running for 31.0 min (limit 30.0 min)');
  });

  test('prints JSON, takes threshold overrides and sets the exit code on request', async () => {
    const out = json<{ firing: number; rules: Array<{ rule: string; firing: boolean }> }>(
      await cli('alerts', '--db', db, '--at', at, '--json'),
    );
    expect(out.firing).toBe(1);
    expect(out.rules.filter((x) => x.firing).map((x) => x.rule)).toEqual([
      'task_in_running_too_long',
    ]);
    expect(out.rules).toHaveLength(6);
    const relaxed = await cli(
      'alerts',
      '--db',
      db,
      '--at',
      at,
      '--set',
      'task_in_running_too_long.maxMs=2h',
      '--exit-code',
    );
    expect(relaxed.code, relaxed.stderr).toBe(0);
    expect(relaxed.stdout).toContain('no alert fires');
    const strict = await cli('alerts', '--db', db, '--at', at, '--exit-code');
    expect(strict.code).toBe(1);
    const bad = await cli('alerts', '--db', db, '--set', 'task_in_running_too_long.maxMs=soon');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--set: .*duration/);
  });
});

describe('agentcharts tail', () => {
  const collect = async (text: string): Promise<ParsedLine[]> => {
    const out: ParsedLine[] = [];
    for await (const r of parseNdjson([text])) out.push(r);
    return out;
  };

  test('names the lifecycle events of your charts (--charts) by their state classes', async () => {
    const file = join(dir, 'shift.db');
    const store = openStore(`sqlite:${file}`);
    try {
      const actor = await createDurableActor(shiftChart.machine, { id: 's-1', store });
      await actor.send({ type: 'START' });
      await actor.send({ type: 'FINISH' });
    } finally {
      await getRuntime(store).close();
      await store.close();
    }
    const lifecycle = async (...extra: string[]): Promise<string[]> => {
      const r = await cli('tail', '--db', file, '--since', '1h', ...extra);
      expect(r.code, r.stderr).toBe(0);
      return (await collect(r.stdout)).flatMap((l) =>
        'message' in l && l.message.type === 'lifecycle' ? [l.message.event] : [],
      );
    };
    const fixture = join(root, 'test/fixtures/shift-chart.ts');
    expect(await lifecycle('--charts', fixture)).toEqual(['spawned', 'started', 'completed']);
    // Without the chart its states have no class: only the actor's creation is known.
    expect(await lifecycle()).toEqual(['spawned']);
  });

  test('prints valid seed 003 NDJSON for the transitions since a time', async () => {
    const r = await cli('tail', '--db', db, '--since', new Date(T - 1000).toISOString());
    expect(r.code, r.stderr).toBe(0);
    const parsed = await collect(r.stdout);
    expect(parsed.filter((p) => 'error' in p)).toEqual([]);
    const messages = parsed.flatMap((p) => ('message' in p ? [p.message] : []));
    expect(messages.filter((m) => m.agent_id === 't-run').map((m) => m.type)).toEqual([
      'lifecycle',
      'status_update',
      'status_update',
      'lifecycle',
    ]);
    expect(messages).toContainEqual(
      expect.objectContaining({
        type: 'thought_update',
        agent_id: 'agent-1',
        thought: 'Reading the code',
      }),
    );
    const onlyAgents = await collect(
      (await cli('tail', '--db', db, '--since', String(T - 1000), '--machine', 'agent-status'))
        .stdout,
    );
    expect(onlyAgents.every((p) => 'message' in p && p.message.machine_id === 'agent-status')).toBe(
      true,
    );
  });

  test('follows new transitions until interrupted', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'src', 'cli.ts'),
        'tail',
        '--db',
        db,
        '--follow',
        '--since',
        '1s',
        '--interval',
        '100ms',
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => resolve(code)),
    );
    const waitFor = async (pattern: RegExp) => {
      for (let i = 0; i < 200 && !pattern.test(stdout); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(stdout).toMatch(pattern);
    };
    // Started (it prints nothing: no transition in the last second).
    await new Promise((r) => setTimeout(r, 1500));
    const store: Store = openStore(`sqlite:${db}`);
    try {
      const live = await createDurableActor(taskLifecycle.machine, {
        id: 't-live',
        store,
        input: { taskId: 't-live' },
      });
      await live.send({ type: 'START' });
      await waitFor(
        /"agent_id":"t-live","timestamp":"[^"]+","machine_id":"task-lifecycle","status":"running"/,
      );
    } finally {
      await getRuntime(store).close();
      await store.close();
    }
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    const lines = await collect(stdout);
    expect(lines.every((l) => 'message' in l && l.message.agent_id === 't-live')).toBe(true);
    expect(lines.map((l) => ('message' in l ? l.message.type : 'bad'))).toEqual([
      'lifecycle',
      'status_update',
      'status_update',
      'lifecycle',
    ]);
  });
});
