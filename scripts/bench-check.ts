/**
 * `tsx scripts/bench-check.ts [--runs N] [--json]`: `agentcharts check` on the six
 * built-in charts (and team-workflow's task chart), run as a user runs it — a new
 * process each time, nothing warm. Reports the states and transitions explored,
 * the check's own time (exploration and every property, as the command measures
 * it), and the whole command's wall time (Node, tsx and module loading included);
 * medians over the runs. Target: the check of all six under 2 s.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt === -1 ? 5 : Number(args[runsAt + 1]);
if (
  !Number.isInteger(runs) ||
  runs < 1 ||
  args.some((a, i) => !['--runs', '--json'].includes(a) && i !== runsAt + 1)
) {
  console.error('usage: bench-check [--runs N] [--json]');
  process.exit(64);
}
const json = args.includes('--json');
const root = join(import.meta.dirname, '..');
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const TARGET_MS = 2_000;

interface Totals {
  charts: number;
  properties: number;
  proven: number;
  states: number;
  transitions: number;
  wallMs: number;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

const checkMs: number[] = [];
const commandMs: number[] = [];
let totals: Totals | undefined;
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  const { stdout } = await run(
    process.execPath,
    ['--import', tsx, join(root, 'src', 'cli.ts'), 'check', '--json'],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  commandMs.push(performance.now() - started);
  totals = (JSON.parse(stdout) as { totals: Totals }).totals;
  checkMs.push(totals.wallMs);
}
const result = {
  charts: totals?.charts,
  properties: totals?.properties,
  proven: totals?.proven,
  states: totals?.states,
  transitions: totals?.transitions,
  checkMsMedian: Math.round(median(checkMs)),
  commandMsMedian: Math.round(median(commandMs)),
  runs,
  targetMs: TARGET_MS,
  pass: median(checkMs) < TARGET_MS,
};
if (json) console.log(JSON.stringify(result, null, 2));
else {
  console.log(
    `agentcharts check, all charts (${result.charts} with team-workflow's task chart): ` +
      `${result.properties} properties, ${result.proven} proven; ${result.states} states, ${result.transitions} transitions`,
  );
  console.log(
    `  check (exploration + properties): ${result.checkMsMedian} ms median of ${runs}  target < ${TARGET_MS} ms  ${result.pass ? 'PASS' : 'MISS'}`,
  );
  console.log(
    `  whole command (node + tsx + modules + check): ${result.commandMsMedian} ms median`,
  );
}
