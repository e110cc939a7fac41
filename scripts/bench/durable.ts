/**
 * Durable transition throughput against raw better-sqlite3 writing the same rows.
 *
 * The chart is task-lifecycle cycling running → PAUSE_FOR_APPROVAL → paused →
 * APPROVAL_GRANTED → running: every pause sets two durable timers (reminder,
 * timeout) and every grant cancels them, so each transition writes the actor
 * row (compare-and-set), the audit row and timer rows. The durable side records
 * the writes it commits; the raw baseline then writes those very rows (JSON and
 * hashes precomputed) with the same SQL into its own database with the same
 * schema and pragmas (WAL, synchronous=FULL), batch for batch.
 */
import type { EventObject } from 'xstate';
import { catalog } from '../../machines/index.ts';
import { createDurableActor } from '../../src/durable/open.ts';
import { type DurableActor } from '../../src/durable/actor.ts';
import { openStore } from '../../src/store/open.ts';
import type { ActorWrite, Store } from '../../src/store/types.ts';
import {
  judge,
  now,
  openRawDatabase,
  pairedFigures,
  rawWriter,
  recordingStore,
  type BenchOptions,
  type BenchRow,
  type PairedBlock,
} from './common.ts';

const chart = catalog['task-lifecycle'];
type TaskActor = DurableActor<typeof chart.machine>;

/** The running ⇄ paused cycle, each event as the catalog samples it. */
const CYCLE: readonly EventObject[] = [
  chart.eventSamples.PAUSE_FOR_APPROVAL?.[0] as EventObject,
  chart.eventSamples.APPROVAL_GRANTED?.[0] as EventObject,
];

async function newTaskActor(store: Store, id: string): Promise<TaskActor> {
  const actor = await createDurableActor(chart.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: chart.events,
  });
  await actor.send({ type: 'START' });
  return actor;
}

/** The `i`-th event of the cycle (even: pause, odd: grant). */
function send(actor: TaskActor, i: number): Promise<unknown> {
  return actor.send(CYCLE[i % 2] as never);
}

interface Interleaved {
  blocks: PairedBlock[];
  commits: number;
}

/**
 * Runs `rounds` timed blocks of durable work, each followed at once by the raw
 * baseline writing the rows that block committed. Interleaving block by block
 * puts both under the same disk and CPU conditions, which on a shared or
 * virtual machine drift by several times within a minute.
 */
async function interleaved(
  options: BenchOptions,
  name: string,
  setup: (store: Store) => Promise<TaskActor[]>,
  block: (actors: TaskActor[], round: number) => Promise<unknown>,
  warmRounds: number,
  rounds: number,
): Promise<Interleaved> {
  const batches: ActorWrite[][] = [];
  const store = recordingStore(openStore(`sqlite:${options.dir}/${name}-durable.db`), batches);
  const db = await openRawDatabase(`${options.dir}/${name}-raw.db`);
  const writer = rawWriter(db);
  let replayed = 0;
  const replay = (): number => {
    const start = now();
    for (; replayed < batches.length; replayed++) {
      const batch = batches[replayed] as ActorWrite[];
      if (batch.length === 1) writer.commitOne(batch[0] as ActorWrite);
      else writer.commitBatch(batch);
    }
    return now() - start;
  };
  try {
    const actors = await setup(store);
    for (let r = 0; r < warmRounds; r++) await block(actors, r);
    replay();
    const blocks: PairedBlock[] = [];
    const first = batches.length;
    for (let r = warmRounds; r < warmRounds + rounds; r++) {
      const from = batches.length;
      const start = now();
      await block(actors, r);
      const oursMs = now() - start;
      const count = batches.slice(from).reduce((n, b) => n + b.length, 0);
      blocks.push({ count, oursMs, baseMs: replay() });
    }
    await actors[0]?.runtime.close();
    return { blocks, commits: batches.length - first };
  } finally {
    await store.close();
    db.close();
  }
}

/** One actor, one awaited send after another: one commit (one fsync) per transition. */
export async function benchSequential(options: BenchOptions): Promise<BenchRow> {
  const perBlock = 10;
  const rounds = options.quick ? 40 : 200;
  const result = await interleaved(
    options,
    'sequential',
    async (store) => [await newTaskActor(store, 'bench-seq')],
    async ([actor], round) => {
      for (let i = 0; i < perBlock; i++) await send(actor as TaskActor, round * perBlock + i);
    },
    10,
    rounds,
  );
  const figures = pairedFigures(result.blocks);
  const transitions = perBlock * rounds;
  options.log(
    `  sequential: ours ${figures.value.toFixed(0)}/s, raw ${figures.baseline.toFixed(0)}/s, ratio ${figures.ratio.toFixed(2)}`,
  );
  return judge({
    id: 'durable-sequential',
    name: 'durable send, 1 commit each (FULL)',
    unit: 'transitions/s',
    value: figures.value,
    baseline: figures.baseline,
    baselineName: 'raw better-sqlite3, same rows, one transaction each',
    ratio: figures.ratio,
    target: { on: 'ratio', op: '>=', value: 0.9 },
    details: {
      transitions,
      commitsPerTransition: result.commits / transitions,
      blocks: figures.blocks,
    },
  });
}

/** N concurrent sends to N actors share one commit; each send resolves after it. */
export async function benchGroupCommit(options: BenchOptions): Promise<BenchRow> {
  const actors = options.quick ? 128 : 256;
  const rounds = options.quick ? 12 : 40;
  const result = await interleaved(
    options,
    'group',
    (store) =>
      Promise.all(
        Array.from({ length: actors }, (_, i) => newTaskActor(store, `bench-group-${i}`)),
      ),
    (all, round) => Promise.all(all.map((a) => send(a, round))),
    4,
    rounds,
  );
  const figures = pairedFigures(result.blocks);
  const commitsPerRound = result.commits / rounds;
  options.log(
    `  group commit: ours ${figures.value.toFixed(0)}/s, raw ${figures.baseline.toFixed(0)}/s, ratio ${figures.ratio.toFixed(2)}, ${commitsPerRound} commit(s) per round of ${actors}`,
  );
  return judge({
    id: 'durable-group-commit',
    name: `group commit, ${actors} concurrent sends`,
    unit: 'transitions/s',
    value: figures.value,
    baseline: figures.baseline,
    baselineName: `raw better-sqlite3, the same ${actors} rows in one transaction`,
    ratio: figures.ratio,
    target: { on: 'ratio', op: '>=', value: 0.5 },
    details: { actors, rounds, commitsPerRound, blocks: figures.blocks },
  });
}
