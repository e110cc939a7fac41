import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Runs vitest, in a process of its own, on one test file `source` written to
 * `<dir>/<name>.check.ts` (a vitest config beside it includes `*.check.ts`): how a
 * suite checks what generated tests do when they fail, which it cannot do inside
 * itself.
 */
export function runVitestFixture(
  dir: string,
  name: string,
  source: string,
): { status: number | null; output: string } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'vitest.config.ts'),
    "import { defineConfig } from 'vitest/config';\nexport default defineConfig({ test: { include: ['*.check.ts'] } });\n",
  );
  writeFileSync(join(dir, `${name}.check.ts`), source);
  const result = spawnSync(
    process.execPath,
    [join(process.cwd(), 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--root', dir],
    { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  );
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
