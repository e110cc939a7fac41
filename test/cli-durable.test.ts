import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { taskLifecycle } from '../machines/index.ts';
import { retryDelay } from '../machines/task-lifecycle/index.ts';
import { createDurableActor, getRuntime, openStore } from '../src/index.ts';
import { expectCleanFailure, runCli, type CliResult } from './support/cli.ts';

const cli = (cwd: string, ...args: string[]): Promise<CliResult> => runCli(args, cwd);

/** A backoff long enough that the retry timer of `taskId` cannot fall due during a test. */
const SLOW_BACKOFF = { baseMs: 3_600_000, capMs: 3_600_000 };

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-cli-durable-'));
  file = join(dir, 'agentcharts.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Leaves a database as a crashed process would: `task-a` running with its
 * refund step interrupted, `task-b` done, `task-c` paused for an approval
 * requested two hours ago (its 30-minute deadline has passed), `task-d` planned.
 */
async function crashedDatabase(): Promise<void> {
  const store = openStore(`sqlite:${file}`);
  const make = (id: string) =>
    createDurableActor(taskLifecycle.machine, {
      id,
      store,
      input: { taskId: id, backoff: SLOW_BACKOFF },
    });
  const a = await make('task-a');
  await a.send({ type: 'START' });
  await store.beginStep({
    key: 'task-a:refund',
    actorId: 'task-a',
    name: 'refund',
    startedAt: Date.now(),
  });
  const b = await make('task-b');
  await b.send({ type: 'START' });
  await b.send({ type: 'COMPLETE', result: 'ok' });
  const c = await make('task-c');
  await c.send({ type: 'START' });
  await c.send({
    type: 'PAUSE_FOR_APPROVAL',
    reason: 'refund',
    requestedAt: Date.now() - 2 * 3_600_000,
  });
  await make('task-d');
  await getRuntime(store).close();
  await store.close();
}

describe('agentcharts verify', () => {
  test('reports actors and rows checked and exits 0 on an intact database (default ./agentcharts.db)', async () => {
    await crashedDatabase();
    const result = await cli(dir, 'verify');
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(
      [
        `verify sqlite:${file}`,
        '  actors  4',
        '  rows    9',
        'ok: every hash chain is intact and every stored snapshot equals the replay of its events',
        '',
      ].join('\n'),
    );
  });

  test('names the actor and its first bad row and exits 1 when a row was edited', async () => {
    await crashedDatabase();
    const raw = new Database(file);
    for (const t of raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as {
      name: string;
    }[]) {
      raw.exec(`DROP TRIGGER "${t.name}"`);
    }
    raw
      .prepare('UPDATE transitions SET event = ? WHERE actor_id = ? AND seq = 3')
      .run('{"type":"COMPLETE","result":"forged"}', 'task-b');
    raw.close();

    const text = await cli(dir, 'verify', '--db', file);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('1 problem(s):');
    expect(text.stdout).toMatch(/^ {2}task-b +3 +chain +row content does not match its hash$/m);

    const json = await cli(dir, 'verify', '--store', `sqlite:${file}`, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      store: `sqlite:${file}`,
      ok: false,
      actorsChecked: 4,
      rowsChecked: 9,
      problems: [
        { actorId: 'task-b', kind: 'chain', seq: 3, detail: 'row content does not match its hash' },
      ],
      checkpoints: [],
      notVerifiable: [],
    });
  });

  test('says so when the database does not exist, and does not create it', async () => {
    expectCleanFailure(await cli(dir, 'verify'), /no database at .*agentcharts\.db/);
    expectCleanFailure(await cli(dir, 'verify', '--db', 'elsewhere.db'), /elsewhere\.db/);
    expectCleanFailure(await cli(dir, 'verify', '--store', 'sqlite:gone.db'), /--store.*gone\.db/);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(join(dir, 'elsewhere.db'))).toBe(false);
    expect(existsSync(join(dir, 'gone.db'))).toBe(false);
  });

  test('refuses an unknown store URL, an in-memory store, both options, or a file that is not a database', async () => {
    expectCleanFailure(await cli(dir, 'verify', '--store', 'redis://x'), /unknown scheme "redis:"/);
    expectCleanFailure(await cli(dir, 'verify', '--store', 'memory:'), /in-memory store/);
    expectCleanFailure(
      await cli(dir, 'verify', '--db', 'a.db', '--store', 'sqlite:b.db'),
      /not both/,
    );
    writeFileSync(join(dir, 'notes.db'), 'just some text, not SQLite');
    expectCleanFailure(await cli(dir, 'verify', '--db', 'notes.db'), /not a database/);
  });
});

describe('agentcharts recover', () => {
  test('prints per actor what recovery did, and leaves the interrupted step uncertain', async () => {
    await crashedDatabase();
    const result = await cli(dir, 'recover', '--db', file);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toContain(`recover sqlite:${file}`);
    expect(out).toMatch(/^ {2}task-a:refund +uncertain +no reconcile hook; left for an operator$/m);
    expect(out).toMatch(
      /^ {2}task-a +task-lifecycle +running +retrying +sent TRANSIENT_ERROR +after:retryBackoff at \S+ +the process stopped/m,
    );
    expect(out).toMatch(
      /^ {2}task-c +task-lifecycle +paused +failed +sent TIMEOUT +- +recovery_approval_timeout: /m,
    );
    expect(out).toMatch(
      /^ {2}task-d +task-lifecycle +planned +planned +resumed +- +state "planned"/m,
    );
    expect(out).not.toMatch(/task-b/);
    expect(out).toContain(
      '3 actor(s): 2 sent an event, 1 resumed, 0 failed; 0 overdue timer(s) fired',
    );
    expect(out).toContain('1 step(s) stay uncertain');

    const store = openStore(`sqlite:${file}`);
    try {
      expect((await store.loadActor('task-a'))?.state).toBe('retrying');
      expect((await store.loadActor('task-c'))?.state).toBe('failed');
      expect(await store.getStep('task-a:refund')).toMatchObject({ status: 'executing' });
      expect((await store.timers('task-a')).map((t) => t.timerId)).toEqual([
        'xstate.after.retryBackoff.task-lifecycle.retrying',
      ]);
    } finally {
      await store.close();
    }
  });

  test('--json reports the second recovery: a retrying task whose backoff has not run out gets RETRY', async () => {
    // Precondition of the scenario: the first backoff of task-a is far in the future.
    expect(retryDelay(0, { ...SLOW_BACKOFF, seed: 'task-a' })).toBeGreaterThan(60_000);
    await crashedDatabase();
    expect((await cli(dir, 'recover')).code).toBe(0);
    const result = await cli(dir, 'recover', '--store', `sqlite:${file}`, '--json');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      store: string;
      actors: Array<{ actorId: string; stateBefore: string; stateAfter: string; action: string }>;
      counts: Record<string, number>;
      pendingTimers: Record<string, string>;
    };
    expect(report.store).toBe(`sqlite:${file}`);
    expect(report.actors).toEqual([
      expect.objectContaining({
        actorId: 'task-a',
        stateBefore: 'retrying',
        stateAfter: 'running',
        action: 'sent',
        event: { type: 'RETRY' },
      }),
      expect.objectContaining({ actorId: 'task-d', stateBefore: 'planned', action: 'resumed' }),
    ]);
    expect(report.counts).toMatchObject({ actors: 2, sent: 1, resumed: 1, failed: 0 });
    expect(report.pendingTimers).toEqual({});

    const verified = await cli(dir, 'verify');
    expect(verified.code).toBe(0);
  });

  test('exits 1 and names the actor when one cannot be recovered, and fails cleanly without a database', async () => {
    await crashedDatabase();
    const raw = new Database(file);
    raw.prepare('UPDATE actors SET machine_id = ? WHERE id = ?').run('retired-machine', 'task-d');
    raw.close();
    const result = await cli(dir, 'recover');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^ {2}task-d +retired-machine +planned +planned +failed +- +StoreError: .*retired-machine/m,
    );
    expect(result.stdout).toContain('1 failed');

    expectCleanFailure(await cli(dir, 'recover', '--db', 'missing.db'), /no database at/);
    expectCleanFailure(await cli(dir, 'recover', '--store', 'ftp://host/db'), /unknown scheme/);
  });
});

describe('your own charts on the command line (--charts)', () => {
  test('verify, recover and status load a module of your charts, made with defineChart(machine)', async () => {
    // The module lives inside the checkout so that it resolves xstate as a user's would.
    const moduleDir = join(import.meta.dirname, '..', 'test-artifacts', 'own-chart');
    mkdirSync(moduleDir, { recursive: true });
    const module = join(moduleDir, 'door.ts');
    writeFileSync(
      module,
      `import { setup } from 'xstate';
import { defineChart } from '../../src/index.ts';
export const machine = setup({}).createMachine({
  id: 'door',
  initial: 'closed',
  states: { closed: { on: { OPEN: 'open' } }, open: { meta: { class: 'waiting' }, on: { CLOSE: 'closed' } } },
});
export const chart = defineChart(machine);
`,
    );
    const { machine } = (await import(module)) as { machine: AnyStateMachine };
    const store = openStore(`sqlite:${file}`);
    const door = await createDurableActor(machine, { id: 'front-door', store });
    await door.send({ type: 'OPEN' });
    await getRuntime(store).close();
    await store.close();

    const without = await cli(dir, 'verify');
    expect(without.code).toBe(1);
    const verified = await cli(dir, 'verify', '--charts', module);
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain('actors  1');
    expect((await cli(dir, 'recover', '--charts', module)).code).toBe(0);
    const status = await cli(dir, 'status', '--charts', module, '--json');
    expect(JSON.parse(status.stdout).statistics.groups).toEqual([
      expect.objectContaining({ machine_id: 'door', state: 'open', class: 'waiting' }),
    ]);
    expectCleanFailure(await cli(dir, 'verify', '--charts', 'no/such/module.ts'), /no such file/);
  });
});

describe('your own charts in agentcharts.config.ts', () => {
  test('every command reads its charts and store: verify, status, recover, diagram, paths', async () => {
    const moduleDir = join(import.meta.dirname, '..', 'test-artifacts', 'config-chart');
    mkdirSync(moduleDir, { recursive: true });
    writeFileSync(
      join(moduleDir, 'gate.ts'),
      `import { setup } from 'xstate';
import { defineChart } from '../../src/index.ts';
export const machine = setup({}).createMachine({
  id: 'gate',
  initial: 'shut',
  states: { shut: { on: { LIFT: 'up' } }, up: { meta: { class: 'waiting' }, on: { DROP: 'shut' } } },
});
export const chart = defineChart(machine);
`,
    );
    writeFileSync(
      join(moduleDir, 'agentcharts.config.ts'),
      `import { defineConfig } from '../../src/index.ts';
import { chart } from './gate.ts';
export default defineConfig({ charts: [chart], store: 'sqlite:./gates.db' });
`,
    );
    const { machine } = (await import(join(moduleDir, 'gate.ts'))) as { machine: AnyStateMachine };
    const db = join(moduleDir, 'gates.db');
    rmSync(db, { force: true });
    const store = openStore(`sqlite:${db}`);
    const gate = await createDurableActor(machine, { id: 'north-gate', store });
    await gate.send({ type: 'LIFT' });
    await getRuntime(store).close();
    await store.close();

    // No --db, no --charts: both come from the config file.
    const verified = await cli(moduleDir, 'verify');
    expect(verified.stderr).toBe('');
    expect(verified.stdout).toContain('actors  1');
    expect((await cli(moduleDir, 'recover')).code).toBe(0);
    const status = await cli(moduleDir, 'status', '--json');
    expect(JSON.parse(status.stdout).statistics.groups).toEqual([
      expect.objectContaining({ machine_id: 'gate', state: 'up', class: 'waiting' }),
    ]);
    const diagram = await cli(moduleDir, 'diagram', 'gate');
    expect(diagram.stdout).toContain('shut --> up : LIFT');
    expect((await cli(moduleDir, 'paths', 'gate')).stdout).toContain('gate');
    // --db still wins over the config's store.
    expectCleanFailure(await cli(moduleDir, 'verify', '--db', 'other.db'), /no database at/);
  });

  test('a config that is not right is one clear line naming the file', async () => {
    writeFileSync(
      join(dir, 'agentcharts.config.mjs'),
      `export default { charts: [1], stor: 'x' };\n`,
    );
    expectCleanFailure(
      await cli(dir, 'verify'),
      /ConfigError: agentcharts.config.mjs: unknown field "stor" \(known: charts, store\)/,
    );
    writeFileSync(join(dir, 'agentcharts.config.mjs'), `export default { charts: [1] };\n`);
    expectCleanFailure(await cli(dir, 'status'), /charts\[0\] is neither a chart/);
    writeFileSync(join(dir, 'agentcharts.config.mjs'), `export default { store: 'ftp://x' };\n`);
    expectCleanFailure(await cli(dir, 'verify'), /agentcharts.config.mjs: store: .*unknown scheme/);
  });
});
