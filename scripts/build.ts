/**
 * `npm run build`: the package as users install it, into `dist/`.
 *
 * - `tsc -p tsconfig.build.json` emits ESM JavaScript and declarations for
 *   `src/` and `machines/`, rewriting relative `.ts` imports to `.js`;
 * - declaration files keep `.ts` specifiers (tsc does not rewrite those), so
 *   they are rewritten here, or a consumer's `tsc` would look for sources;
 * - the dashboard's static assets are copied next to the server code.
 *
 * tsc rather than tsup/tsdown: the sources are already one file per module with
 * explicit extensions, so a bundler would add a dependency and nothing a user sees.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});

const SPECIFIER = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g;
let rewritten = 0;
const walk = (dir: string): void => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.d.ts')) {
      const text = readFileSync(path, 'utf8');
      const next = text.replace(SPECIFIER, '$1$2.js$3');
      if (next !== text) {
        writeFileSync(path, next);
        rewritten++;
      }
    }
  }
};
walk(dist);

cpSync(join(root, 'src/server/dashboard'), join(dist, 'src/server/dashboard'), {
  recursive: true,
  filter: (source) => !source.endsWith('.ts'),
});
process.stdout.write(`built dist/ (${rewritten} declaration files with rewritten imports)\n`);
