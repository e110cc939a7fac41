/**
 * The task workload against the task lifecycle document's own Python sketch
 * (./sketch.py: its transition table, state machine and `StatePersistence`, two
 * SQLite commits per transition, WAL, synchronous FULL), on the same disk. The
 * sketch runs in one long-lived `python3` process; blocks of tasks alternate
 * between it and the durable runtime on a SQLite file opened as a user opens one
 * (`openStore("sqlite:<file>")`: FULL, read models refreshed every 250 ms), so drift in disk
 * and CPU hits both alike. Both sides run the document's refund demo: six
 * transitions a task (ours also commits the task's creation: seven commits against
 * the sketch's twelve). Skipped, with a line saying so, where `python3` is absent.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { getRuntime, openStore } from '../../src/index.ts';
import {
  judge,
  now,
  pairedFigures,
  type BenchOptions,
  type BenchRow,
  type PairedBlock,
} from './common.ts';
import { TASK_EVENTS, runTask } from './workload.ts';

const SKETCH = fileURLToPath(new URL('./sketch.py', import.meta.url));

/** The sketch's process: `run(prefix, n)` runs n tasks there and resolves with its own timing. */
interface Sketch {
  run(prefix: string, tasks: number): Promise<number>;
  close(): Promise<void>;
}

function startSketch(db: string): Promise<Sketch | undefined> {
  return new Promise((resolve, reject) => {
    const child: ChildProcessWithoutNullStreams = spawn('python3', [SKETCH, db]);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Writing to a sketch that died fails; its stdout ends too, and `run` says so with its stderr.
    child.stdin.on('error', () => {});
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') resolve(undefined);
      else reject(error);
    });
    child.once('spawn', () => {
      resolve({
        async run(prefix, tasks) {
          child.stdin.write(`${prefix} ${tasks}\n`);
          const line = await lines.next();
          if (line.done === true) {
            // Its stderr is whole once the process has closed its streams.
            if (child.exitCode === null) await new Promise((closed) => child.once('close', closed));
            throw new Error(
              `the sketch exited (${child.exitCode ?? child.signalCode}):\n${stderr}`,
            );
          }
          return Number(line.value);
        },
        close() {
          return new Promise((done) => {
            // A sketch that already died (its error is on the failing run) has nothing to end.
            if (child.exitCode !== null || child.signalCode !== null) {
              done();
              return;
            }
            child.once('exit', () => done());
            child.stdin.end();
          });
        },
      });
    });
  });
}

export async function benchSketch(options: BenchOptions): Promise<BenchRow[]> {
  const sketch = await startSketch(`${options.dir}/sketch.db`);
  if (sketch === undefined) {
    options.log('  document sketch: python3 not found, row skipped');
    return [];
  }
  const store = openStore(`sqlite:${options.dir}/sketch-durable.db`);
  const perBlock = options.quick ? 10 : 25;
  const rounds = options.quick ? 10 : 40;
  try {
    // ≥ 3,000 sends warm the JIT, as every other row; the sketch warms its own caches.
    for (let i = 0; i < Math.ceil(3_000 / TASK_EVENTS.length); i++)
      await runTask(store, `warm-${i}`);
    await sketch.run('warm', 50);
    const blocks: PairedBlock[] = [];
    for (let r = 0; r < rounds; r++) {
      const start = now();
      for (let i = 0; i < perBlock; i++) await runTask(store, `r${r}-${i}`);
      const oursMs = now() - start;
      blocks.push({ count: perBlock, oursMs, baseMs: await sketch.run(`r${r}`, perBlock) });
    }
    const figures = pairedFigures(blocks);
    const transitions = TASK_EVENTS.length;
    options.log(
      `  document sketch: ours ${(figures.value * transitions).toFixed(0)} transitions/s, the sketch ${(figures.baseline * transitions).toFixed(0)}/s, ratio ${figures.ratio.toFixed(2)}`,
    );
    return [
      judge({
        id: 'document-sketch',
        name: 'task lifecycle, the refund demo per task (6 transitions)',
        unit: 'tasks/s',
        value: figures.value,
        baseline: figures.baseline,
        baselineName:
          "the task lifecycle document's Python sketch (StatePersistence: 2 commits per transition, WAL, FULL)",
        ratio: figures.ratio,
        // The typed, durable lifecycle should not lose to the sketch it replaces.
        target: { on: 'ratio', op: '>=', value: 1 },
        details: {
          tasks: rounds * perBlock,
          blocks: figures.blocks,
          transitionsPerSecond: figures.value * transitions,
          sketchTransitionsPerSecond: figures.baseline * transitions,
        },
      }),
    ];
  } finally {
    await sketch.close();
    await getRuntime(store).close();
    await store.close();
  }
}
