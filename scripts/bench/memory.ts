/**
 * Recovery time of many persisted actors and heap per idle durable actor. Both
 * run in child processes (`node --expose-gc --import tsx scripts/bench/child.ts`)
 * so the heap they measure holds nothing from the other benchmarks.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { charts } from '../../machines/index.ts';
import { judge, type BenchOptions, type BenchRow } from './common.ts';
import { seedActors } from './seed.ts';

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function runChild(args: string[], heapMb = 4096): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', `--max-old-space-size=${heapMb}`, '--import', 'tsx', CHILD, ...args],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`bench child ${args[0]} exited with ${code}:\n${stderr}`));
        return;
      }
      resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, number>);
    });
  });
}

/**
 * `recover()` of a store of 100,000 persisted actors in two shapes: 1,000 of them
 * unfinished (the rest finished tasks with their whole history), and all of them
 * unfinished (in their creation state, spread over the six charts). Recovery reads
 * only unfinished actors, pending timers and executing steps, so its cost follows
 * the unfinished work, not the store's size. Baseline: a raw scan of the same
 * unfinished rows that parses each snapshot.
 */
export async function benchRecover(options: BenchOptions): Promise<BenchRow[]> {
  const total = options.quick ? 20_000 : 100_000;
  const shapes = [
    { unfinished: total / 100, target: 200, id: 'recover-1pct' },
    { unfinished: total, target: 2_000, id: 'recover-all' },
  ];
  const rows: BenchRow[] = [];
  for (const shape of shapes) {
    const file = `${options.dir}/${shape.id}.db`;
    await seedActors(file, total, shape.unfinished);
    const result = await runChild(['recover', file], 8192);
    const recoverMs = result['recoverMs'] ?? Number.NaN;
    const rawMs = result['rawMs'] ?? Number.NaN;
    options.log(
      `  recover: ${total} actors, ${shape.unfinished} unfinished, in ${recoverMs.toFixed(0)} ms (raw scan ${rawMs.toFixed(0)} ms)`,
    );
    if (result['actors'] !== shape.unfinished || result['failed'] !== 0) {
      throw new Error(
        `recover bench: expected ${shape.unfinished} recovered actors, got ${JSON.stringify(result)}`,
      );
    }
    rows.push(
      judge({
        id: shape.id,
        name: `recover ${total.toLocaleString('en-US')} actors, ${shape.unfinished.toLocaleString('en-US')} unfinished`,
        unit: 'ms',
        value: recoverMs,
        baseline: rawMs,
        baselineName: 'raw scan of the unfinished rows, each snapshot parsed',
        ratio: rawMs / recoverMs,
        // The 100k-actor targets; a quick run's smaller store is judged the same way.
        target: { on: 'value', op: '<=', value: shape.target, unit: 'ms' },
        details: { ...result, actorsPerSecond: (shape.unfinished / recoverMs) * 1000 },
      }),
    );
  }
  return rows;
}

/** Heap retained per idle durable actor, loaded by id (mixed charts, then per chart). */
export async function benchHeap(options: BenchOptions): Promise<BenchRow> {
  const count = options.quick ? 3_000 : 12_000;
  const file = `${options.dir}/heap.db`;
  await seedActors(file, count);
  const mixed = await runChild(['heap-durable', file]);
  const xstate = await runChild(['heap-xstate', file]);
  const perChart: Record<string, number> = {};
  if (!options.quick) {
    for (const chart of charts) {
      const r = await runChild(['heap-durable', file, `${chart.name}/`]);
      perChart[chart.name] = (r['bytesPerActor'] ?? Number.NaN) / 1024;
    }
  }
  const kb = (mixed['bytesPerActor'] ?? Number.NaN) / 1024;
  const xstateKb = (xstate['bytesPerActor'] ?? Number.NaN) / 1024;
  options.log(
    `  heap: ${kb.toFixed(2)} KB per durable actor, ${xstateKb.toFixed(2)} KB per bare XState actor` +
      (options.quick
        ? ''
        : `; per chart ${Object.entries(perChart)
            .map(([name, v]) => `${name} ${v.toFixed(2)}`)
            .join(', ')}`),
  );
  return judge({
    id: 'heap-per-actor',
    name: `heap per idle durable actor (${mixed['count']} loaded)`,
    unit: 'KB',
    value: kb,
    baseline: xstateKb,
    baselineName: 'restored + started bare XState actor',
    ratio: xstateKb / kb,
    target: { on: 'value', op: '<=', value: 4, unit: 'KB' },
    details: { actors: mixed['count'], perChartKb: perChart },
  });
}
