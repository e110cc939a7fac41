#!/usr/bin/env node
// Runs the TypeScript CLI through tsx so the package needs no build step. tsx is
// resolved from this package, so the bin works from any working directory.
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const result = spawnSync(
  process.execPath,
  ['--import', tsx, join(root, 'src', 'cli.ts'), ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
