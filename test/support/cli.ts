import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
/** tsx's loader by absolute URL, so the CLI runs from any working directory. */
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI as bin/agentcharts.js runs it in a checkout (`node --conditions=agentcharts-source --import tsx src/cli.ts …`) in `cwd`. */
export async function runCli(args: readonly string[], cwd: string = root): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--conditions=agentcharts-source', '--import', tsx, join(root, 'src', 'cli.ts'), ...args],
      { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
  }
}

/** A clear one-line failure: non-zero exit, the message, and no stack trace. */
export function expectCleanFailure(result: CliResult, message: RegExp): void {
  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  expect(result.stdout).toBe('');
}
