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

/** `recover()` of N idle actors (six charts, creation state) vs a raw scan that parses them. */
export async function benchRecover(options: BenchOptions): Promise<BenchRow> {
  const count = options.quick ? 20_000 : 100_000;
  const file = `${options.dir}/recover.db`;
  await seedActors(file, count);
  const result = await runChild(['recover', file], 8192);
  const recoverMs = result['recoverMs'] ?? Number.NaN;
  const rawMs = result['rawMs'] ?? Number.NaN;
  options.log(
    `  recover: ${count} actors in ${recoverMs.toFixed(0)} ms, raw scan ${rawMs.toFixed(0)} ms`,
  );
  if (result['actors'] !== count || result['failed'] !== 0) {
    throw new Error(
      `recover bench: expected ${count} recovered actors, got ${JSON.stringify(result)}`,
    );
  }
  return judge({
    id: 'recover',
    name: `recover ${count.toLocaleString('en-US')} idle actors`,
    unit: 'ms',
    value: recoverMs,
    baseline: rawMs,
    baselineName: 'raw scan: page rows, parse snapshot, read timers',
    ratio: rawMs / recoverMs,
    details: { ...result, actorsPerSecond: (count / recoverMs) * 1000 },
  });
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
