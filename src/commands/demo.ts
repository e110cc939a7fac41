import type { Command } from 'commander';
import { DEFAULT_SQLITE_FILE } from '../store/open.ts';
import { runDemo } from '../demo/story.ts';

/** `agentcharts demo` (what `npm start` runs): the refund story of “Agent State Machine Design” with real processes. */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'Tell the refund story of “Agent State Machine Design” with real processes: approval, a retried 503, a worker killed mid-refund, recovery, one refund',
    )
    .option('--db <file>', 'the SQLite file to use (created when missing)', DEFAULT_SQLITE_FILE)
    .option('--no-kill', 'tell the story without killing the worker')
    .action(async (opts: { db: string; kill: boolean }): Promise<void> => {
      const outcome = await runDemo({ db: opts.db, kill: opts.kill });
      if (!outcome.ok) process.exitCode = 1;
    });
}
