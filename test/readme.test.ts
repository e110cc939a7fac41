import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const readme = readFileSync(join(root, 'README.md'), 'utf8');
// Self-contained programs (they start with an import) are run; shorter fragments
// that continue one of them are not. The guides' programs too.
const programs = (text: string) =>
  [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? '')
    .filter((code) => code.startsWith('import '));
const guide = readFileSync(join(root, 'docs', 'your-own-chart.md'), 'utf8');
const agents = readFileSync(join(root, 'docs', 'agents.md'), 'utf8');
const versions = readFileSync(join(root, 'docs', 'versions.md'), 'utf8');
const blocks = [
  ...programs(readme),
  ...programs(guide),
  ...programs(agents),
  ...programs(versions),
];
/** Blocks that show a file of the checkout (```ts file=<path>): shown as it is. */
const shownFiles = (text: string) =>
  [...text.matchAll(/```ts file=(\S+)\n([\s\S]*?)```/g)].map(
    (m) => [m[1] ?? '', m[2] ?? ''] as const,
  );
/** Files the guide's programs import beside them (`./doc-review.ts`). */
const besideBlocks = (dir: string) => {
  for (const [path] of shownFiles(guide)) {
    writeFileSync(join(dir, path.split('/').at(-1) ?? path), readFileSync(join(root, path)));
  }
};

describe('the README', () => {
  test('shows the two-command Quick start', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toMatch(/^npm test\b/m);
  });

  test('has TypeScript examples to run', () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  test('a file the guide shows is shown as it is in the checkout', () => {
    expect(shownFiles(guide).length).toBeGreaterThan(0);
    for (const [path, text] of shownFiles(guide)) {
      expect(text, path).toBe(readFileSync(join(root, path), 'utf8'));
    }
  });

  test.each(blocks.map((code, i) => [i + 1, code] as const))(
    'ts block %i runs as shown, twice, and prints what its comments say',
    (i, code) => {
      // Inside the package, so `agentcharts` resolves by self-reference as for a user.
      const dir = join(root, 'test-artifacts', 'readme');
      mkdirSync(dir, { recursive: true });
      besideBlocks(dir);
      const file = join(dir, `block-${i}.ts`);
      writeFileSync(file, code);
      const cwd = mkdtempSync(join(tmpdir(), 'agentcharts-readme-'));
      try {
        // Twice in the same directory: a snippet a reader runs again must still work
        // (its database and ids are there from the first run).
        for (const round of [1, 2]) {
          // The `agentcharts-source` condition (not `source`, which some dependencies also use): the package's TypeScript, as in this checkout (no build).
          const run = spawnSync(
            process.execPath,
            ['--conditions=agentcharts-source', '--import', tsx, file],
            {
              cwd,
              encoding: 'utf8',
              timeout: 60_000,
            },
          );
          expect(run.stderr, `run ${round}`).toBe('');
          expect(run.status, `run ${round}`).toBe(0);
          // Every `// a b c` comment on a console.log line is the output that line prints.
          for (const line of code.split('\n')) {
            const m = /console\.log\(.*\);\s*\/\/ (.+)$/.exec(line);
            if (m?.[1]) expect(run.stdout, `run ${round}`).toContain(m[1].split('…')[0]?.trim());
          }
        }
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    },
  );

  test("its programs and the guide's type-check (strict, as a user compiles them)", () => {
    const dir = join(root, 'test-artifacts', 'readme');
    // Only this run's blocks: a block removed from the docs must not linger here.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    blocks.forEach((code, i) => writeFileSync(join(dir, `block-${i + 1}.ts`), code));
    besideBlocks(dir);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', include: ['block-*.ts'] }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const run = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], {
      encoding: 'utf8',
    });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  }, 120_000);
});
