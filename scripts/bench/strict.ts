/**
 * In-memory strict send against bare XState: the same machine (task-lifecycle),
 * the same events (the running ⇄ paused approval cycle), `createStrictActor(...).send`
 * versus `createActor(...).send`. Trials alternate between the two so JIT and GC
 * state favour neither.
 */
import { createActor, type EventObject } from 'xstate';
import { catalog } from '../../machines/index.ts';
import { createStrictActor } from '../../src/strict/strict-actor.ts';
import {
  judge,
  now,
  pairedFigures,
  type BenchOptions,
  type BenchRow,
  type PairedBlock,
} from './common.ts';

const chart = catalog['task-lifecycle'];
const CYCLE: readonly EventObject[] = [
  chart.eventSamples.PAUSE_FOR_APPROVAL?.[0] as EventObject,
  chart.eventSamples.APPROVAL_GRANTED?.[0] as EventObject,
];
const input = { taskId: 'bench-strict' };

/** Sends `n` cycle events starting at `offset`; returns the elapsed ms. */
function timed(send: (event: EventObject) => unknown, offset: number, n: number): number {
  const start = now();
  for (let i = offset; i < offset + n; i++) send(CYCLE[i % 2] as EventObject);
  return now() - start;
}

export function benchStrict(options: BenchOptions): BenchRow {
  const perBlock = 500;
  const blocks = options.quick ? 30 : 150;
  const bare = createActor(chart.machine, { input }).start();
  const strict = createStrictActor(chart.machine, { input }).start();
  bare.send({ type: 'START' });
  strict.send({ type: 'START' });
  const sendBare = (event: EventObject) => bare.send(event as never);
  const sendStrict = (event: EventObject) => strict.send(event as never);
  // Warm both paths, then alternate blocks so drift in CPU share hits both alike.
  timed(sendBare, 0, 10 * perBlock);
  timed(sendStrict, 0, 10 * perBlock);
  const pairs: PairedBlock[] = [];
  for (let b = 0; b < blocks; b++) {
    const baseMs = timed(sendBare, b * perBlock, perBlock);
    const oursMs = timed(sendStrict, b * perBlock, perBlock);
    pairs.push({ count: perBlock, oursMs, baseMs });
  }
  bare.stop();
  strict.stop();
  const figures = pairedFigures(pairs);
  options.log(
    `  strict: ours ${figures.value.toFixed(0)}/s, bare XState ${figures.baseline.toFixed(0)}/s, ratio ${figures.ratio.toFixed(2)}`,
  );
  return judge({
    id: 'strict-send',
    name: 'strict in-memory send',
    unit: 'events/s',
    value: figures.value,
    baseline: figures.baseline,
    baselineName: 'bare XState createActor().send, same machine and events',
    ratio: figures.ratio,
    target: { on: 'ratio', op: '>=', value: 0.85 },
    details: { events: blocks * perBlock, blocks: figures.blocks },
  });
}
