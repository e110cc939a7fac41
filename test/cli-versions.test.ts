/**
 * Versions agree across commands, your own charts read as they mean, and a
 * chart file that cannot be used is one clear error: issue 27's items 6 and 7
 * and its bad input, from the command line.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createDurableActor, getRuntime, openStore } from '../src/index.ts';
import { v1 } from './fixtures/doc-versions.ts';
import { chart as docReview } from '../examples/your-own-chart/doc-review.ts';
import { expectCleanFailure, runCli, type CliResult } from './support/cli.ts';

// Inside the checkout, so that a module resolves xstate and agentcharts as a user's would.
const dir = join(import.meta.dirname, '..', 'test-artifacts', 'cli-versions');
const cli = (...args: string[]): Promise<CliResult> => runCli(args, dir);
const fixtures = join(import.meta.dirname, 'fixtures', 'doc-versions.ts');
const review = join(import.meta.dirname, '..', 'examples', 'your-own-chart', 'doc-review.ts');

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** A store in `name` with what `fill` leaves in it. */
async function database(
  name: string,
  fill: (store: ReturnType<typeof openStore>) => Promise<void>,
) {
  const store = openStore(`sqlite:${join(dir, name)}`);
  await fill(store);
  await getRuntime(store).close();
  await store.close();
}

/** Resolves once the durable actor's state label starts with `prefix`. */
function reaches(
  actor: { state: string; subscribe(fn: () => void): { unsubscribe(): void } },
  prefix: string,
) {
  return new Promise<void>((resolve) => {
    const check = () => {
      if (!actor.state.startsWith(prefix)) return;
      sub.unsubscribe();
      resolve();
    };
    const sub = actor.subscribe(check);
    check();
  });
}

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // Version 1 stored two actors: `doc-b` waits in b, `doc-x` is parked in x.
  await database('versions.db', async (store) => {
    const b = await createDurableActor(v1, { id: 'doc-b', store, schemas: false });
    await b.send({ type: 'NEXT' });
    const x = await createDurableActor(v1, { id: 'doc-x', store, schemas: false });
    await x.send({ type: 'PARK' });
  });
  // Reviews: one waiting for the editorial review, one still being written.
  await database('reviews.db', async (store) => {
    const r = await createDurableActor(docReview, { id: 'rev-1', store });
    await r.send({ type: 'SUBMIT', title: 'Report', author: 'bo' });
    await reaches(r, 'reviewing'); // the word count settles
    await r.send({ type: 'APPROVE', reviewer: 'ana', area: 'legal' });
    await createDurableActor(docReview, { id: 'rev-2', store });
  });
  write('versions.ts', `export { v1, v2 } from '${fixtures}';\n`);
  write('v2-only.ts', `export { v2 } from '${fixtures}';\n`);
  write('v2-breaking.ts', `export { v2Breaking } from '${fixtures}';\n`);
  write('reviews.ts', `export { chart } from '${review}';\n`);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('every command picks the highest version unless told', () => {
  test('diagram and paths draw version 2 of [v1, v2], version 1 with --version 1, and refuse a version not registered', async () => {
    const module = join(dir, 'versions.ts');
    const latest = await cli('diagram', module);
    expect(latest.stderr).toBe('');
    expect(latest.stdout).toContain('a --> c : NEXT');
    const first = await cli('diagram', module, '--version', '1');
    expect(first.stdout).toContain('a --> b : NEXT');
    const paths = await cli('paths', module, '--json');
    expect(JSON.parse(paths.stdout).paths.map((p: { state: string }) => p.state)).toContain('c');
    expectCleanFailure(
      await cli('diagram', module, '--version', '3'),
      /ChartVersionError: Chart "doc" has no version 3; registered: 1, 2/,
    );
    expectCleanFailure(
      await cli('paths', module, '--version', 'two'),
      /--version: expected a positive integer/,
    );
  });

  test("the config's [v1, v2]: diagram by machine id draws version 2", async () => {
    const configDir = join(dir, 'with-config');
    mkdirSync(configDir, { recursive: true });
    writeFileSync(
      join(configDir, 'agentcharts.config.ts'),
      `import { v1, v2 } from '${fixtures}';\nexport default { charts: [v1, v2] };\n`,
    );
    const drawn = await runCli(['diagram', 'doc'], configDir);
    expect(drawn.stderr).toBe('');
    expect(drawn.stdout).toContain('a --> c : NEXT');
    expect((await runCli(['diagram', 'doc', '--version', '1'], configDir)).stdout).toContain(
      'a --> b : NEXT',
    );
  });
});

describe('verify and check-deploy across versions', () => {
  test('verify with only version 2: actors stored at version 1 are not verifiable, exit 0; --strict exits 1', async () => {
    const checked = await cli('verify', '--db', 'versions.db', '--charts', join(dir, 'v2-only.ts'));
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toContain('not verifiable: doc-b (doc): chart version 1 not registered');
    expect(checked.stdout).toContain('not verifiable: doc-x (doc): chart version 1 not registered');
    expect(checked.code).toBe(0);
    const strict = await cli(
      'verify',
      '--db',
      'versions.db',
      '--charts',
      join(dir, 'v2-only.ts'),
      '--strict',
    );
    expect(strict.code).toBe(1);
    const both = await cli('verify', '--db', 'versions.db', '--charts', join(dir, 'versions.ts'));
    expect(both.stdout).not.toContain('not verifiable');
    expect(both.code).toBe(0);
  });

  test('check-deploy names the state the new version lacks and the actors it strands', async () => {
    const result = await cli(
      'check-deploy',
      '--db',
      'versions.db',
      '--charts',
      join(dir, 'v2-breaking.ts'),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('state "x" is not in doc v2: 1 actor(s) stranded (doc-x)');
  });
});

describe('your own chart, read as it means', () => {
  test('a parallel state keeps its regions and its class; status --state finds actors in it', async () => {
    const status = await cli(
      'status',
      '--db',
      'reviews.db',
      '--charts',
      join(dir, 'reviews.ts'),
      '--json',
    );
    expect(status.stderr).toBe('');
    const groups = JSON.parse(status.stdout).statistics.groups as Array<Record<string, unknown>>;
    expect(groups).toContainEqual(
      expect.objectContaining({
        state: 'reviewing(legal: ok, editorial: pending)',
        state_path: 'reviewing.legal.ok,reviewing.editorial.pending',
        class: 'paused',
      }),
    );
    expect(groups).toContainEqual(expect.objectContaining({ state: 'writing', class: 'idle' }));
    const listed = await cli(
      'status',
      '--db',
      'reviews.db',
      '--charts',
      join(dir, 'reviews.ts'),
      '--state',
      'reviewing',
    );
    expect(listed.stdout).toMatch(
      /rev-1\s+doc-review\s+reviewing\(legal: ok, editorial: pending\)/,
    );
  });

  test("an unknown --state is an error listing the chart's states", async () => {
    expectCleanFailure(
      await cli(
        'status',
        '--db',
        'reviews.db',
        '--charts',
        join(dir, 'reviews.ts'),
        '--machine',
        'doc-review',
        '--state',
        'nonsense',
      ),
      /--state: no chart has a state "nonsense"; states: doc-review: drafting, writing, checking, reviewing, legal, pending, ok, editorial, published, expired, withdrawn/,
    );
  });
});

describe('a chart file that cannot be used: one clear error naming the file and the chart', () => {
  test('a module that exports nothing usable', async () => {
    write('nothing.ts', 'export const answer = 42;\n');
    expectCleanFailure(
      await cli('status', '--db', 'reviews.db', '--charts', 'nothing.ts'),
      /NoMachineError: Module "nothing.ts" exports no chart and no machine/,
    );
  });

  test('a module that exports two charts with one id and version', async () => {
    write(
      'twice.ts',
      `import { defineChart } from '../../src/index.ts';
import { v1 } from '${fixtures}';
export const one = v1;
export const other = defineChart(v1.machine.provide({}));
`,
    );
    expectCleanFailure(
      await cli('verify', '--db', 'versions.db', '--charts', 'twice.ts'),
      /ChartConflictError: twice.ts: two different charts of machine "doc" at version 1/,
    );
  });

  test('a chart older than what the store holds: recover refuses before writing anything', async () => {
    // Version 2 stored `doc-2`; the file below has version 1 only.
    await database('ahead.db', async (store) => {
      const { v2 } = await import('./fixtures/doc-versions.ts');
      await createDurableActor(v2, { id: 'doc-2', store, schemas: false });
    });
    write('v1-only.ts', `export { v1 } from '${fixtures}';\n`);
    const before = await cli('history', 'doc-2', '--db', 'ahead.db', '--json');
    const refused =
      /ChartBehindStoreError: v1-only.ts: chart "doc" is at version 1, but the store holds actor "doc-2" at version 2/;
    expectCleanFailure(await cli('recover', '--db', 'ahead.db', '--charts', 'v1-only.ts'), refused);
    expectCleanFailure(
      await cli(
        'serve',
        '--db',
        'ahead.db',
        '--charts',
        'v1-only.ts',
        '--port',
        '0',
        '--token',
        't'.repeat(32),
      ),
      refused,
    );
    expect((await cli('history', 'doc-2', '--db', 'ahead.db', '--json')).stdout).toBe(
      before.stdout,
    );
  });
});
