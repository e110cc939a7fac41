/**
 * CPU of the send path. On the memory store (no I/O) the task workload's
 * transitions per second, against bare XState running the same events through its
 * pure `initialTransition()`/`transition()` in the same run; and process CPU per
 * commit (process.cpuUsage, user + system, every thread) on memory, on SQLite (FULL), and for the
 * raw minimal write of the rows the SQLite store committed; the store's budget is
 * the raw write's CPU + the memory store's + 20 µs. For information, the memory
 * store and the raw write interleaved commit for commit: what each costs the other
 * with no store code at all; the memory store with a bare fsync of a file of
 * its own between commits: what waiting on the disk costs the JavaScript after it;
 * and the same with a sleep as long as a raw commit instead of the fsync: no I/O,
 * only the wait; and XState persisted by hand (./hand-rolled.ts), in memory against
 * the memory store and on SQLite against the raw write and a started actor's
 * sends measured apart.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { getRuntime, openStore } from '../../src/index.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import type { Store } from '../../src/store/types.ts';
import type { ActorWrite } from '../../src/store/types.ts';
import { judge, now, recordingStore, type BenchOptions, type BenchRow } from './common.ts';
import { HandRolledTask, plainTask } from './hand-rolled.ts';
import { openMinimal, type MinimalTransition } from './minimal.ts';
import { COMMITS_PER_TASK, TASK_EVENTS, chart, createTask, runTask } from './workload.ts';

interface Timed {
  commitsPerSecond: number;
  cpuMicrosPerCommit: number;
}

async function timedTasks(store: Store, prefix: string, tasks: number): Promise<Timed> {
  const start = now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < tasks; i++) await runTask(store, `${prefix}-${i}`);
  const used = process.cpuUsage(cpu);
  const commits = tasks * COMMITS_PER_TASK;
  return {
    commitsPerSecond: (commits / (now() - start)) * 1000,
    cpuMicrosPerCommit: (used.user + used.system) / commits,
  };
}

/**
 * The memory store's task workload and the raw minimal write of `batches`, one
 * commit of each in turn, in one loop: no store code runs, yet each side runs
 * where the other left the caches (and the fsync left the CPU). Process CPU per
 * commit, to set against the two measured apart.
 */
async function interleavedCpu(batches: readonly ActorWrite[][], file: string): Promise<number> {
  const memory = openStore('memory:');
  const minimal = openMinimal(file);
  let next = 0;
  const raw = (): void => {
    const batch = batches[next++];
    if (batch?.length === 1) minimal.commitOne(batch[0] as ActorWrite);
    else if (batch !== undefined) minimal.commitBatch(batch);
  };
  const tasks = Math.floor(batches.length / COMMITS_PER_TASK);
  const used = await memoryTasksWith(memory, 'mixed', tasks, raw);
  minimal.db.close();
  return used / (tasks * COMMITS_PER_TASK);
}

/**
 * Process CPU of `tasks` task workloads on the memory store (warmed first, closed
 * after), with `between` run after every commit.
 */
async function memoryTasksWith(
  memory: Store,
  prefix: string,
  tasks: number,
  between: () => void,
): Promise<number> {
  await timedTasks(memory, 'warm', 100);
  const cpu = process.cpuUsage();
  for (let i = 0; i < tasks; i++) {
    const actor = await createTask(memory, `${prefix}-${i}`);
    between();
    for (const event of TASK_EVENTS) {
      await actor.send(event as never);
      between();
    }
    actor.detach();
  }
  const used = process.cpuUsage(cpu);
  await getRuntime(memory).close();
  return used.user + used.system;
}

/**
 * The memory store's task workload with a 1-byte write and fsync of a file of its
 * own after every commit, and no SQLite: process CPU per commit outside those
 * fsyncs (their own CPU is measured and taken off). Set against the memory store
 * run alone, it shows what waiting on the disk between commits costs the
 * JavaScript that runs after it.
 */
async function fsyncInterleavedCpu(tasks: number, file: string): Promise<number> {
  const memory = openStore('memory:');
  const fd = openSync(file, 'w');
  let fsyncs = 0;
  const fsync = (): void => {
    const before = process.cpuUsage();
    writeSync(fd, 'x');
    fsyncSync(fd);
    const used = process.cpuUsage(before);
    fsyncs += used.user + used.system;
  };
  const used = await memoryTasksWith(memory, 'fsync', tasks, fsync);
  closeSync(fd);
  return (used - fsyncs) / (tasks * COMMITS_PER_TASK);
}

/**
 * The memory store's task workload with the main thread asleep for `sleepMs` after
 * every commit (Atomics.wait: no I/O, no other work). Against the fsync row: whether
 * the disk or the wait itself costs the JavaScript that runs after it.
 */
async function sleepInterleavedCpu(tasks: number, sleepMs: number): Promise<number> {
  const memory = openStore('memory:');
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const sleep = (): void => {
    Atomics.wait(cell, 0, 0, sleepMs);
  };
  return (await memoryTasksWith(memory, 'sleep', tasks, sleep)) / (tasks * COMMITS_PER_TASK);
}

/**
 * Process CPU per commit of XState persisted by hand (./hand-rolled.ts) on SQLite
 * (FULL), one commit per transition; and per transition of a started XState
 * actor's sends alone (nothing persisted). Against the raw write + those sends,
 * measured apart: what the same wait costs a program with none of the runtime's
 * bookkeeping.
 */
function handRolledCpu(tasks: number, file: string): { hand: number; send: number } {
  const writer = openMinimal(file);
  const run = (prefix: string, count: number): number => {
    const cpu = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      const task = new HandRolledTask(`${prefix}-${i}`);
      writer.commitTransition(task.created());
      for (const event of TASK_EVENTS) writer.commitTransition(task.send(event));
      task.stop();
    }
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / (count * COMMITS_PER_TASK);
  };
  const sends = (prefix: string, count: number): number => {
    const cpu = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      const actor = plainTask(`${prefix}-${i}`);
      for (const event of TASK_EVENTS) actor.send(event as never);
      actor.stop();
    }
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / (count * COMMITS_PER_TASK);
  };
  run('warm', 200);
  sends('warm', 1_000);
  const hand = run('hand', tasks);
  const send = sends('send', tasks * 10);
  writer.db.close();
  return { hand, send };
}

/**
 * XState persisted by hand in memory: {@link HandRolledTask}'s rows (its
 * `getPersistedSnapshot()` as JSON after each step) kept in a map, the last row
 * of each actor and its log, as the memory store keeps them. What a memory store
 * cannot go below: XState's step and one `JSON.stringify` of its snapshot.
 */
function handInMemoryTasks(tasks: number, prefix: string): Timed {
  const actors = new Map<string, MinimalTransition>();
  const log: MinimalTransition[] = [];
  const keep = (row: MinimalTransition): void => {
    actors.set(row.id, row);
    log.push(row);
  };
  const start = now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < tasks; i++) {
    const task = new HandRolledTask(`${prefix}-${i}`);
    keep(task.created());
    for (const event of TASK_EVENTS) keep(task.send(event));
    task.stop();
  }
  const used = process.cpuUsage(cpu);
  const commits = tasks * COMMITS_PER_TASK;
  return {
    commitsPerSecond: (commits / (now() - start)) * 1000,
    cpuMicrosPerCommit: (used.user + used.system) / commits,
  };
}

function bareTasks(tasks: number): number {
  const start = now();
  for (let i = 0; i < tasks; i++) {
    let [snapshot] = initialTransition(chart.machine, { taskId: `bare-${i}` });
    for (const event of TASK_EVENTS) {
      [snapshot] = transition(chart.machine, snapshot as AnyMachineSnapshot, event as never);
    }
  }
  return ((tasks * COMMITS_PER_TASK) / (now() - start)) * 1000;
}

export async function benchCpu(options: BenchOptions): Promise<BenchRow[]> {
  const tasks = options.quick ? 2_000 : 10_000;
  const memory = openStore('memory:');
  await timedTasks(memory, 'warm', Math.ceil(3_000 / TASK_EVENTS.length)); // JIT
  bareTasks(1_000);
  handInMemoryTasks(1_000, 'warm');
  // Alternate blocks so drift in CPU share hits all alike; medians of the blocks.
  const ours: Timed[] = [];
  const bare: number[] = [];
  const hand: Timed[] = [];
  const blocks = 5;
  for (let b = 0; b < blocks; b++) {
    ours.push(await timedTasks(memory, `mem-${b}`, tasks / blocks));
    bare.push(bareTasks(tasks / blocks));
    hand.push(handInMemoryTasks(tasks / blocks, `hand-${b}`));
  }
  await getRuntime(memory).close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const memoryRate = median(ours.map((t) => t.commitsPerSecond));
  const bareRate = median(bare);
  const memoryCpu = median(ours.map((t) => t.cpuMicrosPerCommit));
  const handRate = median(hand.map((t) => t.commitsPerSecond));
  const handCpu = median(hand.map((t) => t.cpuMicrosPerCommit));

  const batches: ActorWrite[][] = [];
  const inner = openSqliteStore(`${options.dir}/cpu.db`, { readModelRefreshMs: 0 });
  const sqlite = recordingStore(inner, batches);
  await timedTasks(sqlite, 'warm', 200);
  batches.length = 0;
  const onDisk = await timedTasks(sqlite, 'disk', options.quick ? 150 : 600);
  await getRuntime(sqlite).close();
  await inner.close();
  // The raw minimal write of the very rows the store committed, one transaction each.
  const minimal = openMinimal(`${options.dir}/cpu-minimal.db`);
  const rawStart = now();
  const cpu = process.cpuUsage();
  for (const batch of batches) {
    if (batch.length === 1) minimal.commitOne(batch[0] as ActorWrite);
    else minimal.commitBatch(batch);
  }
  const used = process.cpuUsage(cpu);
  const rawMsPerCommit = (now() - rawStart) / batches.length;
  minimal.db.close();
  const commits = batches.reduce((n, b) => n + b.length, 0);
  const rawCpu = (used.user + used.system) / commits;
  const budget = rawCpu + memoryCpu + 20;
  const mixedCpu = await interleavedCpu(batches, `${options.dir}/cpu-mixed.db`);
  const fsyncCpu = await fsyncInterleavedCpu(
    Math.floor(batches.length / COMMITS_PER_TASK),
    `${options.dir}/cpu-fsync.bin`,
  );
  const sleepCpu = await sleepInterleavedCpu(
    Math.floor(batches.length / COMMITS_PER_TASK),
    rawMsPerCommit,
  );
  const byHand = handRolledCpu(
    Math.floor(batches.length / COMMITS_PER_TASK),
    `${options.dir}/cpu-hand-rolled.db`,
  );
  options.log(
    `  XState persisted by hand: ${byHand.hand.toFixed(0)} µs CPU per commit, against raw minimal write + a started actor's send apart ${(rawCpu + byHand.send).toFixed(0)} µs (send ${byHand.send.toFixed(1)} µs)`,
  );
  options.log(
    `  memory store: ${memoryRate.toFixed(0)} commits/s (${memoryCpu.toFixed(1)} µs CPU each), bare XState ${bareRate.toFixed(0)}/s, XState persisted by hand in memory ${handRate.toFixed(0)}/s (${handCpu.toFixed(1)} µs CPU each); SQLite ${onDisk.cpuMicrosPerCommit.toFixed(0)} µs CPU per commit, raw minimal write ${rawCpu.toFixed(0)} µs, the two interleaved ${mixedCpu.toFixed(0)} µs; the memory store with an fsync between commits ${fsyncCpu.toFixed(0)} µs, with a ${(rawMsPerCommit * 1000).toFixed(0)} µs sleep instead ${sleepCpu.toFixed(0)} µs`,
  );
  return [
    judge({
      id: 'memory-store',
      name: 'memory store, task workload',
      unit: 'transitions/s',
      value: memoryRate,
      baseline: bareRate,
      baselineName: 'bare XState initialTransition()/transition(), same events',
      ratio: memoryRate / bareRate,
      target: { on: 'value', op: '>=', value: 40_000, unit: 'transitions/s' },
      details: { tasks, cpuMicrosPerCommit: memoryCpu },
    }),
    judge({
      id: 'memory-store-hand-rolled',
      name: 'memory store, task workload: vs XState persisted by hand in memory',
      unit: 'transitions/s',
      value: memoryRate,
      baseline: handRate,
      baselineName:
        'a started XState actor per task, its getPersistedSnapshot() as JSON kept in a map after each step',
      ratio: memoryRate / handRate,
      details: { cpuMicrosPerCommit: memoryCpu, handCpuMicrosPerCommit: handCpu },
    }),
    judge({
      id: 'cpu-per-commit-memory',
      name: 'process CPU per commit, memory store',
      unit: 'µs',
      value: memoryCpu,
      target: { on: 'value', op: '<=', value: 25, unit: 'µs' },
    }),
    judge({
      id: 'cpu-per-commit-raw',
      name: 'process CPU per commit, raw minimal write (FULL, same rows)',
      unit: 'µs',
      value: rawCpu,
      details: { commits },
    }),
    judge({
      id: 'cpu-per-commit-interleaved',
      name: 'process CPU per commit, memory store and raw minimal write interleaved',
      unit: 'µs',
      value: mixedCpu,
      // Apart they cost raw + memory: above that is what each costs the other.
      baseline: rawCpu + memoryCpu,
      baselineName: 'the two run apart (raw minimal write + memory store)',
      ratio: (rawCpu + memoryCpu) / mixedCpu,
      details: { rawCpu, memoryCpu },
    }),
    judge({
      id: 'cpu-per-commit-memory-fsync',
      name: 'process CPU per commit, memory store with a 1-byte fsync between commits',
      unit: 'µs',
      value: fsyncCpu,
      // The fsyncs' own CPU is taken off: above the memory store alone is what the
      // wait on the disk costs the JavaScript that runs after it.
      baseline: memoryCpu,
      baselineName: 'the memory store alone',
      ratio: memoryCpu / fsyncCpu,
    }),
    judge({
      id: 'cpu-per-commit-memory-sleep',
      name: 'process CPU per commit, memory store with a sleep as long as a raw commit between commits',
      unit: 'µs',
      value: sleepCpu,
      // No disk at all: above the memory store alone is what the wait itself costs.
      baseline: memoryCpu,
      baselineName: 'the memory store alone',
      ratio: memoryCpu / sleepCpu,
      details: { sleepMicros: rawMsPerCommit * 1000 },
    }),
    judge({
      id: 'cpu-per-commit-sqlite',
      name: 'process CPU per commit, SQLite FULL (fsync included)',
      unit: 'µs',
      value: onDisk.cpuMicrosPerCommit,
      // What a commit cannot go below: the raw write's CPU and the memory store's.
      target: { on: 'value', op: '<=', value: Math.round(budget), unit: 'µs (raw + memory + 20)' },
      details: { commitsPerSecond: onDisk.commitsPerSecond, rawCpu, memoryCpu },
    }),
    judge({
      id: 'cpu-per-commit-hand-rolled',
      name: 'process CPU per commit, XState persisted by hand (SQLite FULL, fsync included)',
      unit: 'µs',
      value: byHand.hand,
      // The same budget's shape for a program with no bookkeeping: raw + its sends.
      baseline: rawCpu + byHand.send,
      baselineName: "raw minimal write + a started XState actor's send, measured apart",
      ratio: (rawCpu + byHand.send) / byHand.hand,
      details: { rawCpu, sendCpu: byHand.send },
    }),
  ];
}
