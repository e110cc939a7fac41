#!/usr/bin/env node
// The installed package runs its built CLI (dist/, plain JavaScript). A checkout
// without a build runs the TypeScript sources through tsx instead.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'cli.js');
if (existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const result = spawnSync(
    process.execPath,
    ['--import', tsx, join(root, 'src', 'cli.ts'), ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  process.exit(result.status ?? 1);
}
