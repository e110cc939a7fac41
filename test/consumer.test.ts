/**
 * The package as a user gets it: `npm pack`, then in a fresh directory
 * `npm install <tarball>`, then plain `node` (no loader) importing every entry and
 * running a durable actor, the CLI from the installed bin, and `tsc` type-checking
 * a consumer under `nodenext` and `bundler` with `strict` and `skipLibCheck: false`.
 * Sizes are printed (packed, installed, one chart bundled for the browser).
 */
import { build } from 'esbuild';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let dir: string;
let app: string;
let tarball: string;

function du(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + du(join(path, name)), 0);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-consumer-'));
  // `prepack` builds dist/ first.
  const packed = execFileSync(npm, ['pack', '--pack-destination', dir, '--silent'], {
    cwd: root,
    encoding: 'utf8',
  });
  tarball = join(dir, packed.trim().split('\n').at(-1) ?? '');
  // The build is in the tarball; the checkout keeps running its sources.
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  app = join(dir, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  execFileSync(
    npm,
    ['install', tarball, '@types/node@20', '--prefer-offline', '--no-audit', '--no-fund'],
    { cwd: app, stdio: 'ignore' },
  );
  const packages = readdirSync(join(app, 'node_modules')).filter((n) => !n.startsWith('.'));
  console.info(
    `packed ${(statSync(tarball).size / 1024).toFixed(0)} kB; installed ${(du(join(app, 'node_modules')) / 1e6).toFixed(0)} MB in ${packages.length} top-level entries`,
  );
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

  test('plain node imports every entry and runs a durable actor on SQLite', () => {
    writeFileSync(
      join(app, 'app.mjs'),
      `
import { createDurableActor, openStore, verify, getRuntime } from 'agentcharts';
import { charts } from 'agentcharts/machines';
import { chart as task } from 'agentcharts/machines/task-lifecycle';
import * as lifecycle from 'agentcharts/machines/agent-lifecycle';
import { createServer } from 'agentcharts/server';
import { PostgresStore } from 'agentcharts/store/postgres';
const store = openStore('sqlite:./app.db');
const actor = await createDurableActor(task.machine, { id: 't1', store, input: { taskId: 't1' }, schemas: task.events });
await actor.send({ type: 'START' });
await actor.send({ type: 'COMPLETE' });
const report = await verify(store, { charts });
console.log(actor.getSnapshot().value, report.ok, typeof lifecycle.machine, typeof createServer, typeof PostgresStore);
await getRuntime(store).close();
await store.close();
`,
    );
    const run = spawnSync(process.execPath, ['app.mjs'], { cwd: app, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('done true object function function');
  });

  test('the CLI runs from the installed bin, without tsx', () => {
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
    const paths = spawnSync(bin, ['paths', 'task-lifecycle'], { cwd: app, encoding: 'utf8' });
    expect(paths.status).toBe(0);
    expect(paths.stdout).toContain('task-lifecycle');
  });

  test.each(['nodenext', 'bundler'])(
    'a consumer type-checks under %s, strict, skipLibCheck false: 0 errors',
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
import { createDurableActor, openStore, type Store } from 'agentcharts';
import { taskLifecycle } from 'agentcharts/machines';
import { chart } from 'agentcharts/machines/task-lifecycle';
const store: Store = openStore('memory:');
const actor = await createDurableActor(chart.machine, { id: 't', store, input: { taskId: 't' } });
const state: string = String(actor.getSnapshot().value);
export { state, taskLifecycle };
`,
      );
      const tsc = require.resolve('typescript/bin/tsc');
      const result = spawnSync(process.execPath, [tsc, '-p', config], {
        cwd: app,
        encoding: 'utf8',
      });
      expect(result.stdout + result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
    120_000,
  );

  test('one chart bundles for the browser (size reported)', async () => {
    const out = await build({
      stdin: {
        contents: "export { chart } from 'agentcharts/machines/task-lifecycle';",
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
      `task-lifecycle for the browser: ${(bytes.byteLength / 1024).toFixed(0)} kB minified, ${(gzipSync(bytes).byteLength / 1024).toFixed(0)} kB gzip (target 60 kB gzip)`,
    );
    expect(bytes.byteLength).toBeGreaterThan(0);
  });
});
