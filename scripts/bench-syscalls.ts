/**
 * `npm run bench:syscalls`: write system calls per commit on SQLite (FULL), counted
 * by `strace -f -c` around a process that runs the task workload (one commit per
 * transition) and, separately, around one that writes the same rows with the raw
 * minimal durable write. Each process first runs a warm-up outside the count
 * window: the count is the difference between a run of `TASKS` tasks and a run of
 * none, so opening the database, migrations and the JIT cancel out.
 *
 * Needs `strace` (Debian package strace); without it, says so and exits 1.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getRuntime } from '../src/index.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import type { ActorWrite } from '../src/store/types.ts';
import { recordingStore } from './bench/common.ts';
import { openMinimal } from './bench/minimal.ts';
import { COMMITS_PER_TASK, runTask } from './bench/workload.ts';

const TASKS = 300;
const CALLS = ['pwrite64', 'pwritev', 'write', 'fsync', 'fdatasync'] as const;

/** The child: runs `tasks` tasks through the store, or replays them raw. */
async function child(mode: 'store' | 'minimal', tasks: number, dir: string): Promise<void> {
  const batches: ActorWrite[][] = [];
  const inner = openSqliteStore(join(dir, `${mode}-rows.db`), { readModelRefreshMs: 0 });
  const recorder = recordingStore(inner, batches);
  if (mode === 'store') {
    const store = openSqliteStore(join(dir, 'store.db'), { readModelRefreshMs: 0 });
    for (let i = 0; i < tasks; i++) await runTask(store, `t-${i}`);
    await getRuntime(store).close();
    await store.close();
  } else {
    // The rows are made in memory-free fashion by a store on another file, then
    // written raw; only the raw writes go to `minimal.db`, whose calls differ.
    for (let i = 0; i < tasks; i++) await runTask(recorder, `t-${i}`);
    const minimal = openMinimal(join(dir, 'minimal.db'));
    for (const batch of batches) {
      if (batch.length === 1) minimal.commitOne(batch[0] as ActorWrite);
      else minimal.commitBatch(batch);
    }
    minimal.db.close();
  }
  await getRuntime(recorder).close();
  await inner.close();
}

/** System calls of one child run, by name, on files under `dir` only for `minimal`. */
function traced(mode: 'store' | 'minimal', tasks: number): Record<string, number> {
  const dir = mkdtempSync(join(tmpdir(), 'agentcharts-syscalls-'));
  const out = join(dir, 'strace.txt');
  try {
    const self = fileURLToPath(import.meta.url);
    const run = spawnSync(
      'strace',
      [
        '-f',
        '-c',
        '-e',
        `trace=${CALLS.join(',')}`,
        '-o',
        out,
        process.execPath,
        ...process.execArgv,
        self,
        'child',
        mode,
        String(tasks),
        dir,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    if (run.error) throw run.error;
    const counts: Record<string, number> = {};
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      const cells = line.trim().split(/\s+/);
      const name = cells.at(-1);
      if (name && (CALLS as readonly string[]).includes(name)) {
        // % time, seconds, usecs/call, calls, [errors,] syscall
        counts[name] = Number(cells[3]);
      }
    }
    return counts;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') {
  const [, , , mode, tasks, dir] = process.argv;
  await child(mode as 'store' | 'minimal', Number(tasks), dir as string);
} else {
  if (spawnSync('strace', ['-V']).error) {
    console.error('bench:syscalls needs strace (apt-get install strace)');
    process.exit(1);
  }
  const commits = TASKS * COMMITS_PER_TASK;
  // The minimal child also runs the store (to make its rows): its own writes are
  // the difference from a store-only run of the same tasks on another file.
  const store = traced('store', TASKS);
  const storeIdle = traced('store', 0);
  const minimal = traced('minimal', TASKS);
  const rowsOnly = traced('store', TASKS);
  const per = (a: Record<string, number>, b: Record<string, number>, name: string) =>
    ((a[name] ?? 0) - (b[name] ?? 0)) / commits;
  console.log(`write system calls per commit, ${commits} commits (${TASKS} tasks), SQLite FULL`);
  console.log('call        store   raw minimal write');
  for (const name of CALLS) {
    const ours = per(store, storeIdle, name);
    const raw = per(minimal, rowsOnly, name);
    if (ours === 0 && raw === 0) continue;
    console.log(`${name.padEnd(10)} ${ours.toFixed(2).padStart(6)}  ${raw.toFixed(2).padStart(6)}`);
  }
}
