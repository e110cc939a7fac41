import type { Command } from 'commander';
import { knowingCharts } from './charts-option.ts';
import { parseDuration } from '../observe/alerts.ts';
import { progressLine } from '../observe/progress.ts';
import { NdjsonWriter, feedRowTransition, toStreamMessages } from '../observe/stream.ts';
import type { Store } from '../store/types.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

/**
 * A point in time from the command line: ISO 8601, epoch ms (digits only), or a
 * duration before `now` (`90s`, `10m`, `2h`, `1d`).
 */
export function parseWhen(text: string, now: number, option: string): number {
  if (/^\d{10,}$/.test(text)) return Number(text);
  const ago = parseDuration(text);
  if (Number.isFinite(ago) && /[a-z]$/.test(text)) return now - ago;
  const at = Date.parse(text);
  if (Number.isFinite(at) && /^\d{4}-\d{2}-\d{2}/.test(text)) return at;
  throw new CliOptionError(
    option,
    'expected an ISO 8601 time, epoch milliseconds or a duration ago such as 10m',
  );
}

export interface FollowOptions {
  since: number;
  machineId?: string | undefined;
  /**
   * Rows are re-read this far back (ms) on every poll and de-duplicated: a writer
   * may commit a row stamped slightly before one already read (clock skew between
   * processes, a slow commit).
   */
  lookbackMs?: number | undefined;
  pageSize?: number | undefined;
}

/**
 * The transition feed of a store, read in pages: each call to `poll()` returns
 * the rows committed since the previous call, each exactly once.
 */
export class TransitionFollower {
  private readonly store: Store;
  private readonly since: number;
  private readonly machineId: string | undefined;
  private readonly lookbackMs: number;
  private readonly pageSize: number;
  private cursor: number;
  private readonly seen = new Map<string, number>();

  constructor(store: Store, options: FollowOptions) {
    this.store = store;
    this.since = options.since;
    this.machineId = options.machineId;
    this.lookbackMs = options.lookbackMs ?? 5000;
    this.pageSize = options.pageSize ?? 1000;
    this.cursor = options.since;
  }

  async poll(
    onRows: (rows: Awaited<ReturnType<Store['transitionsSince']>>) => void,
  ): Promise<number> {
    let pageSize = this.pageSize;
    let total = 0;
    for (;;) {
      const from = Math.max(this.since, this.cursor - this.lookbackMs);
      const rows = await this.store.transitionsSince({
        since: from,
        machineId: this.machineId,
        limit: pageSize,
      });
      const fresh = rows.filter((row) => !this.seen.has(`${row.actorId}\u0000${row.seq}`));
      for (const row of fresh) {
        this.seen.set(`${row.actorId}\u0000${row.seq}`, row.at);
        if (row.at > this.cursor) this.cursor = row.at;
      }
      if (fresh.length > 0) onRows(fresh);
      total += fresh.length;
      const horizon = this.cursor - this.lookbackMs;
      for (const [key, at] of this.seen) if (at < horizon) this.seen.delete(key);
      if (rows.length < pageSize) return total;
      // A full page of rows already seen: more rows share the window than a page holds.
      if (fresh.length === 0) pageSize *= 2;
    }
  }
}

interface TailOptions extends StoreOptions {
  follow?: boolean;
  since: string;
  machine?: string;
  interval: string;
  heartbeat?: string;
}

function positiveMs(text: string, option: string): number {
  const ms = parseDuration(text);
  if (!Number.isFinite(ms) || ms < 1) {
    throw new CliOptionError(option, 'expected a duration such as 500ms, 2s or 1m');
  }
  return ms;
}

/** `agentcharts tail`: “Agent Status Models” stream messages of the store's transitions, as NDJSON. */
export function registerTail(program: Command): void {
  knowingCharts(storeCommand(program, 'tail'))
    .description(
      'Print the stream messages of “Agent Status Models” (NDJSON) for the transitions committed to the store; --follow keeps polling',
    )
    .option('-f, --follow', 'keep polling for new transitions until interrupted')
    .option('--since <time>', 'start at an ISO time, epoch ms or a duration ago', '10m')
    .option('--machine <id>', 'only actors of this machine id')
    .option('--interval <duration>', 'poll interval with --follow', '500ms')
    .option('--heartbeat <duration>', 'heartbeat for agents quiet this long (with --follow)')
    .action(async (opts: TailOptions): Promise<void> => {
      const since = parseWhen(opts.since, Date.now(), '--since');
      const interval = positiveMs(opts.interval, '--interval');
      const heartbeatMs =
        opts.heartbeat !== undefined ? positiveMs(opts.heartbeat, '--heartbeat') : undefined;
      const { store } = openExistingStore(opts);
      const progress = progressLine();
      const writer = new NdjsonWriter(process.stdout, { heartbeatMs });
      let stopped = false;
      let wake: (() => void) | undefined;
      const stop = () => {
        stopped = true;
        wake?.();
      };
      // A reader that went away (`| head`) ends the tail quietly.
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') stop();
      });
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        const follower = new TransitionFollower(store, { since, machineId: opts.machine });
        let read = 0;
        const print = (rows: Parameters<Parameters<TransitionFollower['poll']>[0]>[0]) => {
          for (const row of rows) {
            for (const message of toStreamMessages(feedRowTransition(row))) writer.write(message);
          }
          read += rows.length;
          progress.update(`${read} transition(s) read`);
        };
        await follower.poll(print);
        progress.done();
        while (opts.follow && !stopped) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, interval);
          });
          wake = undefined;
          if (!stopped) await follower.poll(print);
        }
      } finally {
        progress.done();
        writer.close();
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        await store.close();
      }
    });
}
