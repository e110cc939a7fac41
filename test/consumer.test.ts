/**
 * The package as a user gets it: `npm pack`, then in a fresh directory
 * `npm install <tarball>`, then plain `node` (no loader) importing every entry and
 * running a durable actor, the CLI from the installed bin, and `tsc` type-checking
 * a consumer under `nodenext` and `bundler` with `strict` and `skipLibCheck: false`.
 * Sizes are printed (packed, installed, one chart bundled for the browser).
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { du, freshApp, install as npmInstall, packageCount, root } from './support/consumer-app.ts';

let dir: string;
let app: string;
let tarball: string;

function reportInstall(what: string): void {
  const modules = join(app, 'node_modules');
  console.info(
    `${what}: ${(du(modules) / 1e6).toFixed(0)} MB, ${packageCount(modules)} packages installed`,
  );
}

function install(packages: string[]): void {
  npmInstall(app, packages);
}

/** The optional peers an app installs for PostgreSQL, the server, generated tests and the AI SDK. */
const OPTIONAL = [
  'pg@8',
  '@types/pg@8',
  'hono@4',
  '@hono/node-server@1',
  'prom-client@15',
  'vitest@4',
  'ai@6',
  // Loads a TypeScript chart module or config where Node cannot strip types (before 22.18).
  'tsx@4',
  // agentcharts/react
  'react@19',
  '@types/react@19',
  // The AI SDK's declarations import 'json-schema' (types not bundled): needed for skipLibCheck false.
  '@types/json-schema',
];

beforeAll(() => {
  ({ dir, app, tarball } = freshApp('agentcharts-consumer-'));
  install([tarball, '@types/node@20']);
  console.info(`packed ${(statSync(tarball).size / 1024).toFixed(0)} kB`);
  reportInstall('SQLite-only install (agentcharts + @types/node)');
}, 600_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the packed package, installed in a fresh app', () => {
  test('the tarball passes publint and Are the Types Wrong (ESM-only profile)', () => {
    // The tools' own bins, from this checkout's node_modules (their exports hide package.json).
    const bin = (name: string, file: string) => join(root, 'node_modules', name, file);
    const publint = spawnSync(
      process.execPath,
      [bin('publint', 'src/cli.js'), 'run', tarball, '--strict'],
      { encoding: 'utf8' },
    );
    expect(publint.stdout + publint.stderr).toContain('All good');
    expect(publint.status).toBe(0);
    // ESM only, by choice: node10 and require() resolutions are not a goal.
    const attw = spawnSync(
      process.execPath,
      [bin('@arethetypeswrong/cli', 'dist/index.js'), tarball, '--profile', 'esm-only'],
      { encoding: 'utf8' },
    );
    expect(attw.status, attw.stdout + attw.stderr).toBe(0);
  }, 120_000);

  test('SQLite only: plain node runs a durable actor; PostgreSQL and the server name what to install', () => {
    writeFileSync(
      join(app, 'sqlite-only.mjs'),
      `
import { createDurableActor, openStore, verify, getRuntime, MissingDependencyError } from 'agentcharts';
import { charts } from 'agentcharts/machines';
import { chart as task } from 'agentcharts/machines/task-lifecycle';
import * as lifecycle from 'agentcharts/machines/agent-lifecycle';
const store = openStore('sqlite:./app.db');
const actor = await createDurableActor(task.machine, { id: 't1', store, input: { taskId: 't1' }, schemas: task.events });
await actor.send({ type: 'START' });
await actor.send({ type: 'COMPLETE' });
const report = await verify(store, { charts });
console.log(actor.getSnapshot().value, report.ok, typeof lifecycle.machine);
await getRuntime(store).close();
await store.close();
try {
  openStore('postgres://user@localhost/app');
} catch (error) {
  console.log(error instanceof MissingDependencyError, error.message);
}
await import('agentcharts/server').catch((error) => console.log(error.code, error.message.split('\\n')[0]));
`,
    );
    const run = spawnSync(process.execPath, ['sqlite-only.mjs'], { cwd: app, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const [done, postgres, server] = run.stdout.trim().split('\n');
    expect(done).toBe('done true object');
    expect(postgres).toBe(
      'true a postgres:// store needs pg (optional peer dependency): npm install pg',
    );
    expect(server).toMatch(
      /^ERR_MODULE_NOT_FOUND Cannot find package '(hono|@hono\/node-server|prom-client)'/,
    );
  });

  test('the CLI runs from the installed bin, without tsx; serve names the packages it needs', () => {
    const bin = join(app, 'node_modules', '.bin', 'agentcharts');
    const timed = (command: string, args: string[]) => {
      const start = process.hrtime.bigint();
      const run = spawnSync(command, args, { cwd: app, encoding: 'utf8' });
      return { run, ms: Number(process.hrtime.bigint() - start) / 1e6 };
    };
    const version = timed(bin, ['--version']);
    expect(version.run.stdout.trim()).toBe('0.1.0');
    const bare = timed(process.execPath, ['-e', '0']);
    // Reported, not asserted (no timed assertions): the target is within 2× of bare node.
    console.info(
      `agentcharts --version ${version.ms.toFixed(0)} ms, node -e 0 ${bare.ms.toFixed(0)} ms (${(version.ms / bare.ms).toFixed(1)}×)`,
    );
    const help = spawnSync(bin, ['--help'], { cwd: app, encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('serve');
    const paths = spawnSync(bin, ['paths', 'task-lifecycle'], { cwd: app, encoding: 'utf8' });
    expect(paths.status).toBe(0);
    expect(paths.stdout).toContain('task-lifecycle');
    const serve = spawnSync(bin, ['serve', '--db', 'app.db', '--port', '0'], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(serve.status).toBe(1);
    expect(serve.stderr).toBe(
      'agentcharts: MissingDependencyError: agentcharts serve needs hono, @hono/node-server, prom-client (optional peer dependencies): npm install hono @hono/node-server prom-client\n',
    );
  });

  test('each chart bundles for the browser with its schemas (sizes reported)', async () => {
    const charts = readdirSync(join(root, 'machines'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    for (const name of charts) {
      const out = await build({
        stdin: {
          contents: `export { chart } from 'agentcharts/machines/${name}';`,
          resolveDir: app,
        },
        bundle: true,
        minify: true,
        format: 'esm',
        platform: 'browser',
        write: false,
      });
      const bytes = out.outputFiles[0]?.contents ?? new Uint8Array();
      console.info(
        `${name} for the browser: ${(bytes.byteLength / 1024).toFixed(0)} kB minified, ${(gzipSync(bytes).byteLength / 1024).toFixed(1)} kB gzip (target 60 kB gzip)`,
      );
      expect(bytes.byteLength).toBeGreaterThan(0);
    }
  });
});

describe('with the optional packages installed', () => {
  beforeAll(() => {
    const [postgres, rest] = [OPTIONAL.slice(0, 2), OPTIONAL.slice(2)];
    install(postgres);
    reportInstall(`PostgreSQL install (+ ${postgres.join(' ')})`);
    install(rest);
    reportInstall(`everything (+ ${rest.join(' ')})`);
  }, 600_000);

  test('plain node imports every entry', () => {
    writeFileSync(
      join(app, 'entries.mjs'),
      `
import { openStore } from 'agentcharts';
import { createServer, createMetrics } from 'agentcharts/server';
import { PostgresStore } from 'agentcharts/store/postgres';
import { generateTransitionTests } from 'agentcharts/testing';
import { aiTools } from 'agentcharts/ai';
import { useRemoteActor } from 'agentcharts/react';
const store = openStore('postgres://user@localhost/app');
console.log(store instanceof PostgresStore, typeof createServer, typeof createMetrics, typeof generateTransitionTests, typeof aiTools, typeof useRemoteActor);
await store.close();
`,
    );
    const run = spawnSync(process.execPath, ['entries.mjs'], { cwd: app, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('true function function function function function');
  });

  test('your own chart in agentcharts.config.ts, from the installed CLI', () => {
    writeFileSync(
      join(app, 'expense.ts'),
      `import { setup } from 'xstate';
import { defineChart } from 'agentcharts';
export const machine = setup({ types: {} as { events: { type: 'SUBMIT' } | { type: 'APPROVE' } } }).createMachine({
  id: 'expense',
  initial: 'draft',
  states: { draft: { on: { SUBMIT: 'review' } }, review: { on: { APPROVE: 'paid' } }, paid: { type: 'final' } },
});
export const chart = defineChart(machine);
`,
    );
    writeFileSync(
      join(app, 'agentcharts.config.ts'),
      `import { defineConfig } from 'agentcharts';
import { chart } from './expense.ts';
export default defineConfig({ charts: [chart], store: 'sqlite:./app.db' });
`,
    );
    const bin = join(app, 'node_modules', '.bin', 'agentcharts');
    const diagram = spawnSync(bin, ['diagram', 'expense'], { cwd: app, encoding: 'utf8' });
    expect(diagram.stderr).toBe('');
    expect(diagram.stdout).toContain('draft --> review : SUBMIT');
    const paths = spawnSync(bin, ['paths', 'expense'], { cwd: app, encoding: 'utf8' });
    expect(paths.status).toBe(0);
    const verify = spawnSync(bin, ['verify'], { cwd: app, encoding: 'utf8' });
    expect(verify.stderr).toBe('');
    expect(verify.status).toBe(0);
    rmSync(join(app, 'agentcharts.config.ts'));
  });

  test.each(['nodenext', 'bundler'])(
    'a consumer of every entry type-checks under %s, strict, skipLibCheck false: 0 errors',
    (resolution) => {
      const config = `tsconfig.${resolution}.json`;
      writeFileSync(
        join(app, config),
        JSON.stringify({
          compilerOptions: {
            module: resolution === 'bundler' ? 'esnext' : 'nodenext',
            moduleResolution: resolution,
            target: 'es2022',
            strict: true,
            skipLibCheck: false,
            noEmit: true,
            types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      writeFileSync(
        join(app, 'consumer.ts'),
        `
import { createDurableActor, openStore, toolsFor, type Store } from 'agentcharts';
import { taskLifecycle } from 'agentcharts/machines';
import { chart } from 'agentcharts/machines/task-lifecycle';
import { createServer, type ServerOptions } from 'agentcharts/server';
import { openPostgresStore } from 'agentcharts/store/postgres';
import { generateTransitionTests } from 'agentcharts/testing';
import { aiTools } from 'agentcharts/ai';
import { useRemoteActor } from 'agentcharts/react';
const store: Store = openStore('memory:');
const actor = await createDurableActor(chart.machine, { id: 't', store, input: { taskId: 't' } });
const state: string = String(actor.getSnapshot().value);
const tools = toolsFor(actor, { schemas: chart.events });
const options: ServerOptions = { store, charts: [chart], keys: [] };
export { state, taskLifecycle, tools, options, createServer, openPostgresStore, generateTransitionTests, aiTools, useRemoteActor };
`,
      );
      const tsc = require.resolve('typescript/bin/tsc');
      const start = process.hrtime.bigint();
      const result = spawnSync(process.execPath, [tsc, '-p', config], {
        cwd: app,
        encoding: 'utf8',
      });
      console.info(
        `consumer tsc (${resolution}): ${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(1)} s`,
      );
      expect(result.stdout + result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
    120_000,
  );
});
