/**
 * `tsx scripts/bench-postgres.ts [--quick] [--json]`: the PostgreSQL store's figures,
 * on a throwaway server started for the run (Debian's binaries, fsync on) or on
 * the server `AGENTCHARTS_BENCH_POSTGRES_URL` names (each run in fresh schemas).
 *
 * - durable sends vs raw `pg` writing the same rows, with 1 and 4 worker
 *   processes — target ratio ≥ 0.8. Each worker drives its own task-lifecycle
 *   actor through running ⇄ paused (every pause sets two durable timers, every
 *   grant cancels them), one awaited send after another: one commit per
 *   transition. It records the writes it commits; the raw phase then writes those
 *   very rows (JSON and hashes precomputed) with the store's own statement
 *   through a plain `pg` client, one commit each, into another schema. Durable and raw
 *   phases alternate block by block, all workers in step, so both see the same
 *   server and disk conditions; figures are medians over blocks.
 * - 32 tasks in flight in one process (32 actors sent their cycles at once, the
 *   runtime's group commit batching them) vs raw `pg` writing each task's rows on
 *   a connection of its own, 32 at once, one commit per row — target ≥ 0.7;
 * - contention: 4 worker processes send to 4 shared actors as fast as they can,
 *   retrying on ConcurrencyError; transitions/s and conflicts counted (no target);
 * - a parent → 100 child machines → all done, per child (no target).
 *
 * The lead wires it into `npm run bench`; `benchPostgres()` returns its rows.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { catalog } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { type DurableActor } from '../src/durable/actor.ts';
import { getRuntime } from '../src/durable/open.ts';
import { openStore } from '../src/store/open.ts';
import { benchChildren } from './bench/actors.ts';
import { ConcurrencyError, InvalidTransitionError } from '../src/core/errors.ts';
import { writeStatement } from '../src/store/postgres/statements.ts';
import type { ActorWrite, Store } from '../src/store/types.ts';
import {
  fmt,
  haltPollNote,
  judge,
  now,
  pairedFigures,
  recordingStore,
  type BenchRow,
  type PairedBlock,
} from './bench/common.ts';
import { benchPostgresMinimal } from './bench/postgres-minimal.ts';

const SELF = fileURLToPath(import.meta.url);
const chart = catalog['task-lifecycle'];
type TaskActor = DurableActor<typeof chart.machine>;
const PAUSE = chart.eventSamples.PAUSE_FOR_APPROVAL?.[0] as EventObject;
const GRANT = chart.eventSamples.APPROVAL_GRANTED?.[0] as EventObject;

// ---------------------------------------------------------------- raw pg

/**
 * The rows of a recorded batch written with plain `pg`: the store's own statement
 * per write (`writeStatement`), a lone write in autocommit as the store does it,
 * several in one BEGIN/COMMIT; no runtime, pool, savepoints or error mapping.
 */
async function rawCommit(client: pg.Client, batch: readonly ActorWrite[]): Promise<void> {
  const several = batch.length > 1;
  if (several) await client.query('BEGIN');
  for (const write of batch) {
    const statement = writeStatement(write);
    if (statement === undefined)
      throw new Error(`raw baseline: ${write.actorId} cannot be written`);
    if ((await client.query(statement)).rowCount !== 1) {
      throw new Error(`raw baseline: version conflict on ${write.actorId}`);
    }
  }
  if (several) await client.query('COMMIT');
}

function withSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

// ---------------------------------------------------------------- worker processes

interface PairedChildArgs {
  mode: 'paired';
  durableUrl: string;
  /** The server URL without a schema: the raw client sets its search_path itself. */
  serverUrl: string;
  rawSchema: string;
  actorId: string;
  /**
   * Tasks in flight in this process (default 1): as many actors, each sent its
   * cycle one awaited send after another, all at once (the runtime's group commit
   * batches what arrives together); the raw phase then writes each actor's rows
   * on a connection of its own, one commit per row, all lanes at once.
   */
  lanes?: number;
}

interface ContendChildArgs {
  mode: 'contend';
  url: string;
  actorIds: string[];
  durationMs: number;
}

function reply(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** The next legal event of the running ⇄ paused cycle, from the actor's snapshot. */
function nextEvent(actor: TaskActor): EventObject {
  return (actor.getSnapshot() as AnyMachineSnapshot).can(PAUSE) ? PAUSE : GRANT;
}

async function newTask(store: Store, id: string): Promise<TaskActor> {
  const actor = await createDurableActor(chart.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: chart.events,
  });
  // Workers sharing actors race to start them: the loser reloads and finds it started.
  while (actor.state === 'planned') {
    try {
      await actor.send({ type: 'START' });
    } catch (error) {
      if (error instanceof ConcurrencyError) await actor.reload();
      else throw error;
    }
  }
  return actor;
}

/** Runs durable and raw blocks on command (`durable <n>`, `raw`, `exit`), in step with its siblings. */
async function pairedChild(args: PairedChildArgs): Promise<void> {
  const batches: ActorWrite[][] = [];
  const store = recordingStore(openStore(args.durableUrl), batches);
  // Statements the store ran again after a deadlock or serialization failure.
  let retried = 0;
  store.onRetry?.(() => retried++);
  const raw = new pg.Client({
    connectionString: args.serverUrl,
    options: `-c search_path=${args.rawSchema}`,
  });
  await raw.connect();
  const lanes = args.lanes ?? 1;
  // One raw connection per lane beyond the first.
  const rawLanes = [raw];
  for (let l = 1; l < lanes; l++) {
    const client = new pg.Client({
      connectionString: args.serverUrl,
      options: `-c search_path=${args.rawSchema}`,
    });
    await client.connect();
    rawLanes.push(client);
  }
  const actors = await Promise.all(
    Array.from({ length: lanes }, (_, l) =>
      newTask(store, lanes === 1 ? args.actorId : `${args.actorId}-${l}`),
    ),
  );
  let replayed = batches.length; // creation rows stay out of the comparison
  let sent = 0;
  await rawCommitAll(raw, batches.slice(0, replayed));
  reply({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, n] = line.split(' ');
    if (command === 'durable') {
      const from = batches.length;
      const start = now();
      // The cycle by count, as raw needs no look at the state: pause, grant, pause, …
      await Promise.all(
        actors.map(async (actor) => {
          for (let i = 0; i < Number(n); i++) {
            await actor.send(((sent + i) % 2 === 0 ? PAUSE : GRANT) as never);
          }
        }),
      );
      sent += Number(n);
      const ms = now() - start;
      reply({
        ms,
        count: batches.slice(from).reduce((sum, b) => sum + b.length, 0),
        retried,
      });
    } else if (command === 'raw') {
      const start = now();
      const pending = batches.slice(replayed);
      replayed = batches.length;
      const count = pending.reduce((sum, b) => sum + b.length, 0);
      if (lanes === 1) {
        for (const batch of pending) await rawCommit(raw, batch);
      } else {
        // Each actor's rows in order on its own connection, one commit each.
        const byActor = new Map<string, ActorWrite[]>();
        for (const write of pending.flat()) {
          const list = byActor.get(write.actorId) ?? [];
          list.push(write);
          byActor.set(write.actorId, list);
        }
        await Promise.all(
          [...byActor.values()].map(async (writes, l) => {
            const client = rawLanes[l % rawLanes.length] as pg.Client;
            for (const write of writes) await rawCommit(client, [write]);
          }),
        );
      }
      reply({ ms: now() - start, count });
    } else {
      break;
    }
  }
  await getRuntime(store).close();
  await store.close();
  await Promise.all(rawLanes.map((client) => client.end()));
}

async function rawCommitAll(client: pg.Client, batches: readonly ActorWrite[][]): Promise<void> {
  for (const batch of batches) await rawCommit(client, batch);
}

async function contendChild(args: ContendChildArgs): Promise<void> {
  const store = openStore(args.url);
  const actors = await Promise.all(args.actorIds.map((id) => newTask(store, id)));
  reply({ ready: true });
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const stats = { transitions: 0, conflicts: 0, invalid: 0, retried: 0 };
  store.onRetry?.(() => stats.retried++);
  const end = now() + args.durationMs;
  // One lane per actor: a worker keeps every shared actor busy, as its peers do.
  await Promise.all(
    actors.map(async (actor) => {
      while (now() < end) {
        try {
          await actor.send(nextEvent(actor) as never);
          stats.transitions++;
        } catch (error) {
          if (error instanceof ConcurrencyError) stats.conflicts++;
          else if (error instanceof InvalidTransitionError) stats.invalid++;
          else throw error;
        }
      }
    }),
  );
  reply(stats);
  await getRuntime(store).close();
  await store.close();
}

// ---------------------------------------------------------------- the parent

class Child {
  private readonly proc: ChildProcess;
  private readonly replies: unknown[] = [];
  private waiting: ((value: unknown) => void) | undefined;
  private stderr = '';

  constructor(args: PairedChildArgs | ContendChildArgs) {
    this.proc = spawn(
      process.execPath,
      ['--import', 'tsx', SELF, '--child', JSON.stringify(args)],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.proc.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    const lines = createInterface({ input: this.proc.stdout! });
    lines.on('line', (line) => {
      const value = JSON.parse(line) as unknown;
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = undefined;
        resolve(value);
      } else {
        this.replies.push(value);
      }
    });
    this.proc.on('exit', (code) => {
      if (code !== 0 && this.waiting) {
        this.waiting(new Error(`bench worker failed (${code}):\n${this.stderr}`));
      }
    });
  }

  async next<T>(): Promise<T> {
    const value =
      this.replies.length > 0
        ? this.replies.shift()
        : await new Promise<unknown>((resolve) => (this.waiting = resolve));
    if (value instanceof Error) throw value;
    return value as T;
  }

  send(line: string): void {
    this.proc.stdin?.write(`${line}\n`);
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once('exit', resolve));
    this.proc.stdin?.end('exit\n');
    await exited;
  }
}

export interface PostgresBenchOptions {
  quick: boolean;
  /** A server URL (database); every run works in fresh schemas of it. */
  url: string;
  log: (line: string) => void;
}

let schemas = 0;
function freshSchema(label: string): string {
  return `bench_${label}_${process.pid}_${++schemas}`;
}

/**
 * Durable vs raw with `workers` processes, each on its own actor (or `lanes`
 * actors in flight at once), in paired blocks.
 */
async function benchPaired(
  options: PostgresBenchOptions,
  workers: number,
  lanes = 1,
): Promise<BenchRow> {
  const durableUrl = withSchema(options.url, freshSchema('durable'));
  const rawSchema = freshSchema('raw');
  const rawUrl = withSchema(options.url, rawSchema);
  // Both schemas made by the store's own migrations; the raw one is then written raw.
  for (const url of [durableUrl, rawUrl]) {
    const store = openStore(url);
    await store.loadActor('none');
    await store.close();
  }
  const children = Array.from(
    { length: workers },
    (_, i) =>
      new Child({
        mode: 'paired',
        durableUrl,
        serverUrl: options.url,
        rawSchema,
        actorId: `bench-${workers}-${lanes}-${i}`,
        lanes,
      }),
  );
  try {
    await Promise.all(children.map((c) => c.next()));
    const perBlock = 20;
    // ≥ 3,000 sends in each process warm its JIT before anything is timed, as in
    // `npm run bench` (with 60, the durable side was timed while still compiling).
    const warm = Math.ceil(3_000 / (perBlock * lanes));
    const rounds = options.quick ? 10 : 40;
    const blocks: PairedBlock[] = [];
    let rollbackRetries = 0;
    const phase = async (line: string) => {
      for (const c of children) c.send(line);
      const results = await Promise.all(
        children.map((c) => c.next<{ ms: number; count: number; retried?: number }>()),
      );
      return {
        ms: Math.max(...results.map((r) => r.ms)),
        count: results.reduce((sum, r) => sum + r.count, 0),
        retried: results.reduce((sum, r) => sum + (r.retried ?? 0), 0),
      };
    };
    for (let r = 0; r < warm + rounds; r++) {
      const ours = await phase(`durable ${perBlock}`);
      // Each durable reply carries its worker's running count: the last is the total.
      rollbackRetries = ours.retried;
      const base = await phase('raw');
      if (r >= warm) blocks.push({ count: ours.count, oursMs: ours.ms, baseMs: base.ms });
    }
    const figures = pairedFigures(blocks);
    const inFlight = lanes > 1 ? `, ${lanes} tasks in flight` : '';
    options.log(
      `  ${workers} worker(s)${inFlight}: ours ${figures.value.toFixed(0)}/s, raw pg ${figures.baseline.toFixed(0)}/s, ratio ${figures.ratio.toFixed(2)}, ${rollbackRetries} statement(s) run again`,
    );
    return judge({
      id: lanes > 1 ? `postgres-durable-${lanes}-in-flight` : `postgres-durable-${workers}w`,
      name:
        lanes > 1
          ? `postgres durable send, ${lanes} tasks in flight in one process`
          : `postgres durable send, ${workers} worker${workers > 1 ? 's' : ''}`,
      unit: 'transitions/s',
      value: figures.value,
      baseline: figures.baseline,
      baselineName:
        lanes > 1
          ? `raw pg, the same rows, each task on its own connection, one commit per row, ${lanes} at once`
          : `raw pg, the same rows and statements, one commit each, ${workers} process(es)`,
      ratio: figures.ratio,
      target: { on: 'ratio', op: '>=', value: lanes > 1 ? 0.7 : 0.8 },
      details: { workers, lanes, perBlock, rollbackRetries, ...figures },
    });
  } finally {
    await Promise.all(children.map((c) => c.close()));
  }
}

/** 4 workers, 4 shared actors: throughput and conflicts under compare-and-set contention. */
async function benchContention(options: PostgresBenchOptions): Promise<BenchRow> {
  const workers = 4;
  const url = withSchema(options.url, freshSchema('contend'));
  const actorIds = Array.from({ length: 4 }, (_, i) => `shared-${i}`);
  const durationMs = options.quick ? 2_000 : 8_000;
  const children = Array.from(
    { length: workers },
    () => new Child({ mode: 'contend', url, actorIds, durationMs }),
  );
  try {
    await Promise.all(children.map((c) => c.next()));
    for (const c of children) c.send('go');
    const results = await Promise.all(
      children.map((c) =>
        c.next<{ transitions: number; conflicts: number; invalid: number; retried: number }>(),
      ),
    );
    const total = results.reduce(
      (sum, r) => ({
        transitions: sum.transitions + r.transitions,
        conflicts: sum.conflicts + r.conflicts,
        invalid: sum.invalid + r.invalid,
        rollbackRetries: sum.rollbackRetries + r.retried,
      }),
      { transitions: 0, conflicts: 0, invalid: 0, rollbackRetries: 0 },
    );
    const rate = (total.transitions / durationMs) * 1000;
    const conflictRate = total.conflicts / Math.max(1, total.transitions + total.conflicts);
    options.log(
      `  contention: ${rate.toFixed(0)} transitions/s, ${total.conflicts} conflicts (${(conflictRate * 100).toFixed(1)}% of attempts), ${total.invalid} re-choices, ${total.rollbackRetries} statement(s) run again`,
    );
    return judge({
      id: 'postgres-contention',
      name: `postgres contention, ${workers} workers on ${actorIds.length} shared actors`,
      unit: 'transitions/s',
      value: rate,
      details: { workers, actors: actorIds.length, durationMs, ...total, conflictRate },
    });
  } finally {
    await Promise.all(children.map((c) => c.close()));
  }
}

/** Every PostgreSQL figure, in order. */
export async function benchPostgres(options: PostgresBenchOptions): Promise<BenchRow[]> {
  return [
    ...(await benchPostgresMinimal(options.url, options.quick, options.log)),
    await benchPaired(options, 1),
    await benchPaired(options, 4),
    await benchPaired(options, 1, 32),
    await benchContention(options),
    await benchChildren(
      { quick: options.quick, dir: '', log: options.log },
      withSchema(options.url, freshSchema('children')),
      'PostgreSQL',
    ),
  ];
}

function table(rows: readonly BenchRow[]): string {
  const header = ['benchmark', 'ours', 'baseline', 'ratio', 'target', 'result'];
  const body = rows.map((r) => [
    r.name,
    `${fmt(r.value)} ${r.unit}`,
    r.baseline === undefined ? '—' : `${fmt(r.baseline)} ${r.unit}`,
    r.ratio === undefined ? '—' : r.ratio.toFixed(2),
    r.target ? `ratio ${r.target.op} ${r.target.value}` : 'none',
    r.pass === undefined ? 'INFO' : r.pass ? 'PASS' : 'MISS',
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  const notes = rows.flatMap((r) => {
    const d = r.details ?? {};
    if (r.baselineName) return [`  ${r.name}: baseline = ${r.baselineName}`];
    if (d['conflicts'] === undefined) return [];
    return [`  ${r.name}: ${Number(d['conflicts'])} conflicts, ${Number(d['invalid'])} re-choices`];
  });
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    ...notes,
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') {
    const args = JSON.parse(argv[1] ?? '{}') as PairedChildArgs | ContendChildArgs;
    return args.mode === 'paired' ? pairedChild(args) : contendChild(args);
  }
  const flags = new Set(argv);
  for (const flag of flags) {
    if (flag !== '--quick' && flag !== '--json') {
      console.error(`unknown option ${flag}; usage: bench-postgres [--quick] [--json]`);
      process.exit(64);
    }
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  let url = process.env['AGENTCHARTS_BENCH_POSTGRES_URL'];
  let stop: (() => Promise<void>) | undefined;
  if (url === undefined) {
    // The tests' throwaway server: same binaries, fsync on, removed afterwards.
    const { findPostgresBin, startPostgres } = await import('../test/support/postgres.ts');
    if (findPostgresBin() === undefined) {
      console.error(
        'PostgreSQL not installed; set AGENTCHARTS_BENCH_POSTGRES_URL or install Debian\'s "postgresql"',
      );
      process.exit(2);
    }
    const server = await startPostgres();
    url = server.url();
    stop = () => server.destroy();
  }
  try {
    log(`agentcharts postgres bench${flags.has('--quick') ? ' (quick)' : ''}`);
    const rows = await benchPostgres({ quick: flags.has('--quick'), url, log });
    const note = haltPollNote();
    console.log(
      flags.has('--json')
        ? JSON.stringify(rows, null, 2)
        : `${table(rows)}${note === undefined ? '' : `\n\n${note}`}`,
    );
    if (rows.some((r) => r.pass === false)) process.exitCode = 1;
  } finally {
    await stop?.();
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main();
}
