import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { openStore, verify } from '../src/index.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const root = process.cwd();
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs the refund demo, examples/refund-demo/main.ts, in `cwd` as `npm start` does
 * (tsx's loader and the `agentcharts-source` condition, which its workers inherit).
 * `until` kills the demo's whole process group (orchestrator and worker) with
 * SIGKILL as soon as stdout matches it, as an operator's `kill -9` or a power cut would.
 */
function demo(cwd: string, args: string[] = [], until?: RegExp): Promise<Run> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(
      process.execPath,
      [
        '--conditions=agentcharts-source',
        '--import',
        tsx,
        join(root, 'examples', 'refund-demo', 'main.ts'),
        ...args,
      ],
      { cwd, detached: true, env: { ...process.env, NO_COLOR: '1' } },
    );
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (until && !killed && until.test(stdout) && child.pid !== undefined) {
        killed = true;
        process.kill(-child.pid, 'SIGKILL');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started }),
    );
  });
}

/** The live transition lines: `[pid]`, from, event, to. */
function transitions(stdout: string): Array<{ pid: number; edge: string }> {
  return [...stdout.matchAll(/^\S+ {2}\[(\d+)\] +(\S+) +--(\S+)--> +(\S+)/gm)].map((m) => ({
    pid: Number(m[1]),
    edge: `${m[2]} --${m[3]}--> ${m[4]}`,
  }));
}

function ledger(file: string, key: string): { refunds: number; calls: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    const refunds = db
      .prepare('SELECT COUNT(*) AS n FROM demo_provider_refunds WHERE idempotency_key = ?')
      .get(key) as { n: number };
    const calls = db
      .prepare('SELECT status FROM demo_provider_calls WHERE idempotency_key = ? ORDER BY id')
      .all(key) as Array<{ status: number }>;
    return { refunds: refunds.n, calls: calls.map((c) => c.status) };
  } finally {
    db.close();
  }
}

async function verifyFile(file: string) {
  const store = openStore(`sqlite:${file}`);
  try {
    return await verify(store, { charts });
  } finally {
    await store.close();
  }
}

/** Whether a process runs (a zombie left for a container's init to reap does not count). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; Z = exited, not yet reaped.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return !existsSync('/proc');
  }
}

/**
 * Whether a process SIGKILLed with its group is gone, waiting for the kernel to
 * finish killing it: the group leader's exit can be reported first, a child of
 * it still dying for a moment on a loaded machine (polled, for up to 5 s).
 */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  return !alive(pid);
}

describe('npm start (examples/refund-demo)', () => {
  let dir: string;
  let file: string;
  let first: Run;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentcharts-demo-'));
    file = join(dir, 'agentcharts.db');
    first = await demo(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('is what `npm start` runs', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['start']).toBe(
      'tsx --conditions=agentcharts-source examples/refund-demo/main.ts',
    );
  });

  test('tells the refund story end to end on ./agentcharts.db and exits 0', () => {
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`database  ${file} (new SQLite file)`);
    expect(first.stdout).toContain(
      'starting fresh: refund-1, because this database has no demo task yet',
    );
    expect(first.ms).toBeLessThan(30_000);
  });

  test('prints every transition live, in order: approval, a retried 503, the crash and the recovery', () => {
    const lines = transitions(first.stdout);
    expect(lines.map((l) => l.edge)).toEqual([
      '(new) --create--> planned',
      'planned --START--> running',
      'running --PAUSE_FOR_APPROVAL--> paused',
      'paused --APPROVAL_GRANTED--> running',
      'running --TRANSIENT_ERROR--> retrying',
      'retrying --RETRY--> running',
      'running --TRANSIENT_ERROR--> retrying',
      'retrying --RETRY--> running',
      'running --COMPLETE--> done',
    ]);
    // The first six came from the worker that was killed, the rest from a new process.
    const killedPid = lines[0]?.pid ?? 0;
    expect(lines.slice(0, 6).every((l) => l.pid === killedPid)).toBe(true);
    const recoveredPid = lines[6]?.pid ?? 0;
    expect(recoveredPid).not.toBe(killedPid);
    expect(lines.slice(6).every((l) => l.pid === recoveredPid)).toBe(true);
    expect(alive(killedPid)).toBe(false);

    const out = first.stdout;
    const order = [
      'waiting for the manager',
      'manager manager@example.com approves the refund',
      '503 Service Unavailable (transient)',
      '200 OK, booked re_0001',
      `SIGKILL worker ${killedPid}`,
      'task refund-1 "running", step refund-1:refund "executing"',
      'refund-1:refund  executing → done',
      'sent TRANSIENT_ERROR',
      'already done, returns re_0001 from the store; the provider is not called',
      'refund-1 is done.',
    ].map((text) => out.indexOf(text));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  test('prints the audit trail, the provider ledger with exactly one refund, verify and the database path', async () => {
    const out = first.stdout;
    expect(out).toMatch(/Audit trail of refund-1/);
    expect(out).toMatch(/^ +7 +\S+ +running +TRANSIENT_ERROR +retrying +recover +[0-9a-f]{12}$/m);
    expect(out).toMatch(/^ +9 +\S+ +running +COMPLETE +done +send \[\d+\] +[0-9a-f]{12}$/m);
    expect(out).toContain(
      'exactly one refund under refund-1:refund: the refund ran once, across the crash and the retry',
    );
    expect(out).toMatch(/^verify: ok \(1 actor\(s\), 9 rows\)/m);
    expect(out).toContain(`database: ${file}`);
    expect(out).toContain(
      'run the demo again: refund-1 is finished, so it starts fresh with refund-2',
    );

    // And the files say the same as the output.
    expect(ledger(file, 'refund-1:refund')).toEqual({ refunds: 1, calls: [503, 200] });
    const report = await verifyFile(file);
    expect(report).toMatchObject({ ok: true, actorsChecked: 1, rowsChecked: 9 });
    const store = openStore(`sqlite:${file}`);
    try {
      expect(await store.loadActor('refund-1')).toMatchObject({ state: 'done', status: 'done' });
      expect(await store.getStep('refund-1:refund')).toMatchObject({
        status: 'done',
        attempts: 2,
      });
      const rows = await store.history('refund-1');
      expect(rows.map((r) => (JSON.parse(r.metadata) as { source: string }).source)).toEqual([
        'create',
        'send',
        'send',
        'send',
        'send',
        'timer',
        'recover',
        'timer',
        'send',
      ]);
    } finally {
      await store.close();
    }
  });

  test('run again, it says it starts fresh with refund-2 and why; --no-kill tells the story without the crash', async () => {
    const second = await demo(dir, ['--no-kill']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(
      'starting fresh: refund-2, because refund-1 already finished (done)',
    );
    expect(second.stdout).toContain('(existing SQLite file)');
    expect(second.stdout).not.toContain('SIGKILL');
    expect(transitions(second.stdout).map((l) => l.edge)).toEqual([
      '(new) --create--> planned',
      'planned --START--> running',
      'running --PAUSE_FOR_APPROVAL--> paused',
      'paused --APPROVAL_GRANTED--> running',
      'running --TRANSIENT_ERROR--> retrying',
      'retrying --RETRY--> running',
      'running --COMPLETE--> done',
    ]);
    expect(ledger(file, 'refund-2:refund')).toEqual({ refunds: 1, calls: [503, 200] });
    expect(ledger(file, 'refund-1:refund').refunds).toBe(1);
    expect(await verifyFile(file)).toMatchObject({ ok: true, actorsChecked: 2 });
  });
});

describe('an interrupted demo', () => {
  const dir = suiteTempDir('agentcharts-demo-resume-');

  test('is resumed by the next run, which names the stored state and finishes with one refund', async () => {
    const file = join(dir(), 'story.db');
    const cut = await demo(dir(), ['--db', 'story.db'], /--PAUSE_FOR_APPROVAL-->/);
    expect(cut.signal).toBe('SIGKILL');
    const workerPid = Number(/\[(\d+)\] +worker process started/.exec(cut.stdout)?.[1]);
    expect(await gone(workerPid)).toBe(true);

    const store = openStore(`sqlite:${file}`);
    const stored = await store.loadActor('refund-1');
    await store.close();
    expect(stored?.status).toBe('active');

    const next = await demo(dir(), ['--db', 'story.db']);
    expect(next.code).toBe(0);
    expect(next.stdout).toContain(
      `resuming refund-1: it stopped unfinished in state "${stored?.state ?? '?'}"`,
    );
    expect(next.stdout).not.toContain('(new) --create-->');
    expect(transitions(next.stdout).at(-1)?.edge).toBe('running --COMPLETE--> done');
    expect(ledger(file, 'refund-1:refund').refunds).toBe(1);
    expect(await verifyFile(file)).toMatchObject({ ok: true, actorsChecked: 1 });
  });
});
