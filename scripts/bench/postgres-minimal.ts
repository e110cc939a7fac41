/**
 * PostgreSQL against the raw minimal durable write: the task workload through the
 * durable runtime on the PostgreSQL store (one commit per transition; and 256
 * concurrent sends group-committed), each timed block followed by plain `pg`
 * writing the very rows the block committed to a minimal schema in the same
 * database — per write one statement (a compare-and-set UPDATE of the actor row
 * whose RETURNING feeds the transition INSERT, in autocommit), a batch in one
 * BEGIN … COMMIT.
 */
import pg from 'pg';
import { getRuntime, openStore } from '../../src/index.ts';
import type { ActorWrite, Store } from '../../src/store/types.ts';
import {
  judge,
  now,
  pairedFigures,
  perCommit,
  recordingStore,
  type BenchRow,
  type PairedBlock,
} from './common.ts';
import { HandRolledTask } from './hand-rolled.ts';
import type { MinimalTransition } from './minimal.ts';
import { COMMITS_PER_TASK, TASK_EVENTS, createTask, runTask, type TaskActor } from './workload.ts';

const MINIMAL_SCHEMA = `
  CREATE TABLE actors (id TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL,
    snapshot TEXT NOT NULL, updated_at BIGINT NOT NULL);
  CREATE TABLE transitions (actor_id TEXT NOT NULL, seq INTEGER NOT NULL, from_state TEXT,
    to_state TEXT NOT NULL, event TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (actor_id, seq));`;

const CREATE = `WITH a AS (INSERT INTO actors VALUES ($1, $2, $3, $4, $5) RETURNING id)
  INSERT INTO transitions SELECT id, $6, $7, $8, $9, $10 FROM a`;
const UPDATE = `WITH a AS (UPDATE actors SET version = $2, state = $3, snapshot = $4, updated_at = $5
    WHERE id = $1 AND version = $11 RETURNING id)
  INSERT INTO transitions SELECT id, $6, $7, $8, $9, $10 FROM a`;

/**
 * One write of the minimal statements: the actor row's values (id, version, state,
 * snapshot, updated_at) and its log row's (seq, from, to, event, at), the
 * compare-and-set against `expectedVersion` (0: a creation).
 */
async function writeMinimal(
  client: pg.Client,
  actor: readonly unknown[],
  log: readonly unknown[],
  expectedVersion: number,
): Promise<void> {
  const values = [...actor, ...log];
  const result =
    expectedVersion === 0
      ? await client.query({ name: 'min_create', text: CREATE, values })
      : await client.query({
          name: 'min_update',
          text: UPDATE,
          values: [...values, expectedVersion],
        });
  if (result.rowCount !== 1)
    throw new Error(`minimal baseline: version conflict on ${String(actor[0])}`);
}

function minimalWrite(client: pg.Client, w: ActorWrite): Promise<void> {
  const { actor: a, transition: t } = w;
  const actor = [a.id, a.version, a.state, a.snapshot, a.updatedAt];
  return writeMinimal(
    client,
    actor,
    [t.seq, t.fromState, t.toState, t.event, t.at],
    w.expectedVersion,
  );
}

/** The same statements for a hand-written program's rows (./hand-rolled.ts). */
function handWrite(client: pg.Client, t: MinimalTransition): Promise<void> {
  const version = t.expectedVersion + 1;
  const actor = [t.id, version, t.state, t.snapshot, t.at];
  return writeMinimal(
    client,
    actor,
    [version, t.fromState, t.state, t.event, t.at],
    t.expectedVersion,
  );
}

/** One task of the workload by hand: a started XState actor, its rows written after each send. */
async function handRolledTask(client: pg.Client, id: string): Promise<void> {
  const task = new HandRolledTask(id);
  await handWrite(client, task.created());
  for (const event of TASK_EVENTS) await handWrite(client, task.send(event));
  task.stop();
}

async function replay(client: pg.Client, batches: readonly ActorWrite[][]): Promise<number> {
  const start = now();
  for (const batch of batches) {
    if (batch.length === 1) {
      await minimalWrite(client, batch[0] as ActorWrite);
      continue;
    }
    await client.query('BEGIN');
    for (const w of batch) await minimalWrite(client, w);
    await client.query('COMMIT');
  }
  return now() - start;
}

function withSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('schema', schema);
  return parsed.toString();
}

/**
 * What {@link paired} measured. With `split`, also: the time our block waited in
 * the store's commit calls (a statement's round trip and the client's work on
 * it; one commit at a time) against the store's own statements replayed through
 * its commit with nothing between them; and the rest of the block (the runtime
 * around the commits) against the same block on the memory store.
 */
interface Paired {
  blocks: PairedBlock[];
  storeSql: PairedBlock[];
  inCommit: PairedBlock[];
  aroundCommit: PairedBlock[];
  /** Against XState persisted by hand, the same statements (./hand-rolled.ts). */
  handRolled: PairedBlock[];
  /**
   * Process CPU (user + system, µs) each phase of the timed rounds took, summed:
   * our block, the raw minimal statements, the store's commit replaying our rows
   * alone, the hand-written program and the block on the memory store (the last
   * two when measured). The server's CPU is its own process's, in none of them.
   */
  cpu: Record<'ours' | 'minimal' | 'storeSql' | 'handRolled' | 'memory', number>;
  commits: number;
}

/** This process's CPU time so far, user and system, in µs. */
function cpuNow(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

async function paired(
  url: string,
  name: string,
  block: (store: Store, round: number) => Promise<unknown>,
  warm: number,
  rounds: number,
  split = false,
  byHand?: (client: pg.Client, round: number) => Promise<void>,
): Promise<Paired> {
  const schema = `bench_${name}_${process.pid}`;
  const minimalSchema = `${schema}_minimal`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${minimalSchema}`);
  await admin.query(`SET search_path = ${minimalSchema}`);
  await admin.query(MINIMAL_SCHEMA);
  await admin.end();
  const client = new pg.Client({
    connectionString: url,
    options: `-c search_path=${minimalSchema}`,
  });
  await client.connect();
  const batches: ActorWrite[][] = [];
  const recording = recordingStore(openStore(withSchema(url, schema)), batches);
  const timing = { ms: 0 };
  const store = split ? timedCommits(recording, timing) : recording;
  const replica = split ? openStore(withSchema(url, `${schema}_replica`)) : undefined;
  const memory = split ? openStore('memory:') : undefined;
  const replayStore = async (fresh: readonly ActorWrite[][]): Promise<number> => {
    const start = now();
    for (const batch of fresh) await replica?.commit(batch);
    return now() - start;
  };
  try {
    for (let r = 0; r < warm; r++) {
      await block(store, r);
      if (memory) await block(memory, r);
    }
    await replay(client, batches);
    await replayStore(batches);
    for (let r = 0; r < warm; r++) await byHand?.(client, r);
    const result: Paired = {
      blocks: [],
      storeSql: [],
      inCommit: [],
      aroundCommit: [],
      handRolled: [],
      cpu: { ours: 0, minimal: 0, storeSql: 0, handRolled: 0, memory: 0 },
      commits: 0,
    };
    const { cpu } = result;
    const first = batches.length;
    for (let r = warm; r < warm + rounds; r++) {
      const from = batches.length;
      timing.ms = 0;
      let cpuStart = cpuNow();
      const start = now();
      await block(store, r);
      const oursMs = now() - start;
      cpu.ours += cpuNow() - cpuStart;
      const inCommitMs = timing.ms;
      const fresh = batches.slice(from);
      const count = fresh.reduce((n, b) => n + b.length, 0);
      cpuStart = cpuNow();
      result.blocks.push({ count, oursMs, baseMs: await replay(client, fresh) });
      cpu.minimal += cpuNow() - cpuStart;
      if (byHand) {
        cpuStart = cpuNow();
        const handStart = now();
        await byHand(client, r);
        result.handRolled.push({ count, oursMs, baseMs: now() - handStart });
        cpu.handRolled += cpuNow() - cpuStart;
      }
      if (!memory) continue;
      cpuStart = cpuNow();
      const storeMs = await replayStore(fresh);
      cpu.storeSql += cpuNow() - cpuStart;
      cpuStart = cpuNow();
      const memoryStart = now();
      await block(memory, r);
      const memoryMs = now() - memoryStart;
      cpu.memory += cpuNow() - cpuStart;
      result.storeSql.push({ count, oursMs, baseMs: storeMs });
      result.inCommit.push({ count, oursMs: inCommitMs, baseMs: storeMs });
      result.aroundCommit.push({ count, oursMs: oursMs - inCommitMs, baseMs: memoryMs });
    }
    result.commits = batches.length - first;
    return result;
  } finally {
    await getRuntime(store).close();
    if (memory) await getRuntime(memory).close();
    await store.close();
    await replica?.close();
    await client.end();
  }
}

/**
 * `inner`, adding to `timing.ms` the time from each commit call to its settling
 * (meaningful one commit at a time: overlapping commits would be counted twice).
 */
function timedCommits(inner: Store, timing: { ms: number }): Store {
  const wrapper = Object.create(inner) as Store;
  wrapper.commit = async (writes: readonly ActorWrite[]) => {
    const start = now();
    try {
      return await inner.commit(writes);
    } finally {
      timing.ms += now() - start;
    }
  };
  return wrapper;
}

/** {@link Paired.cpu} per commit, µs. */
function cpuPerCommit(result: Paired): Paired['cpu'] {
  const commits = result.blocks.reduce((n, b) => n + b.count, 0);
  const { ours, minimal, storeSql, handRolled, memory } = result.cpu;
  return {
    ours: ours / commits,
    minimal: minimal / commits,
    storeSql: storeSql / commits,
    handRolled: handRolled / commits,
    memory: memory / commits,
  };
}

export async function benchPostgresMinimal(
  url: string,
  quick: boolean,
  log: (line: string) => void,
): Promise<BenchRow[]> {
  const sequential = await paired(
    url,
    'seq',
    async (store, round) => runTask(store, `seq-${round}`),
    // ≥ 3,000 sends warm the JIT before anything is timed, as in `npm run bench`.
    Math.ceil(3_000 / TASK_EVENTS.length),
    quick ? 30 : 120,
    true,
    (client, round) => handRolledTask(client, `hand-seq-${round}`),
  );
  const seq = pairedFigures(sequential.blocks);
  const storeSql = pairedFigures(sequential.storeSql);
  const inCommit = perCommit(sequential.inCommit);
  const around = perCommit(sequential.aroundCommit);
  const byHand = pairedFigures(sequential.handRolled);
  const cpu = cpuPerCommit(sequential);
  log(
    `  postgres per commit: ours ${seq.value.toFixed(0)}/s, minimal ${seq.baseline.toFixed(0)}/s, ratio ${seq.ratio.toFixed(2)}; vs store SQL ${storeSql.ratio.toFixed(2)}; vs XState persisted by hand ${byHand.ratio.toFixed(2)}; per commit ${inCommit.value.toFixed(0)} µs in the store's commit calls (its statements alone ${inCommit.baseline.toFixed(0)}), ${around.value.toFixed(0)} µs around them (memory store ${around.baseline.toFixed(0)})`,
  );
  log(
    `  postgres CPU per commit: ours ${cpu.ours.toFixed(0)} µs, the store's commit alone ${cpu.storeSql.toFixed(0)}, raw minimal ${cpu.minimal.toFixed(0)}, by hand ${cpu.handRolled.toFixed(0)}, memory store ${cpu.memory.toFixed(0)}`,
  );

  const tasks = quick ? 64 : 256;
  let actors: TaskActor[] = [];
  let step = 0;
  const group = await paired(
    url,
    'group',
    async (store, round) => {
      if (step === 0) {
        actors = await Promise.all(
          Array.from({ length: tasks }, (_, i) => createTask(store, `g-${round}-${i}`)),
        );
      } else {
        await Promise.all(actors.map((a) => a.send(TASK_EVENTS[step - 1] as never)));
      }
      step = (step + 1) % COMMITS_PER_TASK;
      if (step === 0) for (const a of actors) a.detach();
    },
    COMMITS_PER_TASK,
    quick ? 7 : 21,
  );
  const grp = pairedFigures(group.blocks);
  log(
    `  postgres group commit: ours ${grp.value.toFixed(0)}/s, minimal batched ${grp.baseline.toFixed(0)}/s, ratio ${grp.ratio.toFixed(2)}`,
  );
  return [
    judge({
      id: 'postgres-per-commit',
      name: 'PostgreSQL task workload, 1 commit per transition',
      unit: 'commits/s',
      value: seq.value,
      baseline: seq.baseline,
      baselineName: 'raw pg minimal durable write (CAS update feeding the insert, one statement)',
      ratio: seq.ratio,
      target: { on: 'ratio', op: '>=', value: 0.8 },
      details: { commits: sequential.commits, blocks: seq.blocks },
    }),
    judge({
      id: 'postgres-per-commit-store-sql',
      name: "PostgreSQL task workload, 1 commit per transition: vs the store's own SQL",
      unit: 'commits/s',
      value: storeSql.value,
      baseline: storeSql.baseline,
      baselineName: "the store's commit alone (its statements, no runtime), same rows",
      ratio: storeSql.ratio,
      details: { blocks: storeSql.blocks },
    }),
    judge({
      id: 'postgres-per-commit-in-commit',
      name: "PostgreSQL task workload, 1 commit per transition: in the store's commit calls",
      unit: 'µs per commit',
      ...inCommit,
      baselineName: "the store's own statements replayed through its commit, nothing between them",
    }),
    judge({
      id: 'postgres-per-commit-around-commit',
      name: 'PostgreSQL task workload, 1 commit per transition: the runtime around the commit',
      unit: 'µs per commit',
      ...around,
      baselineName: 'the same block on the memory store (no server between commits)',
    }),
    judge({
      id: 'postgres-per-commit-hand-rolled',
      name: 'PostgreSQL task workload, 1 commit per transition: vs XState persisted by hand',
      unit: 'commits/s',
      value: byHand.value,
      baseline: byHand.baseline,
      baselineName:
        'a started XState actor per task, its getPersistedSnapshot() written with the raw statement after each send',
      ratio: byHand.ratio,
      details: { blocks: byHand.blocks },
    }),
    judge({
      id: 'postgres-cpu-per-commit',
      name: 'PostgreSQL task workload, 1 commit per transition: process CPU per commit',
      unit: 'µs per commit',
      value: cpu.ours,
      baseline: cpu.storeSql,
      baselineName: "the store's commit replaying the same rows alone (its statements, no runtime)",
      ratio: cpu.storeSql / cpu.ours,
      details: {
        rawMinimal: cpu.minimal,
        handRolled: cpu.handRolled,
        memoryStore: cpu.memory,
        runtimeAroundCommit: cpu.ours - cpu.storeSql,
      },
    }),
    judge({
      id: 'postgres-group',
      name: `PostgreSQL group commit, ${tasks} concurrent sends`,
      unit: 'commits/s',
      value: grp.value,
      baseline: grp.baseline,
      baselineName: 'raw pg minimal writes of the same batch in one transaction',
      ratio: grp.ratio,
      target: { on: 'ratio', op: '>=', value: 0.5 },
      details: { commitsPerRound: group.commits / (quick ? 7 : 21), blocks: grp.blocks },
    }),
  ];
}
