/**
 * `npm run crash -- [--kills N] [--generated N] [--seed S]`: the crash tests as a
 * soak (`npm test` runs 50 and 24 kills on SQLite, 20 and 12 on PostgreSQL).
 *
 * - test/crash.test.ts SIGKILLs a real worker driving the six charts on one
 *   SQLite file, then on one PostgreSQL schema, and checks after every kill and
 *   recovery that no acknowledged transition is lost, no step ran twice, every
 *   due timer fired once, recovery acted once per stale actor, and `verify` is clean.
 * - test/crash-generated.test.ts kills workers running generated machines and
 *   scripts and checks that each durable run still equals the plain XState run
 *   of the same inputs after every step, holds every send once, leaves nothing
 *   pending, and verifies clean; on SQLite, then on a throwaway PostgreSQL server.
 *
 * `--kills N` sets every part's kills, on each store (default 1000); `--generated N`
 * the generated parts' kills, and alone runs only those. Each part prints its figures at the end.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const USAGE = 'usage: crash [--kills N] [--generated N] [--seed S]';
const options = new Map<string, string>();
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) {
  const [flag, value] = [args[i], args[i + 1]];
  if (
    (flag === '--kills' || flag === '--generated' || flag === '--seed') &&
    value !== undefined &&
    /^\d+$/.test(value)
  ) {
    options.set(flag, value);
  } else {
    console.error(`unknown option ${flag ?? ''}; ${USAGE}`);
    process.exit(64);
  }
}
const kills = options.get('--kills') ?? '1000';
const seed = options.get('--seed');
const onlyGenerated = options.has('--generated') && !options.has('--kills');
const env: NodeJS.ProcessEnv = {
  ...process.env,
  AGENTCHARTS_CRASH_KILLS: kills,
  AGENTCHARTS_CRASH_PG_KILLS: kills,
  AGENTCHARTS_CRASH_GEN_KILLS: options.get('--generated') ?? kills,
  // The generated machines run on PostgreSQL too, as many kills.
  AGENTCHARTS_CRASH_GEN_PG_KILLS: options.get('--generated') ?? kills,
  // A check reads the whole database: a soak checks every 50 rounds and at the end.
  AGENTCHARTS_CRASH_CHECK_EVERY: process.env['AGENTCHARTS_CRASH_CHECK_EVERY'] ?? '50',
  ...(seed === undefined ? {} : { AGENTCHARTS_CRASH_SEED: seed, AGENTCHARTS_CRASH_GEN_SEED: seed }),
};
const files = onlyGenerated
  ? ['test/crash-generated.test.ts']
  : ['test/crash.test.ts', 'test/crash-generated.test.ts'];
const root = fileURLToPath(new URL('..', import.meta.url));
// One part after the other: each keeps the machine busy on its own.
const child = spawn(
  'npx',
  ['vitest', 'run', ...files, '--no-file-parallelism', '--reporter=verbose'],
  { cwd: root, env, stdio: 'inherit' },
);
child.once('exit', (code) => process.exit(code ?? 1));
