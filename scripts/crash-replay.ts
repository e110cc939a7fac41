/**
 * `npm run crash:replay -- <file> [--runs N]`: one case of the generated crash
 * test (test/crash-generated.test.ts) run again, on SQLite, with the kill plan its
 * failure printed. `<file>` is JSON `{ "case": …, "kills": […] }`, the two values a
 * failure prints after `case` and `kills`. A kill at a boundary (`die`) lands at
 * the same point every run; a timed one (`at`, `delayMs`) lands where the clock
 * says, so a failure may show in only some runs: each run's first problem is
 * printed, then how many of the runs failed (exit code 1 when any did).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { caseFiles, type CrashCase } from '../test/fixtures/crash-gen-case.ts';
import { checkCase } from '../test/fixtures/crash-gen-checks.ts';
import {
  replayKills,
  runCase,
  WorkerPool,
  type KillPlan,
} from '../test/fixtures/crash-gen-runner.ts';

const USAGE = 'usage: crash:replay <file> [--runs N]';
const args = process.argv.slice(2);
const file = args[0];
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 10;
if (file === undefined || file.startsWith('--') || !Number.isInteger(runs) || runs < 1) {
  console.error(USAGE);
  process.exit(64);
}
const { case: crashCase, kills } = JSON.parse(readFileSync(file, 'utf8')) as {
  case: CrashCase;
  kills: KillPlan[];
};
const dir = mkdtempSync(join(tmpdir(), 'agentcharts-crash-replay-'));
const pool = new WorkerPool();
let failed = 0;
try {
  for (let run = 0; run < runs; run++) {
    const files = caseFiles(join(dir, `run-${run}`));
    mkdirSync(files.dir);
    writeFileSync(files.spec, JSON.stringify(crashCase));
    const result = await runCase(pool, files, crashCase.script, replayKills(kills));
    const problems = result.skipped ? ['skipped: the case is too big'] : checkCase(files).problems;
    if (problems.length === 0) continue;
    failed++;
    console.log(`run ${run}: ${problems[0] ?? ''} (kept in ${files.dir})`);
  }
} finally {
  await pool.close();
}
console.log(`crash:replay: ${failed} of ${runs} runs failed (kill plan ${JSON.stringify(kills)})`);
if (failed === 0) rmSync(dir, { recursive: true, force: true });
process.exitCode = failed > 0 ? 1 : 0;
