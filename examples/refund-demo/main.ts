/**
 * The refund demo (what `npm start` runs): the refund story of “Agent State
 * Machine Design” told by real processes, on the embedded SQLite default.
 *
 *   npx tsx --conditions=agentcharts-source examples/refund-demo/main.ts [--db <file>] [--no-kill]
 *
 * `--conditions=agentcharts-source` makes `agentcharts` resolve to this
 * checkout's TypeScript sources (no build needed); the worker processes the demo
 * forks inherit it. In an app that installed agentcharts, drop it.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_SQLITE_FILE } from 'agentcharts';
import { runDemo } from './story.ts';

const USAGE = `usage: main.ts [--db <file>] [--no-kill]

  --db <file>  the SQLite file to use (created when missing; default ${DEFAULT_SQLITE_FILE})
  --no-kill    tell the story without killing the worker`;

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: DEFAULT_SQLITE_FILE },
    'no-kill': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});

if (values.help) {
  console.log(USAGE);
} else {
  const outcome = await runDemo({ db: values.db, kill: !values['no-kill'] });
  if (!outcome.ok) process.exitCode = 1;
}
