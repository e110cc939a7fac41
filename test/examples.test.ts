/**
 * The examples run as shown (with their mock model: no network). Each imports the
 * package by name (`agentcharts`, `agentcharts/machines`), which resolves to this
 * checkout's sources under the `agentcharts-source` condition.
 *
 * examples/refund-demo (`npm start`) is run by test/demo.test.ts, and
 * examples/embedding-app/app.ts is exercised piece by piece by test/embedding.test.ts.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateTransitionTests } from 'agentcharts/testing';
import { runAgent } from '../examples/mcp-agent/agent.ts';
import { chart as docReview } from '../examples/your-own-chart/doc-review.ts';
import { chart as docReviewV2 } from '../examples/your-own-chart/doc-review.v2.ts';
import { runCli } from './support/cli.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const root = join(import.meta.dirname, '..');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs an example as its README says (tsx, the `agentcharts-source` condition) in
 * `cwd`; `onOutput` sees stdout as it grows and may stop the process.
 */
function runExample(
  file: string,
  args: readonly string[],
  cwd: string,
  onOutput?: (stdout: string, stop: () => void) => void,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--conditions=agentcharts-source', '--import', tsx, join(root, file), ...args],
      { cwd, env: { ...process.env, NO_COLOR: '1' } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onOutput?.(stdout, () => child.kill('SIGTERM'));
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

test('examples/mcp-agent: the agent finishes the refund task; its illegal move is refused', async () => {
  const previous = process.env['AI_GATEWAY_API_KEY'];
  delete process.env['AI_GATEWAY_API_KEY'];
  const lines: string[] = [];
  try {
    expect(await runAgent((line) => lines.push(line))).toBe('done');
  } finally {
    if (previous !== undefined) process.env['AI_GATEWAY_API_KEY'] = previous;
  }
  expect(lines.map((l) => l.split(' ')[0])).toEqual([
    'create_actor',
    'START',
    'DEPENDENCY_RESOLVED',
    'COMPLETE',
    'Refund',
  ]);
  expect(lines[2]).toContain('refused');
});

describe('examples/embedding-app/main.ts', () => {
  const dir = suiteTempDir('agentcharts-embedding-app-');

  test('serves tasks over HTTP; an approved refund is retried after a 503 and done; SIGTERM stops it', async () => {
    const seen: { body?: unknown; error?: unknown } = {};
    let started = false;
    const run = await runExample(
      'examples/embedding-app/main.ts',
      ['--db', join(dir(), 'app.db'), '--port', '0'],
      dir(),
      (stdout, stop) => {
        const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
        if (url === undefined || started) return;
        started = true;
        const call = async (method: string, path: string, body?: unknown) => {
          const res = await fetch(`${url}${path}`, {
            method,
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          });
          return { status: res.status, json: (await res.json()) as { state?: string } };
        };
        void (async () => {
          expect(
            await call('POST', '/tasks', { taskId: 'refund-7', orderId: '7', amountCents: 700 }),
          ).toEqual({ status: 201, json: { id: 'refund-7', state: 'paused' } });
          expect((await call('POST', '/tasks/refund-7/events', { type: 'START' })).status).toBe(
            409,
          );
          await call('POST', '/tasks/refund-7/events', {
            type: 'APPROVAL_GRANTED',
            approver: 'ana',
          });
          const deadline = Date.now() + 20_000;
          let task = await call('GET', '/tasks/refund-7');
          while (task.json.state !== 'done' && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 50));
            task = await call('GET', '/tasks/refund-7');
          }
          seen.body = task.json;
        })()
          .catch((error: unknown) => (seen.error = error))
          .finally(stop);
      },
    );
    expect(seen.error).toBeUndefined();
    expect(seen.body).toMatchObject({ state: 'done', context: { retry_count: 1 } });
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('payments: refund-7:refund → 503 (transient)');
    expect(run.stdout).toContain('payments: refund-7:refund → 200, re_1');
    expect(run.stdout).toMatch(/stopped\n$/);
    expect(run.code).toBe(0);
  });
});

// The README of examples/your-own-chart: generated transition tests for the chart
// (its samples give the invoked word count's outcomes) and for version 2 with
// every state version 1 stores migrating to it.
generateTransitionTests(docReview, {
  describe: 'examples/your-own-chart: doc-review',
  expect: { states: 8, legal: 31, illegal: 59, paths: 20 },
});
generateTransitionTests(docReviewV2, {
  describe: 'examples/your-own-chart: doc-review v2',
  versions: { chart: docReviewV2, previous: [docReview] },
});

describe('examples/your-own-chart', () => {
  const dir = join(root, 'examples', 'your-own-chart');
  const removeDatabase = () => {
    for (const suffix of ['', '-wal', '-shm'])
      rmSync(join(dir, `reviews.db${suffix}`), { force: true });
  };
  const nodeOptions = process.env['NODE_OPTIONS'];
  beforeAll(() => {
    removeDatabase();
    // The CLI runs from the sources; the config it reads imports `agentcharts`,
    // which resolves to the sources under this condition (to dist/ when installed).
    process.env['NODE_OPTIONS'] = [nodeOptions, '--conditions=agentcharts-source']
      .filter(Boolean)
      .join(' ');
  });
  afterAll(() => {
    if (nodeOptions === undefined) delete process.env['NODE_OPTIONS'];
    else process.env['NODE_OPTIONS'] = nodeOptions;
    removeDatabase();
  });

  test('app.ts: a review killed mid-invoke; recover runs the count again; typed reload, approvals, verify clean', async () => {
    const run = await runExample('examples/your-own-chart/app.ts', [], dir);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const id = /(doc-\d+): counting words; SIGKILL/.exec(run.stdout)?.[1];
    expect(id).toBeDefined();
    const lines = run.stdout.replace(/^\[\d+\] /gm, '').replaceAll(id ?? '?', 'doc');
    expect(lines.split('\n')).toEqual([
      'doc: counting words; SIGKILL',
      'the first process is gone (SIGKILL)',
      'recover(): 1 unfinished actor(s), 1 interrupted invoke(s) run again',
      'doc: reviewing(legal: pending, editorial: pending), 500 words',
      'refused APPROVE: InvalidEventError (invalid_field at reviewer)',
      'doc: reviewing(legal: ok, editorial: pending)',
      'doc: published, approved by ana and eve',
      'verify: ok (1 actor(s), 5 rows)',
      '',
    ]);
  });

  test('the CLI in the example folder reads agentcharts.config.ts: its chart and its store', async () => {
    const verified = await runCli(['verify'], dir);
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`verify sqlite:${join(dir, 'reviews.db')}`);
    expect(verified.stdout).toMatch(/actors {2}1\n {2}rows {4}5\n/);

    const status = await runCli(['status', '--json'], dir);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      statistics: {
        groups: [
          expect.objectContaining({
            machine_id: 'doc-review',
            state: 'published',
            class: 'completed',
            count: 1,
          }),
        ],
      },
    });
  });
});
