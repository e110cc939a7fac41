/**
 * Your own chart, from the packed package, as a new user meets it: the tarball
 * installed in a fresh app with the walkthrough's files (examples/your-own-chart),
 * then the walkthrough end to end — the chart bundled for the browser, a review
 * killed mid-invoke and recovered, status, history, diagram, paths, verify,
 * check-deploy with a version 2 and its migration, serve with a signed event,
 * inspect with a plain XState app, an MCP tool call, the React hook type-checked
 * — and the same chart in TypeScript and in JavaScript read alike by every
 * command (one agentcharts in the process).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { build, transform } from 'esbuild';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freshApp, install, root } from './support/consumer-app.ts';

let dir: string;
let app: string;
const running: ChildProcessWithoutNullStreams[] = [];
const example = join(root, 'examples', 'your-own-chart');
const TOKEN = 'a-read-token-of-32-characters-xx';
const SECRET = 'an-agent-secret-of-enough-length';

beforeAll(() => {
  const fresh = freshApp('agentcharts-own-chart-');
  ({ dir, app } = fresh);
  install(app, [
    fresh.tarball,
    '@types/node@20',
    'tsx@4',
    'hono@4',
    '@hono/node-server@1',
    '@hono/node-ws@1',
    'prom-client@15',
    '@modelcontextprotocol/sdk@1',
    '@statelyai/inspect@0.7',
    'react@19',
    '@types/react@19',
  ]);
  for (const file of ['doc-review.ts', 'doc-review.v2.ts', 'agentcharts.config.ts', 'app.ts']) {
    copyFileSync(join(example, file), join(app, file));
  }
}, 900_000);

afterAll(() => {
  for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const bin = () => join(app, 'node_modules', '.bin', 'agentcharts');
/** The installed CLI, in `cwd` (default: the app, whose config names the chart and store). */
function cli(args: string[], cwd = app) {
  const run = spawnSync(bin(), args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}
/** A TypeScript program in the app, through tsx (the app's dev dependency). */
function tsx(file: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: app,
    encoding: 'utf8',
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Starts a long-running CLI command and resolves once its output says `ready`. */
function start(args: string[], ready: RegExp, cwd = app): Promise<string> {
  const child = spawn(bin(), args, { cwd, env: { ...process.env, NO_COLOR: '1' } });
  running.push(child);
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (ready.test(out)) resolve(out);
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}: ${err}`)));
  });
}
const stop = async () => {
  const child = running.pop();
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGINT');
  await exited;
};

/** A new review `id` of the chart in `module`, written to the app's store by a small program. */
function newReview(id: string, module: string): void {
  writeFileSync(
    join(app, `${id}.ts`),
    `import { createDurableActor, getRuntime, openStore } from 'agentcharts';
import { chart } from '${module}';
const store = openStore('sqlite:./reviews.db');
await createDurableActor(chart, { id: '${id}', store });
await getRuntime(store).close();
await store.close();
`,
  );
  expect(tsx(`${id}.ts`)).toMatchObject({ code: 0, stderr: '' });
}

let reviewId = '';

describe('the own-chart walkthrough, from the packed package', () => {
  test('the chart, built on agentcharts/chart, bundles for the browser: 0 errors, at most 45 kB gzip with xstate and zod', async () => {
    const out = await build({
      stdin: {
        contents: "export { chart } from './doc-review.ts';",
        resolveDir: app,
        loader: 'ts',
      },
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    });
    expect(out.errors).toEqual([]);
    const gzip = gzipSync(out.outputFiles[0]?.contents ?? new Uint8Array()).byteLength;
    console.info(
      `doc-review (agentcharts/chart) for the browser: ${(gzip / 1024).toFixed(1)} kB gzip (${gzip} bytes)`,
    );
    expect(gzip).toBeLessThanOrEqual(45 * 1024);
  });

  test('app.ts: a review killed by SIGKILL mid-invoke, recovered, reloaded typed, approved, verified', () => {
    const run = tsx('app.ts');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    reviewId = /(doc-\d+): counting words; SIGKILL/.exec(run.stdout)?.[1] ?? '';
    const lines = run.stdout.replace(/^\[\d+\] /gm, '').replaceAll(reviewId, 'doc');
    expect(lines).toContain('recover(): 1 unfinished actor(s), 1 interrupted invoke(s) run again');
    expect(lines).toContain('doc: reviewing(legal: ok, editorial: pending)');
    expect(lines).toContain('doc: published, approved by ana and eve');
    expect(lines).toContain('verify: ok (1 actor(s), 5 rows)');
  });

  test('status, history, diagram, paths and verify read the config and its chart', () => {
    // A second review, left in `drafting.writing`, for the commands and the version change.
    newReview('doc-2', './doc-review.ts');
    const status = cli(['status', '--json']);
    expect(status.stderr).toBe('');
    const groups = JSON.parse(status.stdout).statistics.groups as unknown[];
    expect(groups).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          machine_id: 'doc-review',
          state: 'published',
          class: 'completed',
        }),
        expect.objectContaining({ machine_id: 'doc-review', state: 'writing', class: 'idle' }),
      ]),
    );
    const history = cli(['history', reviewId, '--json']);
    expect(history.code).toBe(0);
    expect(history.stdout).toContain('xstate.done.actor.count');
    const diagram = cli(['diagram', 'doc-review']);
    expect(diagram.stdout).toContain('state reviewing');
    expect(diagram.stdout).toContain('checking --> writing : done: count [tooLong]');
    const paths = cli(['paths', 'doc-review']);
    expect(paths.stderr).toBe('');
    expect(paths.code).toBe(0);
    expect(paths.stdout).toMatch(
      /published\s+SUBMIT → xstate\.done\.actor\.count → APPROVE → APPROVE/,
    );
    const verified = cli(['verify']);
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
  });

  test('version 2: check-deploy names what a missing migration would strand, passes with it; commands use version 2', () => {
    writeFileSync(
      join(app, 'no-migration.ts'),
      `import { defineChart } from 'agentcharts/chart';
import { chart } from './doc-review.v2.ts';
// A migration that forgets the rename.
export const careless = defineChart(chart.machine, {
  events: chart.events,
  version: 2,
  migrations: { 1: (snapshot) => snapshot },
});
`,
    );
    const careless = cli(['check-deploy', '--charts', './no-migration.ts']);
    expect(careless.code).toBe(1);
    expect(careless.stdout).toContain(
      'state "drafting" is not in doc-review v2: 1 actor(s) stranded (doc-2)',
    );
    const checked = cli(['check-deploy', '--charts', './doc-review.v2.ts']);
    expect(checked.stdout).toContain('ok: no stored actor would be stranded');
    expect(checked.code).toBe(0);
    writeFileSync(
      join(app, 'agentcharts.config.ts'),
      `import { defineConfig } from 'agentcharts';
import { chart as v1 } from './doc-review.ts';
import { chart as v2 } from './doc-review.v2.ts';
export default defineConfig({ charts: [v1, v2], store: 'sqlite:./reviews.db' });
`,
    );
    expect(cli(['diagram', 'doc-review']).stdout).toContain('state draft');
    expect(cli(['diagram', 'doc-review', '--version', '1']).stdout).toContain('state drafting');
    expect(cli(['verify'])).toMatchObject({ code: 0, stderr: '' });
  });

  test('serve: the counts, and a signed event from an agent key', async () => {
    writeFileSync(
      join(app, 'keys.json'),
      JSON.stringify({ keys: [{ id: 'writer', secret: SECRET, role: 'agent' }] }),
    );
    const out = await start(
      ['serve', '--port', '0', '--token', TOKEN, '--keys', 'keys.json', '--no-timers'],
      /agentcharts serve: (http:\/\/\S+)/,
    );
    const url = /agentcharts serve: (http:\/\/\S+)/.exec(out)?.[1] ?? '';
    const counts = await fetch(`${url}/api/counts`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await counts.json()) as { states: Array<Record<string, unknown>> };
    expect(body.states).toContainEqual(
      expect.objectContaining({ state: 'drafting.writing', name: 'writing' }),
    );
    writeFileSync(
      join(app, 'signed.ts'),
      `import { signRequest } from 'agentcharts/server';
const body = JSON.stringify({ actorId: 'doc-2', event: { type: 'SUBMIT', title: 'Minutes', author: 'bo' } });
const response = await fetch(process.argv[2] + '/api/events', {
  method: 'POST',
  headers: {
    'content-type': 'application/json',
    ...signRequest({ id: 'writer', secret: '${SECRET}' }, { method: 'POST', path: '/api/events', body }),
  },
  body,
});
console.log(response.status, JSON.stringify(await response.json()));
`,
    );
    const signed = tsx('signed.ts', url);
    expect(signed.stderr).toBe('');
    expect(signed.stdout).toMatch(/^200 .*"ok":true.*"eventType":"SUBMIT"/);
    await stop();
  });

  test('inspect: a plain XState app appears in the local inspector', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const out = await start(['inspect', '--no-open', '--port', String(port)], /Ctrl-C to stop/);
    const socket = /createWebSocketInspector\(\{ url: '([^']+)' \}\)/.exec(out)?.[1] ?? '';
    const token = /\?token=([\w-]+)/.exec(out)?.[1] ?? '';
    writeFileSync(
      join(app, 'plain.ts'),
      `import { createWebSocketInspector } from '@statelyai/inspect';
import { createActor, createMachine } from 'xstate';
const light = createMachine({ id: 'light', initial: 'green', states: { green: { on: { NEXT: 'yellow' } }, yellow: {} } });
const inspector = createWebSocketInspector({ url: process.argv[2] });
const actor = createActor(light, { inspect: inspector.inspect }).start();
actor.send({ type: 'NEXT' });
await new Promise((resolve) => setTimeout(resolve, 500));
inspector.stop();
`,
    );
    expect(tsx('plain.ts', socket)).toMatchObject({ code: 0 });
    const base = socket.replace(/^ws/, 'http').replace(/\/inspect$/, '');
    await expect
      .poll(async () => {
        const response = await fetch(`${base}/api/inspections`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await response.json()) as { actors: Array<{ name: string; value: unknown }> };
        return body.actors.find((a) => a.name === 'light')?.value;
      })
      .toBe('yellow');
    await stop();
  });

  test("mcp: the bound review's legal moves are tools; a call moves it", async () => {
    newReview('doc-3', './doc-review.v2.ts');
    const transport = new StdioClientTransport({
      command: bin(),
      args: ['mcp', '--actor', 'doc-3'],
      cwd: app,
      env: { ...process.env, AGENTCHARTS_LOG_LEVEL: 'silent' },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'walkthrough-agent', version: '1.0.0' });
    await client.connect(transport).catch((error: unknown) => {
      throw new Error(`mcp did not start: ${stderr}`, { cause: error });
    });
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('SUBMIT');
      expect(names).not.toContain('APPROVE'); // an approval, never an agent's move
      const called = await client.callTool({
        name: 'SUBMIT',
        arguments: { title: 'Plan', author: 'bo' },
      });
      expect(called.isError).not.toBe(true);
      expect(called.structuredContent).toMatchObject({ ok: true, event: 'SUBMIT' });
    } finally {
      await client.close();
    }
  });

  test('the React hook and the reloaded actor are typed by the chart (tsc, strict)', () => {
    writeFileSync(
      join(app, 'view.tsx'),
      `import { useRemoteActor } from 'agentcharts/react';
import { openDurableActor, openStore } from 'agentcharts';
import { chart, machine } from './doc-review.ts';
export function Review({ id }: { id: string }) {
  const { context, value, accepts } = useRemoteActor<typeof machine>(id);
  // @ts-expect-error a context field the chart does not have
  void context?.pages;
  const approvable: boolean = accepts.includes('APPROVE');
  return <p>{context?.title} {JSON.stringify(value)} {String(approvable)}</p>;
}
export async function approve(id: string) {
  const doc = await openDurableActor(openStore('sqlite:./reviews.db'), id, { chart });
  // @ts-expect-error an event type the chart does not have
  await doc.send({ type: 'PUBLISH' });
  await doc.send({ type: 'APPROVE', reviewer: 'ana', area: 'legal' });
}
`,
    );
    writeFileSync(
      join(app, 'tsconfig.view.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          jsx: 'react-jsx',
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          types: ['node'],
        },
        files: ['view.tsx'],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.view.json'], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  }, 120_000);
});

describe('one agentcharts in the process: the chart in TypeScript and in JavaScript read alike', () => {
  // Node ≥ 22.18 strips types natively; on the Node this runs (v20 here) the TypeScript
  // chart loads through tsx's process-wide hooks. Another Node line, when installed, is
  // named by AGENTCHARTS_OTHER_NODE.
  const nodes = [process.execPath, process.env['AGENTCHARTS_OTHER_NODE']].filter(
    (n): n is string => n !== undefined && n !== '',
  );

  test.each(nodes)(
    'status, tail, alerts and serve with %s',
    async (node) => {
      console.info(`node ${spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
      const plain = join(app, 'plain-js');
      mkdirSync(plain, { recursive: true });
      // The same chart as JavaScript (types stripped), beside its TypeScript source.
      const js = await transform(readFileSync(join(app, 'doc-review.ts'), 'utf8'), {
        loader: 'ts',
        format: 'esm',
      });
      writeFileSync(join(app, 'doc-review.mjs'), js.code);
      const agentcharts = join(app, 'node_modules', 'agentcharts', 'bin', 'agentcharts.js');
      // Two reviews of version 1: one being written, one waiting for its reviewers.
      writeFileSync(
        join(app, 'seed.ts'),
        `import { createDurableActor, getRuntime, openStore } from 'agentcharts';
import { chart } from './doc-review.ts';
const store = openStore('sqlite:./plain-js/plain.db');
await createDurableActor(chart, { id: 'doc-a', store });
const b = await createDurableActor(chart, { id: 'doc-b', store });
await b.send({ type: 'SUBMIT', title: 'Notes', author: 'bo' });
await new Promise<void>((done) => {
  const check = () => b.getSnapshot().matches('reviewing') && done();
  b.subscribe(check);
  check();
});
await getRuntime(store).close();
await store.close();
`,
      );
      expect(tsx('seed.ts')).toMatchObject({ code: 0, stderr: '' });
      const run = (chart: string, ...args: string[]) => {
        const out = spawnSync(
          node,
          [agentcharts, ...args, '--db', 'plain.db', '--charts', `../${chart}`],
          { cwd: plain, encoding: 'utf8' },
        );
        return { code: out.status, stderr: out.stderr, stdout: out.stdout };
      };
      for (const args of [
        ['status', '--json'],
        ['status', '--state', 'writing'],
        ['tail', '--since', '1d'],
        ['alerts', '--json', '--at', '2030-01-01T00:00:00Z'],
      ]) {
        const ts = run('doc-review.ts', ...args);
        const mjs = run('doc-review.mjs', ...args);
        expect(ts.stderr, args.join(' ')).toBe('');
        // Equal but for the clock: when each ran, and how long an actor has been in its state.
        const same = (text: string) =>
          text
            .replace(/"at": "[^"]+"/g, '"at": …')
            .replace(/"time_in_state_ms": \d+/g, '"time_in_state_ms": …')
            .replace(/\d+\.\d (s|min|h|d)\b/g, '… $1');
        expect(same(ts.stdout), args.join(' ')).toBe(same(mjs.stdout));
        expect(ts.code).toBe(mjs.code);
      }
      // The TypeScript chart's names and classes, not the defaults of a chart never seen.
      const status = run('doc-review.ts', 'status', '--json').stdout;
      expect(status).toContain('"class": "idle"');
      expect(status).toContain('"state": "reviewing(legal: pending, editorial: pending)"');
      expect(run('doc-review.ts', 'status', '--state', 'writing').stdout).toMatch(
        /doc-a\s+doc-review/,
      );

      const counts: unknown[] = [];
      for (const chart of ['doc-review.ts', 'doc-review.mjs']) {
        const child = spawn(
          node,
          [
            agentcharts,
            'serve',
            '--port',
            '0',
            '--token',
            TOKEN,
            '--db',
            'plain.db',
            '--charts',
            `../${chart}`,
          ],
          { cwd: plain },
        );
        running.push(child);
        const url = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            const found = /agentcharts serve: (http:\/\/\S+)/.exec(out)?.[1];
            if (found) resolve(found);
          });
          child.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
        });
        const headers = { authorization: `Bearer ${TOKEN}` };
        counts.push({
          counts: await (await fetch(`${url}/api/counts`, { headers })).json(),
          actors: await (await fetch(`${url}/api/actors`, { headers })).json(),
        });
        await stop();
      }
      expect(counts[0]).toEqual(counts[1]);
    },
    180_000,
  );
});
