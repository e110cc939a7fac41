/**
 * The `self` a durable actor's user actions, guards and `assign`s see is the
 * actor's, as in `createActor(machine)`: `self.send` from an action reaches the
 * actor (during the step: right after it, ahead of what was queued since; later:
 * as a caller's send), and `self.getSnapshot()` gives what XState gives. Each
 * case runs plain XState beside the durable actor and compares them; each failed
 * before the fix (the action's `self` was XState's inert stand-in).
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  assign,
  createActor,
  fromPromise,
  sendTo,
  setup,
  waitFor,
  type AnyStateMachine,
} from 'xstate';
import {
  createDurableActor,
  defineChart,
  eventSchema,
  getRuntime,
  openDurableActor,
  openStore,
  recover,
  verify,
} from '../src/index.ts';
import { closedAfterEach } from './support/stores.ts';
import { suiteTempDir } from './support/temp-dir.ts';
import * as z from 'zod';

const dir = suiteTempDir('agentcharts-action-self-');
/** A store the test closes (its runtime first). */
const track = closedAfterEach();

/** The parts of a snapshot the comparison holds to. */
function view(snapshot: { value: unknown; context: unknown; status: string }) {
  return { value: snapshot.value, context: snapshot.context, status: snapshot.status };
}

/** `a --GO--> b` (its action pokes itself), `b --PING--> c`. */
const poking = setup({
  types: { context: {} as { pings: number; seen: unknown; log: string[] } },
  actions: {
    poke: ({ self }) => self.send({ type: 'PING' }),
  },
}).createMachine({
  id: 'poking',
  initial: 'a',
  context: { pings: 0, seen: null, log: [] },
  states: {
    a: {
      on: {
        GO: {
          target: 'b',
          actions: [
            assign({ seen: ({ self }) => (self.getSnapshot() as { value: unknown }).value }),
            'poke',
          ],
        },
      },
    },
    b: {
      on: {
        PING: { target: 'c', actions: assign({ pings: ({ context }) => context.pings + 1 }) },
        OTHER: { actions: assign({ log: ({ context }) => [...context.log, 'other in b'] }) },
      },
    },
    c: {
      on: { OTHER: { actions: assign({ log: ({ context }) => [...context.log, 'other in c'] }) } },
    },
  },
});

describe("a user action's self.send", () => {
  test('during the step: taken right after it, as XState takes it (SQLite, then verify)', async () => {
    const plain = createActor(poking).start();
    plain.send({ type: 'GO' });

    const store = track(openStore(`sqlite:${join(dir(), 'poke.db')}`));
    const actor = await createDurableActor(poking, { id: 'p1', store, schemas: false });
    const after = await actor.send({ type: 'GO' });
    expect(view(after)).toEqual(view(plain.getSnapshot()));
    expect(view(actor.getSnapshot())).toEqual({
      value: 'c',
      context: { pings: 1, seen: 'a', log: [] },
      status: 'active',
    });
    const rows = await store.history('p1');
    expect(rows.map((r) => r.eventType)).toEqual(['xstate.init', 'GO', 'PING']);
    expect(JSON.parse(rows[2]?.metadata ?? '{}')).toEqual({ source: 'message', by: 'self' });
    expect((await verify(store, { charts: [defineChart(poking)] })).problems).toEqual([]);
  });

  test("ahead of a caller's event sent together with the step's (XState's mailbox order)", async () => {
    const plain = createActor(poking).start();
    plain.send({ type: 'GO' });
    plain.send({ type: 'OTHER' });

    const store = track(openStore('memory:'));
    const actor = await createDurableActor(poking, { id: 'p2', store, schemas: false });
    // Not awaited one by one: OTHER is queued while GO commits.
    await Promise.all([actor.send({ type: 'GO' }), actor.send({ type: 'OTHER' })]);
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    expect(actor.getSnapshot().context.log).toEqual(['other in c']);
  });

  test("from the initial state's entry: taken before createDurableActor resolves", async () => {
    const entry = setup({
      types: { context: {} as { n: number } },
      actions: { hello: ({ self }) => self.send({ type: 'NEXT' }) },
    }).createMachine({
      id: 'entry-poke',
      initial: 'one',
      context: { n: 0 },
      states: {
        one: { entry: 'hello', on: { NEXT: 'two' } },
        two: { entry: assign({ n: 2 }) },
      },
    });
    const plain = createActor(entry).start();
    const store = track(openStore('memory:'));
    const actor = await createDurableActor(entry, { id: 'e1', store, schemas: false });
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    expect(actor.getSnapshot().value).toBe('two');
  });

  test('later, from async work the action started: sent as a caller sends', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const later = setup({
      types: { context: {} as { answer: number } },
      actions: {
        fetchAnswer: ({ self }) => {
          void gate.then(() => self.send({ type: 'ANSWER', value: 42 }));
        },
      },
    }).createMachine({
      id: 'later-poke',
      initial: 'idle',
      context: { answer: 0 },
      states: {
        idle: { on: { ASK: { target: 'waiting', actions: 'fetchAnswer' } } },
        waiting: {
          on: {
            ANSWER: {
              target: 'answered',
              actions: assign({ answer: ({ event }) => event.value }),
            },
          },
        },
        answered: {},
      },
    });
    const chart = defineChart(later, {
      events: {
        ASK: eventSchema('ASK'),
        ANSWER: eventSchema('ANSWER', { value: z.number() }),
      },
    });
    const store = track(openStore('memory:'));
    const actor = await createDurableActor(chart, { id: 'l1', store });
    await actor.send({ type: 'ASK' });
    expect(actor.getSnapshot().value).toBe('waiting');
    release();
    await gate;
    await getRuntime(store).drain();
    // drain() waits for what the runtime started; the send was queued from a callback.
    for (let i = 0; i < 20 && actor.getSnapshot().value !== 'answered'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(view(actor.getSnapshot())).toEqual({
      value: 'answered',
      context: { answer: 42 },
      status: 'active',
    });
    expect(JSON.parse((await store.history('l1')).at(-1)?.metadata ?? '{}') as unknown).toEqual({
      source: 'message',
      by: 'self',
    });
  });

  test("taken as the machine's own event: not held to the caller's schemas; one no state takes is dropped, one that throws fails the actor, as in XState", async () => {
    const own = setup({
      types: { context: {} as { got: unknown[] } },
      actions: {
        pokeAll: ({ self }) => {
          self.send({ type: 'NOPE' }); // named, but b does not take it: dropped
          self.send({ type: 'NUM', value: 'one' }); // breaks the callers' schema
          self.send({ type: 'NUM', value: 1 });
          self.send({ type: 'NEVER_NAMED' }); // no transition names it
          self.send({ type: 'BOOM' });
        },
      },
    }).createMachine({
      id: 'own-events',
      initial: 'a',
      context: { got: [] },
      states: {
        a: { on: { GO: { target: 'b', actions: 'pokeAll' }, NOPE: 'a' } },
        b: {
          on: {
            NUM: {
              actions: assign({ got: ({ context, event }) => [...context.got, event.value] }),
            },
            BOOM: {
              actions: assign(() => {
                throw new Error('boom');
              }),
            },
          },
        },
      },
    });
    const chart = defineChart(own, {
      events: {
        GO: eventSchema('GO'),
        NOPE: eventSchema('NOPE'),
        NUM: eventSchema('NUM', { value: z.number() }),
        BOOM: eventSchema('BOOM'),
      },
    });
    const plain = createActor(own);
    plain.subscribe({ error: () => {} }); // it fails on BOOM, as the durable actor does
    plain.start();
    plain.send({ type: 'GO' });

    const store = track(openStore('memory:'));
    const actor = await createDurableActor(chart, { id: 'k1', store });
    await actor.send({ type: 'GO' });
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    expect(actor.getSnapshot().status).toBe('error');
    expect(actor.getSnapshot().context.got).toEqual(['one', 1]);
    const rows = await store.history('k1');
    expect(rows.map((r) => [r.eventType, JSON.parse(r.metadata) as unknown])).toEqual([
      ['xstate.init', { source: 'create' }],
      ['GO', { source: 'send' }],
      ['NOPE', { source: 'message', dropped: true, by: 'self' }],
      ['NUM', { source: 'message', by: 'self' }],
      ['NUM', { source: 'message', by: 'self' }],
      ['BOOM', { source: 'message', by: 'self' }],
    ]);
    expect((await verify(store, { charts: [chart] })).problems).toEqual([]);
  });
});

describe('self.getSnapshot()', () => {
  test("in an action and an assign: XState's snapshot before the step", async () => {
    const seen: unknown[] = [];
    const reading = setup({
      types: { context: {} as { at: unknown } },
      actions: {
        note: ({ self }) => seen.push((self.getSnapshot() as { value: unknown }).value),
      },
    }).createMachine({
      id: 'reading',
      initial: 'a',
      context: { at: null },
      states: {
        a: {
          on: {
            GO: {
              target: 'b',
              actions: [assign({ at: ({ self }) => self.getSnapshot().value }), 'note'],
            },
          },
        },
        b: {},
      },
    });
    const plain = createActor(reading).start();
    plain.send({ type: 'GO' });
    const fromPlain = seen.splice(0);

    const store = track(openStore('memory:'));
    const actor = await createDurableActor(reading, { id: 'g1', store, schemas: false });
    await actor.send({ type: 'GO' });
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    expect(seen).toEqual(fromPlain);
    expect(seen).toEqual(['a']);
  });
});

describe('a restart', () => {
  test('the actor reopened from the store takes self.send the same way', async () => {
    const file = join(dir(), 'reopen.db');
    let store = openStore(`sqlite:${file}`);
    const first = await createDurableActor(poking, { id: 'r1', store, schemas: false });
    expect(first.getSnapshot().value).toBe('a');
    await getRuntime(store).close();
    await store.close();
    store = track(openStore(`sqlite:${file}`));
    getRuntime(store, { charts: [defineChart(poking)] });
    const again = await openDurableActor(store, 'r1');
    await again.send({ type: 'GO' });
    expect(again.getSnapshot().value).toBe('c');
  });
});

// A sendTo(self) is part of the commit; a self.send is an effect after it: both reach the actor.
test('sendTo(self) and self.send in one step both arrive, self.send first as in XState', async () => {
  const both = setup({
    types: { context: {} as { order: string[] } },
    actions: { direct: ({ self }) => self.send({ type: 'VIA_SEND' }) },
  }).createMachine({
    id: 'both',
    initial: 'a',
    context: { order: [] },
    states: {
      a: {
        on: {
          GO: {
            target: 'b',
            actions: [sendTo(({ self }) => self, { type: 'VIA_SENDTO' }), 'direct'],
          },
        },
      },
      b: {
        on: {
          VIA_SEND: { actions: assign({ order: ({ context }) => [...context.order, 'send'] }) },
          VIA_SENDTO: {
            actions: assign({ order: ({ context }) => [...context.order, 'sendTo'] }),
          },
        },
      },
    },
  });
  const plain = createActor(both as AnyStateMachine).start();
  plain.send({ type: 'GO' });
  const store = track(openStore('memory:'));
  const actor = await createDurableActor(both, { id: 'b1', store, schemas: false });
  await actor.send({ type: 'GO' });
  await getRuntime(store).drain();
  expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
});

describe("the initial state's self.send, at creation", () => {
  const starting = (selfFirst: boolean, promise: boolean) =>
    setup({
      types: {
        context: {} as { log: string[] },
        events: {} as { type: 'R1' } | { type: 'R2' },
      },
      actors: { quick: fromPromise(() => Promise.resolve(1)) },
      actions: {
        sendToSelf: sendTo(({ self }) => self, { type: 'R2' }),
        selfSend: ({ self }) => self.send({ type: 'R1' }),
        note: assign({
          log: ({ context }, params: { type: string }) => [...context.log, params.type],
        }),
      },
    }).createMachine({
      id: 'starting',
      context: { log: [] },
      initial: 'a',
      states: {
        a: {
          entry: selfFirst ? ['selfSend', 'sendToSelf'] : ['sendToSelf', 'selfSend'],
          ...(promise
            ? {
                invoke: {
                  src: 'quick',
                  onDone: { actions: { type: 'note', params: { type: 'DONE' } } },
                },
              }
            : {}),
          on: {
            R1: { actions: { type: 'note', params: { type: 'R1' } } },
            R2: { actions: { type: 'note', params: { type: 'R2' } } },
          },
        },
      },
    });

  test.each([
    [false, false],
    [true, false],
    [false, true],
    [true, true],
  ])(
    "taken before the entry's sendTo(self) and a promise's outcome at once, as XState takes them (self.send first: %s, promise: %s)",
    async (selfFirst, promise) => {
      const machine = starting(selfFirst, promise);
      const plain = createActor(machine).start();
      await new Promise((resolve) => setTimeout(resolve, 10));
      const store = track(openStore('memory:'));
      const actor = await createDurableActor(machine, { id: 's1', store, schemas: false });
      await getRuntime(store).drain({ invokes: 'settled' });
      await getRuntime(store).drain();
      expect(plain.getSnapshot().context.log).toEqual(
        promise ? ['R1', 'R2', 'DONE'] : ['R1', 'R2'],
      );
      expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    },
  );
});

/**
 * A promise given the invoking actor's `self` in its input reports progress to it,
 * as with XState: `input: ({ self }) => ({ parent: self })`, then
 * `input.parent.send(…)` from the promise. Before, the durable promise got the
 * pure transition's inert `self` (its sends went nowhere) and, run again after a
 * restart, the ref's JSON (no `send` at all: the promise rejected).
 */
describe("the invoking actor's self in a promise's input", () => {
  const reporting = (gate: { open: Promise<void> }) =>
    setup({
      types: {
        context: {} as { progress: number[] },
        events: {} as { type: 'PROGRESS'; n: number },
      },
      actors: {
        work: fromPromise<string, { parent: { send(e: { type: 'PROGRESS'; n: number }): void } }>(
          async ({ input }) => {
            input.parent.send({ type: 'PROGRESS', n: 1 });
            await gate.open;
            input.parent.send({ type: 'PROGRESS', n: 2 });
            return 'ok';
          },
        ),
      },
    }).createMachine({
      id: 'reporting',
      meta: { invokes: { work: { rerun: 'safe' } } },
      initial: 'working',
      context: { progress: [] },
      states: {
        working: {
          invoke: {
            id: 'work',
            src: 'work',
            input: ({ self }) => ({ parent: self }),
            onDone: 'done',
          },
          on: {
            PROGRESS: {
              actions: assign({ progress: ({ context, event }) => [...context.progress, event.n] }),
            },
          },
        },
        done: { type: 'final' },
      },
    });

  test('its sends reach the actor, in order, as in plain XState', async () => {
    const machine = reporting({ open: Promise.resolve() });
    const plain = createActor(machine).start();
    await waitFor(plain, (s) => s.status === 'done');

    const store = track(openStore('memory:'));
    const actor = await createDurableActor(machine, { id: 'w1', store, schemas: false });
    await getRuntime(store).drain({ invokes: 'settled' });
    await getRuntime(store).drain();
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
    expect(actor.getSnapshot().context.progress).toEqual([1, 2]);
    const sources = (await store.history('w1')).map(
      (r) => JSON.parse(r.metadata).by ?? r.eventType,
    );
    expect(sources).toEqual(['xstate.init', 'self', 'self', 'xstate.done.actor.work']);
    expect((await verify(store, { charts: [defineChart(machine)] })).problems).toEqual([]);
  });

  test('a promise still running: each send is taken as it is made, the outcome after them', async () => {
    let open = (): void => {};
    const gate = { open: new Promise<void>((resolve) => (open = resolve)) };
    const store = track(openStore('memory:'));
    const actor = await createDurableActor(reporting(gate), { id: 'w3', store, schemas: false });
    // Reported while the promise waits: taken now, not held for its outcome.
    // (drain() would wait for the promise itself.)
    for (let i = 0; i < 400 && actor.getSnapshot().context.progress.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(actor.getSnapshot().context.progress).toEqual([1]);
    expect(actor.getSnapshot().value).toBe('working');
    open();
    await getRuntime(store).drain({ invokes: 'settled' });
    await getRuntime(store).drain();
    expect(view(actor.getSnapshot())).toEqual({
      value: 'done',
      context: { progress: [1, 2] },
      status: 'done',
    });
  });

  test('run again after a restart, from the input the ledger kept', async () => {
    const file = join(dir(), 'reporting.db');
    const first = openStore(`sqlite:${file}`);
    first.finishStep = () => new Promise(() => {}); // dies before recording the outcome
    const machine = reporting({ open: Promise.resolve() });
    await createDurableActor(machine, { id: 'w2', store: first, schemas: false });
    for (let i = 0; i < 200 && (await first.getStep('w2:invoke:work:1'))?.attempts !== 1; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await getRuntime(first).close();

    const store = track(openStore(`sqlite:${file}`));
    const report = await recover(store, { charts: [defineChart(machine)] });
    expect(report.steps).toEqual([
      expect.objectContaining({ key: 'w2:invoke:work:1', outcome: 'rerun' }),
    ]);
    await getRuntime(store).drain({ invokes: 'settled' });
    await getRuntime(store).drain();
    const row = await store.loadActor('w2');
    expect(row?.state).toBe('done');
    // The first run settled at once, so its sends waited to be taken with its
    // outcome, and died with it; the rerun's are taken, before its outcome.
    expect(JSON.parse(row?.snapshot ?? '{}').context.progress).toEqual([1, 2]);
    const events = (await store.history('w2')).map((r) => r.eventType);
    expect(events).toEqual(['xstate.init', 'PROGRESS', 'PROGRESS', 'xstate.done.actor.work']);
    expect((await verify(store, { charts: [defineChart(machine)] })).problems).toEqual([]);
  });

  test("two promises' sends all come before the first outcome, as in XState: the one that leaves the state does not drop the other's", async () => {
    const sender = (type: string) =>
      fromPromise<number, { parent: { send(e: { type: string }): void } }>(({ input }) => {
        input.parent.send({ type });
        return Promise.resolve(1);
      });
    const machine = setup({
      types: { context: {} as { log: string[] } },
      actors: { p1: sender('FROM_P1'), p2: sender('FROM_P2') },
      actions: {
        note: assign({ log: ({ context, event }) => [...context.log, event.type] }),
      },
    }).createMachine({
      id: 'two-senders',
      context: { log: [] },
      initial: 'idle',
      states: {
        idle: { on: { GO: 'working' } },
        working: {
          invoke: [
            // p1's outcome leaves the state: FROM_P2 must have been taken before it.
            {
              id: 'p1',
              src: 'p1',
              input: ({ self }) => ({ parent: self }),
              onDone: { target: 'next', actions: 'note' },
            },
            {
              id: 'p2',
              src: 'p2',
              input: ({ self }) => ({ parent: self }),
              onDone: { actions: 'note' },
            },
          ],
          on: { FROM_P1: { actions: 'note' }, FROM_P2: { actions: 'note' } },
        },
        next: {},
      },
    });
    const plain = createActor(machine).start();
    plain.send({ type: 'GO' });
    await new Promise((resolve) => setTimeout(resolve, 20));

    const store = track(openStore('memory:'));
    const actor = await createDurableActor(machine, { id: 'two', store, schemas: false });
    await actor.send({ type: 'GO' });
    await getRuntime(store).drain({ invokes: 'settled' });
    await getRuntime(store).drain();
    expect(plain.getSnapshot().context.log).toEqual(['FROM_P1', 'FROM_P2', 'xstate.done.actor.p1']);
    expect(view(actor.getSnapshot())).toEqual(view(plain.getSnapshot()));
  });

  test('a send made after the runtime closed is lost, and so the run is: its outcome is not recorded, recovery runs it again', async () => {
    let open = (): void => {};
    const gate = { open: new Promise<void>((resolve) => (open = resolve)) };
    const machine = reporting(gate);
    const file = join(dir(), 'closed.db');
    const first = openStore(`sqlite:${file}`);
    await createDurableActor(machine, { id: 'w4', store: first, schemas: false });
    // Its first send is taken (the log has it) while it waits for the gate.
    for (let i = 0; i < 400 && (await first.history('w4')).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await getRuntime(first).close(); // the store stays open
    open(); // the promise sends PROGRESS 2 (lost) and resolves
    await new Promise((r) => setTimeout(r, 50));
    expect((await first.getStep('w4:invoke:work:1'))?.status).toBe('executing');
    await first.close();

    const store = track(openStore(`sqlite:${file}`));
    const report = await recover(store, { charts: [defineChart(machine)] });
    expect(report.steps).toEqual([
      expect.objectContaining({ key: 'w4:invoke:work:1', outcome: 'rerun' }),
    ]);
    await getRuntime(store).drain({ invokes: 'settled' });
    await getRuntime(store).drain();
    const events = (await store.history('w4')).map((r) => r.eventType);
    // The first run's 1 (taken before the close), then the rerun's 1 and 2, then its outcome:
    // never an outcome whose run's sends are missing.
    expect(events).toEqual([
      'xstate.init',
      'PROGRESS',
      'PROGRESS',
      'PROGRESS',
      'xstate.done.actor.work',
    ]);
    expect((await verify(store, { charts: [defineChart(machine)] })).problems).toEqual([]);
  });
});
