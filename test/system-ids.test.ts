/**
 * XState's system is shared by a root and all its descendants: an actor spawned
 * or invoked with a `systemId` is found by `system.get` from any actor of the
 * tree (a sibling, a cousin, an ancestor) until it stops or finishes. A durable
 * tree is many durable actors; each script here runs on plain XState and on
 * durable actors (memory, and SQLite closed and recovered where it says
 * RESTART), and the whole tree must end the same at every level. Before
 * src/durable/system-ids.ts, a durable actor found only its own children: the
 * sibling's send went to the sender itself, and the counter never heard it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import {
  assign,
  createActor,
  raise,
  sendParent,
  sendTo,
  setup,
  spawnChild,
  stopChild,
  type AnyActorRef,
} from 'xstate';
import {
  createDurableActor,
  defineChart,
  getRuntime,
  ManualClock,
  openDurableActor,
  openStore,
  recover,
  verify,
  type Store,
} from '../src/index.ts';
import { durableTree, plainTree } from './support/trees.ts';

type Ping = { type: 'PING'; from: string };
type Ev = Ping | { type: string };

/** Holds the system id: counts the pings it gets, tells its parent, finishes on STOP. */
const counter = setup({
  types: { context: {} as { from: string[] }, events: {} as Ev },
}).createMachine({
  id: 'counter',
  context: { from: [] },
  initial: 'on',
  states: {
    on: {
      on: {
        PING: {
          actions: [
            assign({ from: ({ context, event }) => [...context.from, (event as Ping).from] }),
            sendParent({ type: 'COUNTED' }),
          ],
        },
        STOP: 'off',
      },
    },
    off: { type: 'final' },
  },
});

const toCounter = ({ system }: { system: { get(id: string): AnyActorRef | undefined } }) =>
  system.get('counter') as AnyActorRef;
const toBoss = ({ system }: { system: { get(id: string): AnyActorRef | undefined } }) =>
  system.get('boss') as AnyActorRef;
const toGamma = ({ system }: { system: { get(id: string): AnyActorRef | undefined } }) =>
  system.get('gamma') as AnyActorRef;

/** A sibling of the counter: pings it by system id on start, on CALL, and 100 ms after LATER. */
const caller = setup({
  types: { context: {} as { own: number }, events: {} as Ev },
  actors: { counter },
}).createMachine({
  id: 'caller',
  context: { own: 0 },
  entry: sendTo(toCounter, { type: 'PING', from: 'caller-entry' }),
  on: {
    CALL: { actions: sendTo(toCounter, { type: 'PING', from: 'caller' }) },
    LATER: { actions: sendTo(toCounter, { type: 'PING', from: 'caller-later' }, { delay: 100 }) },
    ASK: { actions: sendTo(toGamma, { type: 'PING', from: 'cousin' }) },
    // The root, by the system id it was created with.
    BOSS: { actions: sendTo(toBoss, { type: 'PING', from: 'caller' }) },
    // A second actor under the counter's system id: XState refuses it, the step throws.
    DUP: { actions: spawnChild('counter', { id: 'dup', systemId: 'counter' }) },
    TELL_ROOT_DUP: { actions: sendParent({ type: 'ROOT_DUP' }) },
    // With nothing under the id, XState sends to the sender itself.
    PING: { actions: assign({ own: ({ context }) => context.own + 1 }) },
    COUNTED: {},
  },
});

/** Invokes a counter of its own under system id `gamma` (a grandchild of the root). */
const holder = setup({ actors: { counter } }).createMachine({
  id: 'holder',
  invoke: { id: 'g', src: 'counter', systemId: 'gamma' },
  on: { COUNTED: { actions: sendParent({ type: 'G_COUNTED' }) } },
});

/** Appends `label` to the root's log (cast: built outside the root's `setup`). */
const note = (label: string) =>
  assign({
    log: ({ context }: { context: { log: string[] } }) => [...context.log, label],
  }) as never;

const root = setup({
  types: { context: {} as { log: string[] }, events: {} as Ev },
  actors: { counter, caller, holder },
}).createMachine({
  id: 'sys-root',
  context: { log: [] },
  entry: spawnChild('counter', { id: 'c', systemId: 'counter' }),
  on: {
    SPAWN_CALLER: { actions: spawnChild('caller', { id: 'b' }) },
    CALL: { actions: sendTo('b', { type: 'CALL' }) },
    LATER: { actions: sendTo('b', { type: 'LATER' }) },
    ASK: { actions: sendTo('b', { type: 'ASK' }) },
    BOSS: { actions: sendTo('b', { type: 'BOSS' }) },
    DUP: { actions: sendTo('b', { type: 'DUP' }) },
    // Its own second child under the id its first holds.
    ROOT_DUP: { actions: spawnChild('counter', { id: 'c2', systemId: 'counter' }) },
    HOLD: { actions: spawnChild('holder', { id: 'h' }) },
    // The root finds its grandchild.
    DIRECT: { actions: sendTo(toGamma, { type: 'PING', from: 'root' }) },
    STOP_COUNTER: { actions: stopChild('c') },
    // Another counter under the id: XState's new actor, a durable one's next life.
    RESPAWN_COUNTER: {
      actions: [stopChild('c'), spawnChild('counter', { id: 'c', systemId: 'counter' })],
    },
    FINISH_COUNTER: { actions: sendTo('c', { type: 'STOP' }) },
    COUNTED: { actions: note('counted') },
    G_COUNTED: { actions: note('g-counted') },
    'xstate.done.actor.c': { actions: note('c-done') },
    PING: { actions: note('root-pinged') },
    // A step that fails after it stopped the counter and spawned another under its
    // system id (a timer's event: a caller's would be refused, not fail the actor).
    BREAK: { actions: raise({ type: 'CRASH' }, { delay: 50 }) },
    CRASH: {
      actions: [
        stopChild('c'),
        spawnChild('counter', { id: 'c', systemId: 'counter' }),
        assign(() => {
          throw new Error('crash');
        }),
      ],
    },
    // The same, having only stopped it.
    BREAK_STOP: { actions: raise({ type: 'CRASH_STOP' }, { delay: 50 }) },
    CRASH_STOP: {
      actions: [
        stopChild('c'),
        assign(() => {
          throw new Error('crash');
        }),
      ],
    },
  },
});

const chart = defineChart(root);

const scripts = [
  // A sibling, on its start and later.
  'SPAWN_CALLER CALL CALL',
  // A delayed send by system id is a timer to the sibling.
  'SPAWN_CALLER LATER WAIT CALL',
  // The root finds its grandchild; a cousin finds it too.
  'HOLD DIRECT SPAWN_CALLER ASK DIRECT',
  // Stopped: no longer found, the send goes to the sender itself.
  'SPAWN_CALLER STOP_COUNTER CALL',
  // Finished: no longer found either.
  'SPAWN_CALLER FINISH_COUNTER CALL',
  // A delayed send to a counter stopped before it fires.
  'SPAWN_CALLER LATER STOP_COUNTER WAIT CALL',
  // A delayed send to a counter stopped and spawned again before it fires: XState's
  // scheduler holds the stopped one, so the new one never gets it. Made to the new
  // one, it reaches it; made in its second life and due in its third, it does not.
  'SPAWN_CALLER LATER RESPAWN_COUNTER WAIT CALL',
  'SPAWN_CALLER RESPAWN_COUNTER LATER WAIT CALL',
  'SPAWN_CALLER RESPAWN_COUNTER LATER RESPAWN_COUNTER WAIT CALL',
  'SPAWN_CALLER FINISH_COUNTER RESPAWN_COUNTER LATER WAIT',
  // Asked for before anything holds the id.
  'STOP_COUNTER SPAWN_CALLER ASK HOLD ASK',
  // The root fails in a step that had stopped the counter and spawned another
  // under its id: XState had run both (the new one never starts), so the
  // sibling's send is lost, and the old counter runs on without its id.
  'SPAWN_CALLER BREAK WAIT b:CALL c:STOP',
  // Having only stopped it: the id is free, and the send goes to the sender.
  'SPAWN_CALLER BREAK_STOP WAIT b:CALL',
  // The root's own system id (createActor's `systemId` option).
  'SPAWN_CALLER BOSS BOSS',
  // A system id taken twice: a sibling's spawn fails the sibling, the root's own
  // second child fails the root (both on a message: a caller's event would be
  // refused instead); once the counter is stopped, the id is free again.
  'SPAWN_CALLER DUP',
  'SPAWN_CALLER b:TELL_ROOT_DUP',
  'STOP_COUNTER SPAWN_CALLER DUP',
];

const dir = mkdtempSync(join(tmpdir(), 'agentcharts-system-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `script` on plain XState and on a durable tree; the trees must end the same. */
async function runBoth(script: string, open: () => Store, restartable: boolean): Promise<Store> {
  const clock = new ManualClock(1_000_000);
  const plain = createActor(root, { clock, systemId: 'boss' });
  plain.subscribe({ error: () => {} }); // a failed root is an outcome here, not a crash
  plain.start();
  let store = open();
  getRuntime(store, { clock, charts: [chart] });
  await createDurableActor(root, { id: 'r', store, schemas: false, systemId: 'boss' });
  await getRuntime(store).drain();
  for (const step of script.split(' ')) {
    if (step === 'WAIT') {
      clock.advance(100);
      await getRuntime(store).drain();
      continue;
    }
    if (step === 'RESTART') {
      expect(restartable).toBe(true);
      await getRuntime(store).close();
      await store.close();
      store = open();
      getRuntime(store, { clock, charts: [chart] });
      await recover(store, { charts: [chart] });
      await getRuntime(store).drain();
      continue;
    }
    // `<child>:<event>` goes to the root's child itself (a failed root takes nothing).
    const [child, type] = step.includes(':') ? step.split(':') : [undefined, step];
    const target =
      child === undefined ? plain : (plain.getSnapshot().children[child] as AnyActorRef);
    target.send({ type: type });
    await (
      await openDurableActor(store, child === undefined ? 'r' : `r/${child}`)
    ).send({
      type: type,
    });
    await getRuntime(store).drain();
  }
  expect(await durableTree(store, 'r')).toEqual(plainTree(plain));
  expect((await verify(store, { charts: [chart] })).problems).toEqual([]);
  return store;
}

describe('a system id is found anywhere in the tree, as in plain XState', () => {
  test.each(scripts)('%s', async (script) => {
    const store = await runBoth(script, () => openStore('memory:'), false);
    await getRuntime(store).close();
    await store.close();
  });

  test.each([
    'SPAWN_CALLER RESTART CALL HOLD RESTART ASK DIRECT',
    'SPAWN_CALLER RESTART BOSS',
    'SPAWN_CALLER LATER RESTART WAIT CALL',
    'SPAWN_CALLER LATER RESPAWN_COUNTER RESTART WAIT CALL',
    'SPAWN_CALLER LATER RESTART RESPAWN_COUNTER WAIT CALL',
    'SPAWN_CALLER RESPAWN_COUNTER LATER RESTART WAIT CALL',
  ])('on SQLite, across restarts: %s', async (script) => {
    const file = join(dir, `${script.replaceAll(' ', '-')}.db`);
    const store = await runBoth(script, () => openStore(`sqlite:${file}`), true);
    await getRuntime(store).close();
    await store.close();
  });

  test('the control: the sibling reaches the counter, and the row records where it found it', async () => {
    const clock = new ManualClock(1_000_000);
    const plain = createActor(root, { clock }).start();
    plain.send({ type: 'SPAWN_CALLER' });
    plain.send({ type: 'CALL' });
    expect(plain.getSnapshot().context.log).toEqual(['counted', 'counted']);
    const counted = (plain.getSnapshot().children['c'] as AnyActorRef).getSnapshot() as {
      context: unknown;
    };
    expect(counted.context).toEqual({ from: ['caller-entry', 'caller'] });

    const store = await runBoth('SPAWN_CALLER CALL', () => openStore('memory:'), false);
    const log = (await store.readActorLog('r/b'))?.rows ?? [];
    const metadata = log.map((row) => JSON.parse(row.metadata) as { systemIds?: unknown });
    expect(metadata.map((m) => m.systemIds)).toEqual([{ counter: 'r/c' }, { counter: 'r/c' }]);
    await getRuntime(store).close();
    await store.close();
  });
});

describe('an actor found by its system id while its parent stops it and spawns it again', () => {
  /** Counts PONGs; on GO it sends PONG to whoever holds `sys` (itself, until replaced). */
  const echo = setup({
    types: { context: {} as { pongs: number }, events: {} as Ev },
  }).createMachine({
    id: 'echo',
    context: { pongs: 0 },
    on: {
      GO: {
        actions: sendTo(({ system }) => system.get('sys') as AnyActorRef, { type: 'PONG' }),
      },
      PONG: { actions: assign({ pongs: ({ context }) => context.pongs + 1 }) },
    },
  });
  /** RESPAWN: GO to `sys` (the child), then stops the child and spawns it again under `sys`. */
  const parent = setup({ actors: { echo }, types: { events: {} as Ev } }).createMachine({
    id: 'echo-parent',
    entry: spawnChild('echo', { id: 'k', systemId: 'sys' }),
    on: {
      GO_ONLY: {
        actions: sendTo(({ system }) => system.get('sys') as AnyActorRef, { type: 'GO' }),
      },
      RESPAWN: {
        actions: [
          sendTo(({ system }) => system.get('sys') as AnyActorRef, { type: 'GO' }),
          stopChild('k'),
          spawnChild('echo', { id: 'k', systemId: 'sys' }),
        ],
      },
    },
  });

  test("the old child's send by system id, in the step its parent's GO sets off, reaches the new child, as in plain XState", async () => {
    // soak:diff seed 48201 (memory, with poller passes), case 14,521: XState's
    // `system.get` finds the new child from the spawning step on, so the old one's
    // PONG, sent while it takes GO before its stop, is the new one's first event.
    const plain = createActor(parent).start();
    plain.send({ type: 'RESPAWN' });
    const kid = (plain.getSnapshot().children['k'] as AnyActorRef).getSnapshot() as {
      context: unknown;
    };
    expect(kid.context).toEqual({ pongs: 1 });

    const store = openStore('memory:');
    const actor = await createDurableActor(parent, { id: 'e', store });
    await actor.send({ type: 'RESPAWN' });
    await getRuntime(store).drain();
    expect((await store.history('e/k')).map((r) => r.eventType)).toEqual([
      'xstate.init',
      'GO',
      'xstate.stop',
      'xstate.init',
      'PONG',
    ]);
    expect((await openDurableActor(store, 'e/k')).getSnapshot().context).toEqual({ pongs: 1 });
    expect((await verify(store, { charts: [defineChart(parent)] })).problems).toEqual([]);
    // Control: with no respawn, GO's PONG reaches the child itself.
    plain.send({ type: 'GO_ONLY' });
    const again = (plain.getSnapshot().children['k'] as AnyActorRef).getSnapshot() as {
      context: unknown;
    };
    expect(again.context).toEqual({ pongs: 2 });
    await actor.send({ type: 'GO_ONLY' });
    await getRuntime(store).drain();
    expect((await openDurableActor(store, 'e/k')).getSnapshot().context).toEqual({ pongs: 2 });
    await getRuntime(store).close();
    await store.close();
  });

  test("after a crash, the old child's PONG left pending still reaches the new child: its row records it went by system id", async () => {
    // The process dies as the old child's step that takes GO commits: its PONG,
    // which waited for the new child's spawn, is left pending with the spawn.
    const file = join(dir, 'crash-respawn.db');
    const gone = openStore(`sqlite:${file}`);
    const runtime = getRuntime(gone);
    const commit = gone.commit.bind(gone);
    gone.commit = (writes) => {
      const answers = writes.some((w) => w.actorId === 'e/k' && (w.messagesOut?.length ?? 0) > 0);
      if (answers) runtime.courier.close(); // nothing more is delivered: the process dies
      return commit(writes);
    };
    const actor = await createDurableActor(parent, { id: 'e', store: gone, schemas: false });
    await runtime.drain();
    await actor.send({ type: 'RESPAWN' });
    await runtime.drain();
    const left = await gone.pendingMessages({ limit: 10 });
    expect(left.filter((m) => m.from === 'e/k').map((m) => m.body)).toEqual(['{"type":"PONG"}']);
    await runtime.close();
    await gone.close();

    const store = openStore(`sqlite:${file}`);
    await recover(store, { charts: [defineChart(parent)] });
    await getRuntime(store).drain();
    const history = (await store.history('e/k')).map((r) => r.eventType);
    expect(history).toEqual(['xstate.init', 'GO', 'xstate.stop', 'xstate.init', 'PONG']);
    expect((await openDurableActor(store, 'e/k')).getSnapshot().context).toEqual({ pongs: 1 });
    const go = (await store.history('e/k')).find((r) => r.eventType === 'GO');
    expect(JSON.parse(go?.metadata ?? '{}')).toMatchObject({ bySystemId: [0] });
    expect((await verify(store, { charts: [defineChart(parent)] })).problems).toEqual([]);
    await getRuntime(store).close();
    await store.close();
  });
});
