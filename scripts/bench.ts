/**
 * `npm run bench [-- --quick] [-- --json]`: the runtime's figures, each against a
 * baseline run in this process on the same disk (a temp directory under the OS
 * temp dir), with its target and PASS/MISS.
 *
 * - the task workload (one actor per task: created, then the six transitions of the
 *   task document's demo), one commit per transition, synchronous=FULL, vs the raw
 *   minimal durable write of the same rows (CAS update + transition insert) — ≥ 0.9;
 *   vs its floor, that raw write plus a started XState actor's `send` of the same
 *   events (what a durable send cannot go below) — ≥ 0.85; and, for information,
 *   vs the store's own commit without the runtime;
 * - the same refund demo per task against the task lifecycle document's own Python
 *   sketch (two commits per transition, WAL, FULL; skipped without `python3`) — ≥ 1;
 * - group commit of N concurrent sends vs the same rows batched raw — ≥ 0.5, and vs
 *   its floor (the batched rows + the same sends) — ≥ 0.7;
 * - the memory store's transitions/s (≥ 40,000) against bare XState transition()
 *   and (for information) against XState persisted by hand in memory, and process CPU per commit on memory (≤ 25 µs) and on SQLite, and (for
 *   information) of the memory store and the raw write interleaved;
 * - WAL pages per commit by kind of send and for creation (≤ 4 each);
 * - strict in-memory send vs bare XState send — ≥ 0.85;
 * - recover of 100k persisted actors, 1k unfinished (≤ 0.2 s) and all unfinished (≤ 2 s);
 * - heap per idle durable actor — ≤ 4 KB (bare XState actor shown for scale);
 * - an invoke round trip vs two plain durable sends, and a parent → 100 children →
 *   all done, per child (for information).
 * The PostgreSQL figures are `npm run bench:postgres`.
 *
 * `ratio` reads "as good as the baseline" at 1: ours ÷ baseline for rates,
 * baseline ÷ ours for times and heap. `--quick` shrinks every size for a smoke run.
 */
import { cpus, loadavg } from 'node:os';
import {
  fmt,
  haltPollNote,
  haltPollNs,
  makeTempDir,
  removeDir,
  type BenchOptions,
  type BenchRow,
} from './bench/common.ts';
import { benchChildren, benchInvoke } from './bench/actors.ts';
import { benchGroupCommit, benchSequential } from './bench/durable.ts';
import { benchCpu } from './bench/cpu.ts';
import { benchHeap, benchRecover } from './bench/memory.ts';
import { benchPages } from './bench/pages.ts';
import { benchSketch } from './bench/sketch.ts';
import { benchStrict } from './bench/strict.ts';

const args = new Set(process.argv.slice(2));
for (const arg of args) {
  if (arg !== '--quick' && arg !== '--json') {
    console.error(`unknown option ${arg}; usage: bench [--quick] [--json]`);
    process.exit(64);
  }
}
const json = args.has('--json');
const dir = makeTempDir();
const options: BenchOptions = {
  quick: args.has('--quick'),
  dir,
  // Progress goes to stderr so `--json` keeps stdout machine-readable.
  log: (line) => process.stderr.write(`${line}\n`),
};

function targetText(row: BenchRow): string {
  if (!row.target) return 'none';
  const unit = row.target.unit ? ` ${row.target.unit}` : '';
  return `${row.target.on === 'ratio' ? 'ratio ' : ''}${row.target.op} ${row.target.value}${unit}`;
}

function table(rows: readonly BenchRow[]): string {
  const header = ['benchmark', 'ours', 'baseline', 'ratio', 'target', 'result'];
  const body = rows.map((r) => [
    r.name,
    `${fmt(r.value)} ${r.unit}`,
    r.baseline === undefined ? '—' : `${fmt(r.baseline)} ${r.unit}`,
    r.ratio === undefined ? '—' : r.ratio.toFixed(2),
    targetText(r),
    r.pass === undefined ? 'INFO' : r.pass ? 'PASS' : 'MISS',
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  const baselines = rows
    .filter((r) => r.baselineName)
    .map((r) => `  ${r.name}: baseline = ${r.baselineName}`);
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    ...baselines,
  ].join('\n');
}

const started = Date.now();
const loadBefore = loadavg()[0] ?? 0;
const rows: BenchRow[] = [];
try {
  options.log(`agentcharts bench${options.quick ? ' (quick)' : ''}: databases in ${dir}`);
  rows.push(...(await benchSequential(options)));
  rows.push(...(await benchSketch(options)));
  rows.push(...(await benchGroupCommit(options)));
  rows.push(...(await benchCpu(options)));
  rows.push(...(await benchPages(options)));
  rows.push(benchStrict(options));
  rows.push(...(await benchRecover(options)));
  rows.push(await benchHeap(options));
  rows.push(await benchInvoke(options));
  rows.push(await benchChildren(options));
} finally {
  removeDir(dir);
}
const load = { before: loadBefore, after: loadavg()[0] ?? 0, cpus: cpus().length };
// Every figure is a ratio to a baseline interleaved with it, which absorbs slow
// drift; a machine busier than its CPU count still skews CPU-bound pairs.
const busy = Math.max(load.before, load.after) > load.cpus;
const haltPoll = haltPollNs();
const note = haltPollNote();
const summary = {
  quick: options.quick,
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  load,
  busy,
  haltPollNs: haltPoll ?? null,
  seconds: (Date.now() - started) / 1000,
  passed: rows.every((r) => r.pass !== false),
  rows,
};
if (json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const loadText = `load average ${load.before.toFixed(1)} → ${load.after.toFixed(1)} on ${load.cpus} CPUs`;
  process.stdout.write(
    `${table(rows)}\n\n${summary.seconds.toFixed(1)} s, node ${process.version}, ${loadText}` +
      `${busy ? ' — the machine was busy: figures are noisy, rerun on an idle machine' : ''}\n` +
      (note === undefined ? '' : `${note}\n`),
  );
}
