/**
 * Three levels of actors, as document 004's team variant nests them: a root
 * invokes a child machine that invokes a machine of its own (and then a promise).
 * Every level is a durable actor; each script runs on plain XState and on durable
 * actors (SQLite, closed and recovered where it says RESTART), and the whole tree
 * must end the same: state, context, status, output and children at every level.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { assign, createActor, fromPromise, sendParent, sendTo, setup } from 'xstate';
import {
  createDurableActor,
  defineChart,
  getRuntime,
  openDurableActor,
  openStore,
  recover,
  verify,
} from '../src/index.ts';
import { settlePlain, settleStore } from './support/differential.ts';
import { durableTree, plainTree } from './support/trees.ts';

type Ev = { type: string; n?: number };

const grand = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'TICK' } | { type: 'END' } },
}).createMachine({
  id: 'grand',
  context: { n: 0 },
  entry: sendParent({ type: 'G_HELLO' }),
  initial: 'on',
  states: {
    on: {
      on: {
        TICK: {
          actions: [
            assign({ n: ({ context }) => context.n + 1 }),
            sendParent(({ context }) => ({ type: 'G_TICK', n: context.n })),
          ],
        },
        END: 'off',
      },
    },
    off: { type: 'final' },
  },
  output: ({ context }) => ({ n: context.n }),
});

const kid = setup({
  types: { context: {} as { log: string[]; grand: unknown }, events: {} as Ev },
  actors: { grand, job: fromPromise(() => Promise.resolve(7)) },
}).createMachine({
  id: 'kid',
  context: { log: [], grand: null },
  entry: sendParent({ type: 'K_HELLO' }),
  initial: 'a',
  states: {
    a: {
      invoke: {
        id: 'g',
        src: 'grand',
        onDone: { target: 'b', actions: assign({ grand: ({ event }) => event.output }) },
      },
      on: {
        G_HELLO: {
          actions: [
            assign({ log: ({ context }) => [...context.log, 'gh'] }),
            sendParent({ type: 'K_GH' }),
          ],
        },
        G_TICK: {
          actions: assign({ log: ({ context, event }) => [...context.log, `gt${event.n}`] }),
        },
        TICK: { actions: sendTo('g', { type: 'TICK' }) },
        END: { actions: sendTo('g', { type: 'END' }) },
        QUIT: 'c',
      },
    },
    b: { invoke: { id: 'j', src: 'job', onDone: 'c' } },
    c: { type: 'final' },
  },
  output: ({ context }) => ({ log: context.log, grand: context.grand }),
});

const root = setup({
  types: { context: {} as { log: string[]; kid: unknown }, events: {} as Ev },
  actors: { kid },
}).createMachine({
  id: 'team',
  context: { log: [], kid: null },
  initial: 'idle',
  states: {
    idle: { on: { GO: 'busy' } },
    busy: {
      invoke: {
        id: 'k',
        src: 'kid',
        onDone: { target: 'done', actions: assign({ kid: ({ event }) => event.output }) },
      },
      on: {
        K_HELLO: { actions: assign({ log: ({ context }) => [...context.log, 'kh'] }) },
        K_GH: { actions: assign({ log: ({ context }) => [...context.log, 'kgh'] }) },
        TICK: { actions: sendTo('k', { type: 'TICK' }) },
        END: { actions: sendTo('k', { type: 'END' }) },
        QUIT: { actions: sendTo('k', { type: 'QUIT' }) },
        ABANDON: 'idle',
        FIN: 'done',
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => context,
});

const chart = defineChart(root);

const dir = mkdtempSync(join(tmpdir(), 'agentcharts-grandchildren-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const scripts = [
  'GO TICK TICK END',
  'GO TICK ABANDON',
  'GO TICK ABANDON GO TICK',
  'GO QUIT',
  'GO TICK QUIT GO',
  'GO TICK FIN',
  'GO TICK RESTART TICK ABANDON RESTART GO RESTART TICK END',
  'GO RESTART FIN RESTART',
];

describe('a child machine with a child machine of its own ends as in plain XState', () => {
  test.each(scripts)('%s', async (script) => {
    const plain = createActor(root).start();
    const file = join(dir, `${script.replaceAll(' ', '-')}.db`);
    let store = openStore(`sqlite:${file}`);
    getRuntime(store, { charts: [chart] });
    await createDurableActor(root, { id: 'team', store, schemas: false });
    await settleStore(store);
    for (const type of script.split(' ')) {
      if (type === 'RESTART') {
        await getRuntime(store).close();
        await store.close();
        store = openStore(`sqlite:${file}`);
        await recover(store, { charts: [chart] });
        await settleStore(store);
        continue;
      }
      plain.send({ type });
      await settlePlain();
      const actor = await openDurableActor(store, 'team');
      // A durable actor refuses a caller's event its state does not take; XState ignores it.
      if (actor.getSnapshot().can({ type })) await actor.send({ type });
      await settleStore(store);
    }
    expect(await durableTree(store, 'team')).toEqual(plainTree(plain));
    expect((await verify(store, { charts: [chart] })).problems).toEqual([]);
    await getRuntime(store).close();
    await store.close();
  });

  test('the control: a script that reaches the grandchild changes all three levels', async () => {
    const plain = createActor(root).start();
    for (const type of ['GO', 'TICK', 'TICK']) plain.send({ type });
    await settlePlain();
    const tree = plainTree(plain);
    expect(tree).toMatchObject({
      context: { log: ['kh', 'kgh'] },
      children: {
        k: { context: { log: ['gh', 'gt1', 'gt2'] }, children: { g: { context: { n: 2 } } } },
      },
    });
  });
});
