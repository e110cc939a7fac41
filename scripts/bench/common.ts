/**
 * Shared pieces of `npm run bench`: result rows, timing, temp directories, and the
 * recording store whose writes the raw baselines replay.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActorWrite, Store } from '../../src/store/types.ts';

/** How a row's figure is judged. `ratio` is ours ÷ baseline for rates, baseline ÷ ours for times. */
export interface Target {
  on: 'ratio' | 'value';
  op: '>=' | '<=';
  value: number;
  unit?: string;
}

export interface BenchRow {
  id: string;
  name: string;
  unit: string;
  /** Our figure. */
  value: number;
  /** The baseline's figure in the same unit, run in this process on the same disk. */
  baseline?: number;
  baselineName?: string;
  /** Higher is better for us (rates, speed ratio), lower for heap. */
  ratio?: number;
  target?: Target;
  /** Undefined when the row has no target (reported for information). */
  pass?: boolean;
  details?: Record<string, unknown>;
}

export interface BenchOptions {
  quick: boolean;
  /** Temp directory for this run's databases. */
  dir: string;
  log: (line: string) => void;
}

export function judge(row: Omit<BenchRow, 'pass'>): BenchRow {
  if (!row.target) return row;
  const figure = row.target.on === 'ratio' ? row.ratio : row.value;
  if (figure === undefined) return { ...row, pass: false };
  const pass = row.target.op === '>=' ? figure >= row.target.value : figure <= row.target.value;
  return { ...row, pass };
}

/**
 * How long an idle vCPU of this (virtual) machine polls before it halts, in ns
 * (Linux's `haltpoll` guest driver), or undefined where there is no such driver.
 * At 0 every wait for the disk halts the vCPU, and the JavaScript that runs after
 * it costs about twice its figure (docs/durability.md, "What it costs").
 */
export function haltPollNs(): number | undefined {
  try {
    const text = readFileSync('/sys/module/haltpoll/parameters/guest_halt_poll_ns', 'utf8');
    const ns = Number(text.trim());
    return Number.isFinite(ns) ? ns : undefined;
  } catch {
    return undefined;
  }
}

/** What a table of figures should say of {@link haltPollNs}, or undefined when nothing. */
export function haltPollNote(): string | undefined {
  if (haltPollNs() !== 0) return undefined;
  return (
    'This virtual machine halts an idle vCPU at once (haltpoll guest_halt_poll_ns = 0): ' +
    'the JavaScript that runs after each wait for the disk or the server costs about twice ' +
    'its figure, which the one-commit-at-a-time rows pay and their baselines mostly do not ' +
    '(docs/durability.md, "What it costs").'
  );
}

export function makeTempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agentcharts-bench-'));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One interleaved pair: our block and the baseline's block of the same work. */
export interface PairedBlock {
  /** Operations in the block (the same on both sides). */
  count: number;
  oursMs: number;
  baseMs: number;
}

/**
 * Rates and ratio over paired blocks, each the median over blocks: a block that
 * another process preempted or an fsync that stalled skews one pair, not the figure.
 */
export function pairedFigures(blocks: readonly PairedBlock[]): {
  value: number;
  baseline: number;
  ratio: number;
  blocks: number;
} {
  return {
    value: median(blocks.map((b) => (b.count / b.oursMs) * 1000)),
    baseline: median(blocks.map((b) => (b.count / b.baseMs) * 1000)),
    ratio: median(blocks.map((b) => b.baseMs / b.oursMs)),
    blocks: blocks.length,
  };
}

/**
 * Microseconds per commit of paired blocks, each the median over blocks; the
 * ratio is baseline ÷ ours (a time: above 1 is faster than the baseline).
 */
export function perCommit(blocks: readonly PairedBlock[]): {
  value: number;
  baseline: number;
  ratio: number;
  details: { blocks: number };
} {
  return {
    value: median(blocks.map((b) => (b.oursMs / b.count) * 1000)),
    baseline: median(blocks.map((b) => (b.baseMs / b.count) * 1000)),
    ratio: median(blocks.map((b) => b.baseMs / b.oursMs)),
    details: { blocks: blocks.length },
  };
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function now(): number {
  return performance.now();
}

/**
 * A store that records every write the runtime commits, batch by batch, so the raw
 * baseline can write byte-identical rows grouped the same way.
 */
export function recordingStore(inner: Store, batches: ActorWrite[][]): Store {
  const wrapper = Object.create(inner) as Store;
  wrapper.commit = (writes: readonly ActorWrite[]) => {
    batches.push([...writes]);
    return inner.commit(writes);
  };
  return wrapper;
}

/** Formats a number for the table: 3 significant digits, thousands separated. */
export function fmt(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return '—';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}
