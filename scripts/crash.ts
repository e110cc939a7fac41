/**
 * `npm run crash -- [--kills N] [--seed S]`: the crash test as a soak. It SIGKILLs a
 * real worker N times (default 1000; CI runs 50 through `npm test`) on one SQLite
 * file and checks after every kill and recovery that no acknowledged transition is
 * lost, no step ran twice, every due timer fired once, recovery acted once per
 * stale actor, and `verify` is clean. It prints the run's figures at the end.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const env: NodeJS.ProcessEnv = {
  ...process.env,
  AGENTCHARTS_CRASH_KILLS: '1000',
  // A check reads the whole database: a soak checks every 50 rounds and at the end.
  AGENTCHARTS_CRASH_CHECK_EVERY: process.env['AGENTCHARTS_CRASH_CHECK_EVERY'] ?? '50',
};
for (let i = 0; i < args.length; i++) {
  const [flag, value] = [args[i], args[i + 1]];
  if ((flag === '--kills' || flag === '--seed') && value !== undefined && /^\d+$/.test(value)) {
    env[flag === '--kills' ? 'AGENTCHARTS_CRASH_KILLS' : 'AGENTCHARTS_CRASH_SEED'] = value;
    i++;
  } else {
    console.error(`unknown option ${flag ?? ''}; usage: crash [--kills N] [--seed S]`);
    process.exit(64);
  }
}
const root = fileURLToPath(new URL('..', import.meta.url));
const child = spawn('npx', ['vitest', 'run', 'test/crash.test.ts', '--reporter=verbose'], {
  cwd: root,
  env,
  stdio: 'inherit',
});
child.once('exit', (code) => process.exit(code ?? 1));
