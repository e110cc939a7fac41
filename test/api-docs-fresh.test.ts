/**
 * The API reference in docs/api is TypeDoc's output for the package's entries,
 * and doubles as the API snapshot: an export added, removed or retyped in any
 * entry changes it, and this test fails until `npm run docs:api` is run and the
 * change committed on purpose.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const out = mkdtempSync(join(tmpdir(), 'agentcharts-api-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function files(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else found.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  };
  walk(dir);
  return found;
}

test('docs/api is what TypeDoc makes of the entries today (run `npm run docs:api`)', () => {
  // The bin by path: the package's exports do not list it.
  const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
  execFileSync(process.execPath, [typedoc, '--out', out, '--logLevel', 'Warn'], {
    cwd: root,
    stdio: 'pipe',
  });
  const fresh = files(out);
  const committed = files(join(root, 'docs', 'api'));
  expect([...committed.keys()].sort()).toEqual([...fresh.keys()].sort());
  for (const [path, text] of fresh) {
    expect(committed.get(path), `docs/api/${path} is stale: run npm run docs:api`).toBe(text);
  }
}, 120_000);
