import { createWebSocketInspector } from '@statelyai/inspect';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { createActor, createMachine } from 'xstate';
import { expectCleanFailure, runCli } from './support/cli.ts';

const root = join(import.meta.dirname, '..');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const dir = mkdtempSync(join(tmpdir(), 'agentcharts-cli-inspect-'));
const running: ChildProcessWithoutNullStreams[] = [];

afterAll(() => {
  for (const child of running) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** Starts `agentcharts inspect …` and resolves with its output once it is ready. */
function startInspect(
  args: string[],
): Promise<{ child: ChildProcessWithoutNullStreams; out: string }> {
  const child = spawn(
    process.execPath,
    ['--import', tsx, join(root, 'src', 'cli.ts'), 'inspect', ...args],
    {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1' },
    },
  );
  running.push(child);
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ctrl-C to stop')) resolve({ child, out });
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`inspect exited ${code}: ${err}`)));
  });
}

const light = createMachine({
  id: 'light',
  initial: 'green',
  states: { green: { on: { NEXT: 'yellow' } }, yellow: { on: { NEXT: 'red' } }, red: {} },
});

describe('agentcharts inspect', () => {
  test('opens the local inspector by default, says so, and an XState app appears in it', async () => {
    const port = await freePort();
    const { child, out } = await startInspect(['--no-open', '--port', String(port)]);
    expect(out).toContain(
      `local inspector at http://127.0.0.1:${port}/inspector (no network needed)`,
    );
    const socket = `ws://127.0.0.1:${port}/inspect`;
    expect(out).toContain(`createWebSocketInspector({ url: '${socket}' })`);
    const token = /\?token=([\w-]+)/.exec(out)?.[1] ?? '';
    const inspector = createWebSocketInspector({ url: socket });
    const actor = createActor(light, { inspect: inspector.inspect }).start();
    actor.send({ type: 'NEXT' });
    await expect
      .poll(async () => {
        const response = await fetch(`http://127.0.0.1:${port}/api/inspections`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await response.json()) as { actors: Array<{ name: string; value: unknown }> };
        return body.actors.find((a) => a.name === 'light')?.value;
      })
      .toBe('yellow');
    inspector.stop();

    // A second inspector on the same port: one line, exit 1.
    const taken = await runCli(['inspect', '--no-open', '--port', String(port)], dir);
    expectCleanFailure(
      taken,
      new RegExp(`^agentcharts: ListenError: port ${port} on 127\\.0\\.0\\.1 is taken`),
    );

    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });

  test('takes a module exporting a chart as its machine, as other commands do (control: an unknown name is refused)', async () => {
    // Inside the repository, where the module finds xstate.
    const modDir = join(root, 'test-artifacts', 'cli-inspect');
    mkdirSync(modDir, { recursive: true });
    writeFileSync(
      join(modDir, 'light-chart.ts'),
      `import { createMachine } from 'xstate';
export const light = createMachine({ id: 'light', initial: 'green', states: { green: {} } });
`,
    );
    // Taken as a chart: the command goes on to open its store, which does not exist.
    expectCleanFailure(
      await runCli(['inspect', '--no-open', './light-chart.ts', '--db', 'none.db'], modDir),
      /no database at .*none\.db/,
    );
    expectCleanFailure(
      await runCli(['inspect', '--no-open', 'no-such-chart', '--db', 'none.db'], modDir),
      /unknown machine "no-such-chart"; known: agent-lifecycle, /,
    );
  });

  test('an unreachable inspector UI is one clear line and exit 1', async () => {
    const closed = await freePort();
    const result = await runCli(
      ['inspect', '--no-open', '--ui', `http://127.0.0.1:${closed}/inspect`],
      dir,
    );
    expectCleanFailure(
      result,
      new RegExp(
        `^agentcharts: CliOptionError: Option --ui: the inspector UI at http://127\\.0\\.0\\.1:${closed}/inspect is unreachable \\(ECONNREFUSED\\); the local inspector needs no network: drop --ui\\n$`,
      ),
    );
  });

  test('with --ui stately a taken port is one clear line too', async () => {
    // An HTTP server holds the port and answers the UI check, so only the port is wrong.
    const blocker = createHttpServer((_req, res) => res.end('ui'));
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, () => {
        const address = blocker.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      }),
    );
    // A reachable "UI": any HTTP server answers the check.
    const result = await runCli(
      ['inspect', '--no-open', '--port', String(port), '--ui', `http://127.0.0.1:${port}/`],
      dir,
    );
    blocker.close();
    expectCleanFailure(
      result,
      new RegExp(
        `^agentcharts: CliOptionError: Option --port: port ${port} is taken \\(another server listens there\\); choose another with --port\\n$`,
      ),
    );
  });
});
