/**
 * Durable commit throughput on SQLite (synchronous=FULL) on the task workload,
 * against the raw minimal durable write (./minimal.ts) on the same disk. The
 * durable side records the writes it commits, batch for batch; each timed block
 * of durable work is followed at once by the baselines writing those very rows
 * (same payloads, same grouping into transactions), so both see the same disk and
 * CPU conditions. A second, informational baseline replays the rows through the
 * store's own commit (its SQL, without the runtime): the runtime's own cost. A
 * third runs the same tasks as XState persisted by hand (./hand-rolled.ts): what a
 * user's own loop of `send` and raw write costs on this machine.
 */
import type { EventObject } from 'xstate';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import type { ActorWrite, Store } from '../../src/store/types.ts';
import { getRuntime, openStore } from '../../src/index.ts';
import {
  judge,
  now,
  pairedFigures,
  perCommit,
  recordingStore,
  type BenchOptions,
  type BenchRow,
  type PairedBlock,
} from './common.ts';
import { HandRolledTask, plainTask } from './hand-rolled.ts';
import { openMinimal, type MinimalWriter } from './minimal.ts';
import { COMMITS_PER_TASK, TASK_EVENTS, createTask, runTask, type TaskActor } from './workload.ts';

interface Interleaved {
  minimal: PairedBlock[];
  storeSql: PairedBlock[];
  /** Against the floor: the raw rows plus a started XState actor's sends of the same events. */
  floor: PairedBlock[];
  /**
   * The time our block spent inside the store's commit calls (SQLite commits
   * synchronously inside the call: the SQL and the fsync), against the store's
   * own SQL replaying the same rows with nothing between its commits.
   */
  inCommit: PairedBlock[];
  /**
   * The rest of our block (the runtime around the commits), against the same
   * block on the memory store: the runtime's JavaScript with no disk between
   * commits.
   */
  aroundCommit: PairedBlock[];
  /**
   * Against XState persisted by hand (./hand-rolled.ts): a started actor per
   * task, its persisted snapshot written with the raw minimal rows after each send.
   */
  handRolled: PairedBlock[];
  commits: number;
}

/**
 * `inner`, recording its writes (as {@link recordingStore}) and adding the time
 * spent inside each commit call to `timing.ms`.
 */
function timedStore(inner: Store, batches: ActorWrite[][], timing: { ms: number }): Store {
  const recording = recordingStore(inner, batches);
  const wrapper = Object.create(recording) as Store;
  wrapper.commit = (writes: readonly ActorWrite[]) => {
    const start = now();
    const done = recording.commit(writes);
    timing.ms += now() - start;
    return done;
  };
  return wrapper;
}

/**
 * Runs `warm + rounds` blocks of durable work (JIT warmed by the first `warm`),
 * each timed block followed by the baselines replaying what it committed.
 */
async function interleaved(
  options: BenchOptions,
  name: string,
  block: (store: Store, round: number) => Promise<unknown>,
  plain: (round: number) => void,
  handRolled: (writer: MinimalWriter, round: number) => void,
  warm: number,
  rounds: number,
): Promise<Interleaved> {
  const batches: ActorWrite[][] = [];
  const inner = openSqliteStore(`${options.dir}/${name}-durable.db`, { readModelRefreshMs: 0 });
  const timing = { ms: 0 };
  const store = timedStore(inner, batches, timing);
  const memory = openStore('memory:');
  const minimal = openMinimal(`${options.dir}/${name}-minimal.db`);
  const byHand = openMinimal(`${options.dir}/${name}-hand-rolled.db`);
  const replica = openSqliteStore(`${options.dir}/${name}-replica.db`, { readModelRefreshMs: 0 });
  let replayed = 0;
  const replay = async (): Promise<{ minimalMs: number; storeMs: number }> => {
    const pending = batches.slice(replayed);
    replayed = batches.length;
    let start = now();
    for (const batch of pending) {
      if (batch.length === 1) minimal.commitOne(batch[0] as ActorWrite);
      else minimal.commitBatch(batch);
    }
    const minimalMs = now() - start;
    start = now();
    for (const batch of pending) await replica.commit(batch);
    return { minimalMs, storeMs: now() - start };
  };
  try {
    for (let r = 0; r < warm; r++) {
      await block(store, r);
      await block(memory, r);
      plain(r);
      handRolled(byHand, r);
    }
    await replay();
    const result: Interleaved = {
      minimal: [],
      storeSql: [],
      floor: [],
      inCommit: [],
      aroundCommit: [],
      handRolled: [],
      commits: 0,
    };
    const first = batches.length;
    for (let r = warm; r < warm + rounds; r++) {
      const from = batches.length;
      timing.ms = 0;
      const start = now();
      await block(store, r);
      const oursMs = now() - start;
      const inCommitMs = timing.ms;
      const count = batches.slice(from).reduce((n, b) => n + b.length, 0);
      const { minimalMs, storeMs } = await replay();
      const plainStart = now();
      plain(r);
      const plainMs = now() - plainStart;
      const memoryStart = now();
      await block(memory, r);
      const memoryMs = now() - memoryStart;
      const handStart = now();
      handRolled(byHand, r);
      const handMs = now() - handStart;
      result.minimal.push({ count, oursMs, baseMs: minimalMs });
      result.storeSql.push({ count, oursMs, baseMs: storeMs });
      result.floor.push({ count, oursMs, baseMs: minimalMs + plainMs });
      result.inCommit.push({ count, oursMs: inCommitMs, baseMs: storeMs });
      result.aroundCommit.push({ count, oursMs: oursMs - inCommitMs, baseMs: memoryMs });
      result.handRolled.push({ count, oursMs, baseMs: handMs });
    }
    result.commits = batches.length - first;
    return result;
  } finally {
    await getRuntime(store).close();
    await getRuntime(memory).close();
    await inner.close();
    await replica.close();
    minimal.db.close();
    byHand.db.close();
  }
}

function rows(
  id: string,
  name: string,
  result: Interleaved,
  target: number,
  floorTarget: number,
  details: Record<string, unknown>,
): BenchRow[] {
  const minimal = pairedFigures(result.minimal);
  const storeSql = pairedFigures(result.storeSql);
  const floor = pairedFigures(result.floor);
  const inCommit = perCommit(result.inCommit);
  const around = perCommit(result.aroundCommit);
  const handRolled = pairedFigures(result.handRolled);
  return [
    judge({
      id,
      name,
      unit: 'commits/s',
      value: minimal.value,
      baseline: minimal.baseline,
      baselineName: 'raw minimal durable write (CAS update + transition insert), same rows',
      ratio: minimal.ratio,
      target: { on: 'ratio', op: '>=', value: target },
      details: { ...details, blocks: minimal.blocks },
    }),
    judge({
      id: `${id}-store-sql`,
      name: `${name}: vs the store's own SQL`,
      unit: 'commits/s',
      value: storeSql.value,
      baseline: storeSql.baseline,
      baselineName: "the store's commit alone (its SQL, no runtime), same rows",
      ratio: storeSql.ratio,
      details: { blocks: storeSql.blocks },
    }),
    judge({
      id: `${id}-floor`,
      name: `${name}: vs its floor`,
      unit: 'commits/s',
      value: floor.value,
      baseline: floor.baseline,
      baselineName:
        'floor: the raw write of the same rows + a started XState actor sending the same events',
      ratio: floor.ratio,
      target: { on: 'ratio', op: '>=', value: floorTarget },
      details: { blocks: floor.blocks },
    }),
    judge({
      id: `${id}-in-commit`,
      name: `${name}: inside the store's commit call`,
      unit: 'µs per commit',
      ...inCommit,
      baselineName: "the store's own SQL replaying the same rows, nothing between its commits",
    }),
    judge({
      id: `${id}-around-commit`,
      name: `${name}: the runtime around the commit`,
      unit: 'µs per commit',
      ...around,
      baselineName: 'the same block on the memory store (no disk between commits)',
    }),
    judge({
      id: `${id}-hand-rolled`,
      name: `${name}: vs XState persisted by hand`,
      unit: 'commits/s',
      value: handRolled.value,
      baseline: handRolled.baseline,
      baselineName:
        'a started XState actor per task, its getPersistedSnapshot() written as the raw rows after each send',
      ratio: handRolled.ratio,
      details: { blocks: handRolled.blocks },
    }),
  ];
}

/** One task after another, each send awaited: one commit (one fsync) per transition. */
export async function benchSequential(options: BenchOptions): Promise<BenchRow[]> {
  const tasksPerBlock = 2;
  const rounds = options.quick ? 30 : 150;
  // ≥ 3,000 sends warm the JIT before anything is timed.
  const warm = Math.ceil(3_000 / (tasksPerBlock * TASK_EVENTS.length));
  const result = await interleaved(
    options,
    'sequential',
    async (store, round) => {
      for (let i = 0; i < tasksPerBlock; i++) await runTask(store, `seq-${round}-${i}`);
    },
    (round) => {
      for (let i = 0; i < tasksPerBlock; i++) {
        const actor = plainTask(`seq-${round}-${i}`);
        for (const event of TASK_EVENTS) actor.send(event as never);
        actor.stop();
      }
    },
    (writer, round) => {
      for (let i = 0; i < tasksPerBlock; i++) {
        const task = new HandRolledTask(`seq-${round}-${i}`);
        writer.commitTransition(task.created());
        for (const event of TASK_EVENTS) writer.commitTransition(task.send(event));
        task.stop();
      }
    },
    warm,
    rounds,
  );
  const out = rows(
    'durable-sequential',
    'task workload, 1 commit per transition (FULL)',
    result,
    0.9,
    0.85,
    {
      tasks: tasksPerBlock * rounds,
      commitsPerTask: COMMITS_PER_TASK,
    },
  );
  options.log(
    `  sequential: ours ${out[0]?.value.toFixed(0)}/s, minimal ${out[0]?.baseline?.toFixed(0)}/s, ratio ${out[0]?.ratio?.toFixed(2)}; vs store SQL ${out[1]?.ratio?.toFixed(2)}; vs floor ${out[2]?.ratio?.toFixed(2)}; vs XState persisted by hand ${out[5]?.ratio?.toFixed(2)}${split(out)}`,
  );
  return out;
}

/** The split rows of {@link rows}, for the log line. */
function split(out: readonly BenchRow[]): string {
  const [inside, around] = [out[3], out[4]];
  return `; per commit ${inside?.value.toFixed(0)} µs inside the store's commit call (its SQL alone ${inside?.baseline?.toFixed(0)}), ${around?.value.toFixed(0)} µs around it (memory store ${around?.baseline?.toFixed(0)})`;
}

/** N tasks at once: each round sends one event to all of them, one commit per round. */
export async function benchGroupCommit(options: BenchOptions): Promise<BenchRow[]> {
  const tasks = options.quick ? 128 : 256;
  const rounds = options.quick ? 8 : 30;
  // Each store (SQLite, and the memory store of the split rows) has its own tasks.
  const states = new Map<Store, { actors: TaskActor[]; step: number }>();
  const block = async (store: Store, round: number): Promise<void> => {
    let state = states.get(store);
    if (state === undefined) {
      state = { actors: [], step: 0 };
      states.set(store, state);
    }
    if (state.step === 0) {
      state.actors = await Promise.all(
        Array.from({ length: tasks }, (_, i) => createTask(store, `group-${round}-${i}`)),
      );
    } else {
      const event = TASK_EVENTS[state.step - 1];
      await Promise.all(state.actors.map((a) => a.send(event as never)));
    }
    state.step = (state.step + 1) % COMMITS_PER_TASK;
    if (state.step === 0) for (const a of state.actors) a.detach();
  };
  // The same rounds on started XState actors: created, then one event to each.
  let plainActors: ReturnType<typeof plainTask>[] = [];
  let plainStep = 0;
  const plain = (round: number): void => {
    if (plainStep === 0) {
      plainActors = Array.from({ length: tasks }, (_, i) => plainTask(`group-${round}-${i}`));
    } else {
      const event = TASK_EVENTS[plainStep - 1];
      for (const a of plainActors) a.send(event as never);
    }
    plainStep = (plainStep + 1) % COMMITS_PER_TASK;
    if (plainStep === 0) for (const a of plainActors) a.stop();
  };
  // The same rounds by hand: one transaction a round, as ours.
  let handTasks: HandRolledTask[] = [];
  let handStep = 0;
  const handRolled = (writer: MinimalWriter, round: number): void => {
    if (handStep === 0) {
      handTasks = Array.from(
        { length: tasks },
        (_, i) => new HandRolledTask(`group-${round}-${i}`),
      );
      writer.commitTransitions(handTasks.map((t) => t.created()));
    } else {
      const event = TASK_EVENTS[handStep - 1] as EventObject;
      writer.commitTransitions(handTasks.map((t) => t.send(event)));
    }
    handStep = (handStep + 1) % COMMITS_PER_TASK;
    if (handStep === 0) for (const t of handTasks) t.stop();
  };
  const warm = COMMITS_PER_TASK * Math.ceil(3_000 / (tasks * TASK_EVENTS.length));
  const result = await interleaved(options, 'group', block, plain, handRolled, warm, rounds);
  const commitsPerRound = result.commits / rounds;
  const out = rows(
    'durable-group-commit',
    `group commit, ${tasks} concurrent sends`,
    result,
    0.5,
    0.7,
    {
      tasks,
      rounds,
      commitsPerRound,
    },
  );
  options.log(
    `  group commit: ours ${out[0]?.value.toFixed(0)}/s, minimal batched ${out[0]?.baseline?.toFixed(0)}/s, ratio ${out[0]?.ratio?.toFixed(2)}, ${commitsPerRound} commit(s) per round of ${tasks}; vs floor ${out[2]?.ratio?.toFixed(2)}; vs XState persisted by hand ${out[5]?.ratio?.toFixed(2)}${split(out)}`,
  );
  return out;
}
