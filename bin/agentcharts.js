#!/usr/bin/env node
// The installed package (which ships dist/, not src/) runs its built CLI as plain
// JavaScript. A checkout runs the TypeScript sources through tsx, even when a
// dist/ from `npm pack` is lying around, so it never runs stale output.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'src', 'cli.js');
const sources = join(root, 'src', 'cli.ts');
if (!existsSync(sources) && existsSync(built)) {
  await import(pathToFileURL(built).href);
} else {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  // The checkout's `agentcharts` is its sources too: a chart that imports it shares the CLI's modules.
  const args = ['--conditions=agentcharts-source', '--import', tsx, sources];
  const result = spawnSync(process.execPath, [...args, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}
