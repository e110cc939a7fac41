/**
 * XState's actor model made durable, measured on SQLite (synchronous=FULL):
 *
 * - an invoke round trip — entering a state that invokes a promise, the promise
 *   settling, its `xstate.done.actor.*` event committed — against its natural
 *   baseline, two plain durable sends (in, and out again) on the same disk;
 * - a parent spawning 100 child machines that each finish at once, until the
 *   parent has received all 100 completions (each a durable message written in
 *   the child's commit and consumed in the parent's): time per child.
 *
 * Both are reported for information (the issue sets no target).
 */
import { join } from 'node:path';
import { assign, fromPromise, setup, spawnChild, type AnyStateMachine } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import { createDurableActor, getRuntime } from '../../src/index.ts';
import { openStore } from '../../src/store/open.ts';
import type { Store } from '../../src/store/types.ts';
import { judge, now, type BenchOptions, type BenchRow } from './common.ts';

const invoker = setup({
  actors: { call: fromPromise(() => Promise.resolve(1)) },
}).createMachine({
  id: 'bench-invoke',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'working' } },
    working: { invoke: { src: 'call', onDone: 'idle' } },
  },
});

const twoSends = setup({
  types: { events: {} as { type: 'GO' } | { type: 'DONE' } },
}).createMachine({
  id: 'bench-two-sends',
  initial: 'idle',
  states: { idle: { on: { GO: 'working' } }, working: { on: { DONE: 'idle' } } },
});

const CHILDREN = 100;
const child = setup({ types: { input: {} as { n: number } } }).createMachine({
  id: 'bench-child',
  initial: 'done',
  context: ({ input }) => ({ n: input.n }),
  states: { done: { type: 'final' } },
  output: ({ context }) => context.n,
});
const parent = setup({
  types: { context: {} as { finished: number } },
  actors: { child },
}).createMachine({
  id: 'bench-parent',
  initial: 'idle',
  context: { finished: 0 },
  states: {
    idle: { on: { GO: 'fanout' } },
    fanout: {
      entry: Array.from({ length: CHILDREN }, (_, n) =>
        spawnChild('child', { id: `c${n}`, input: { n } }),
      ),
      on: {
        'xstate.done.actor.*': {
          actions: assign({ finished: ({ context }) => context.finished + 1 }),
        },
      },
      always: { guard: ({ context }) => context.finished === CHILDREN, target: 'finished' },
    },
    finished: { type: 'final' },
  },
});

/** A store for one figure: a SQLite file in the run's directory, or the URL given. */
function open(dir: string, name: string, machines: AnyStateMachine[], url?: string): Store {
  const store = openStore(url ?? `sqlite:${join(dir, `${name}.db`)}`);
  getRuntime(store, { charts: machines.map((machine) => defineChart(machine)) });
  return store;
}

async function close(store: Store): Promise<void> {
  await getRuntime(store).close();
  await store.close();
}

export async function benchInvoke(options: BenchOptions): Promise<BenchRow> {
  const blocks = options.quick ? 4 : 20;
  const perBlock = 50;
  const oursStore = open(options.dir, 'invoke', [invoker]);
  const baseStore = open(options.dir, 'two-sends', [twoSends]);
  const ours = await createDurableActor(invoker, { id: 'inv', store: oursStore });
  const base = await createDurableActor(twoSends, { id: 'two', store: baseStore });
  const runtime = getRuntime(oursStore);
  let oursMs = 0;
  let baseMs = 0;
  try {
    for (let b = 0; b < blocks + 1; b++) {
      let start = now();
      for (let i = 0; i < perBlock; i++) {
        await base.send({ type: 'GO' });
        await base.send({ type: 'DONE' });
      }
      const baseBlock = now() - start;
      start = now();
      for (let i = 0; i < perBlock; i++) {
        await ours.send({ type: 'GO' });
        await runtime.drain();
        if (ours.state !== 'idle') throw new Error(`invoke did not settle: ${ours.state}`);
      }
      const oursBlock = now() - start;
      // The first block warms both paths.
      if (b > 0) {
        baseMs += baseBlock;
        oursMs += oursBlock;
      }
    }
  } finally {
    await close(oursStore);
    await close(baseStore);
  }
  const n = blocks * perBlock;
  const value = (n / oursMs) * 1000;
  const baseline = (n / baseMs) * 1000;
  options.log(
    `  invoke round trip: ${value.toFixed(0)}/s, two plain sends ${baseline.toFixed(0)}/s, ratio ${(value / baseline).toFixed(2)}`,
  );
  return judge({
    id: 'invoke-round-trip',
    name: 'invoke round trip (SQLite FULL)',
    unit: 'round trips/s',
    value,
    baseline,
    baselineName: 'two plain durable sends (into the state, out of it)',
    ratio: value / baseline,
    details: { roundTrips: n, msPerRoundTrip: oursMs / n },
  });
}

/** `storeUrl`: another store than the run's SQLite file (`npm run bench:postgres`). */
export async function benchChildren(
  options: BenchOptions,
  storeUrl?: string,
  label = 'SQLite FULL',
): Promise<BenchRow> {
  const runs = options.quick ? 2 : 6;
  const store = open(options.dir, 'children', [parent], storeUrl);
  const runtime = getRuntime(store);
  const perChildMs: number[] = [];
  try {
    for (let r = 0; r < runs + 1; r++) {
      const actor = await createDurableActor(parent, { id: `parent-${r}`, store });
      const start = now();
      await actor.send({ type: 'GO' });
      for (let i = 0; i < 10_000; i++) {
        await runtime.drain();
        if ((await store.loadActor(actor.id))?.status === 'done') break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const ms = now() - start;
      const row = await store.loadActor(actor.id);
      if (row?.status !== 'done') throw new Error(`parent did not finish: ${row?.state}`);
      if (r > 0) perChildMs.push(ms / CHILDREN);
    }
  } finally {
    await close(store);
  }
  const value = perChildMs.reduce((a, b) => a + b, 0) / perChildMs.length;
  options.log(
    `  parent → ${CHILDREN} children → all done (${label}): ${value.toFixed(3)} ms per child`,
  );
  return judge({
    id: storeUrl === undefined ? 'children-fan-out' : 'postgres-children-fan-out',
    name: `parent → ${CHILDREN} children → all done (${label})`,
    unit: 'ms per child',
    value,
    details: {
      runs,
      perChildMs,
      // Per child: its creation (consuming the spawn message), its completion
      // message, and the parent's commit consuming it.
      commitsPerChild: 2,
    },
  });
}
