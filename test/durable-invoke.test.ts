/**
 * XState's invoke in a durable actor: an invoked promise is a durable step whose
 * outcome arrives as XState's own done/error event through the send path; actor
 * kinds the runtime cannot persist are refused with a typed error, never ignored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  assign,
  createActor,
  createMachine,
  fromCallback,
  fromPromise,
  sendTo,
  setup,
  spawnChild,
  toPromise,
  type AnyStateMachine,
  type PromiseActorLogic,
} from 'xstate';
import {
  ManualClock,
  UnsupportedActorError,
  createDurableActor,
  getRuntime,
  openDurableActor,
  openStore,
  planTransitionTests,
  recover,
  toMermaid,
  verify,
  type Store,
} from '../src/index.ts';

let dir: string;
let file: string;
const stores: Store[] = [];
function open(): Store {
  const store = openStore(`sqlite:${file}`);
  stores.push(store);
  return store;
}
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-invoke-'));
  file = join(dir, 'db.sqlite');
});
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await getRuntime(s).close();
    await s.close().catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A deferred promise: the test decides when the invoked call settles. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > 5000) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

const calls: Array<{ input: unknown; key: string | undefined; signal: AbortSignal }> = [];
let pending = deferred<unknown>();

function agent(
  llm: PromiseActorLogic<unknown, { question: string }> = fromPromise(
    async ({ input, signal, ...rest }) => {
      calls.push({ input, signal, key: (rest as { key?: string }).key });
      return pending.promise;
    },
  ),
) {
  return setup({
    types: { context: {} as { answer: unknown; failures: number; question: string } },
    actors: { llm },
  }).createMachine({
    id: 'agent',
    context: { answer: null, failures: 0, question: 'why?' },
    initial: 'idle',
    states: {
      idle: { on: { ASK: 'thinking' } },
      thinking: {
        invoke: {
          id: 'llm',
          src: 'llm',
          input: ({ context }) => ({ question: context.question }),
          onDone: { target: 'answered', actions: assign({ answer: ({ event }) => event.output }) },
          onError: [
            {
              guard: ({ context }) => context.failures < 1,
              target: 'idle',
              actions: assign({ failures: ({ context }) => context.failures + 1 }),
            },
            { target: 'failed' },
          ],
        },
        on: { CANCEL: 'idle' },
      },
      answered: { type: 'final' },
      failed: { type: 'final' },
    },
  });
}

beforeEach(() => {
  calls.length = 0;
  pending = deferred();
});

describe('actor kinds a durable actor cannot persist', () => {
  test('an invoked callback is refused at creation, naming machine, state and invoke', async () => {
    const machine = setup({ actors: { ticker: fromCallback(() => () => {}) } }).createMachine({
      id: 'ticking',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: { invoke: { id: 'tick', src: 'ticker' } } },
    });
    const error = await createDurableActor(machine, { id: 'x', store: open() }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnsupportedActorError);
    expect(error).toMatchObject({
      machineId: 'ticking',
      state: 'b',
      actorId: 'tick',
      kind: 'callback',
    });
    expect((error as Error).message).toMatch(/fromPromise/);
  });

  test('an invoked fromTransition is refused as transition logic, with its own hint (control: a callback is still a callback)', async () => {
    const { fromTransition } = await import('xstate');
    const machine = setup({
      actors: { counter: fromTransition((n: number) => n + 1, 0) },
    }).createMachine({
      id: 'counting',
      initial: 'a',
      states: { a: { invoke: { id: 'count', src: 'counter' } } },
    });
    const error = await createDurableActor(machine, { id: 'y', store: open() }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnsupportedActorError);
    expect(error).toMatchObject({ kind: 'transition', actorId: 'count' });
    expect((error as Error).message).toMatch(/child machine \(createMachine\)/);
    const { actorKind } = await import('../src/durable/actor-kinds.ts');
    expect(actorKind(fromCallback(() => () => {}))).toBe('callback');
  });

  test('two different child machines sharing a machine id are refused before anything is written; one machine used twice is not', async () => {
    // A durable child is loaded by its machine's id (after a restart, by a timer,
    // by a message): one of two machines under one id would run the other's logic.
    const worker = createMachine({ id: 'worker', initial: 'a', states: { a: {} } });
    const other = worker.provide({}); // a copy: another machine object, the same id
    const parentOf = (second: typeof worker) =>
      setup({ actors: { first: worker, second } }).createMachine({
        id: 'two-workers',
        invoke: [
          { id: 'w1', src: 'first' },
          { id: 'w2', src: 'second' },
        ],
      });
    const store = open();
    const error = await createDurableActor(parentOf(other), { id: 'p', store }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnsupportedActorError);
    expect(error).toMatchObject({ machineId: 'two-workers', actorId: 'worker' });
    expect(await store.loadActor('p')).toBeUndefined();
    // The control: the same machine invoked twice is one machine.
    const fine = await createDurableActor(parentOf(worker), { id: 'q', store });
    await getRuntime(store).drain();
    expect(Object.keys(fine.getSnapshot().children).sort()).toEqual(['w1', 'w2']);
  });

  test('a callback spawned inside assign is refused by the transition: nothing written', async () => {
    const machine = setup({}).createMachine({
      id: 'spawner',
      context: { ref: null },
      on: {
        SPAWN: {
          actions: assign({
            ref: ({ spawn }) =>
              (spawn as unknown as (logic: unknown, options: { id: string }) => unknown)(
                fromCallback(() => () => {}),
                { id: 'cb' },
              ),
          }),
        },
      },
    });
    const store = open();
    const actor = await createDurableActor(machine, { id: 's', store });
    await expect(actor.send({ type: 'SPAWN' })).rejects.toBeInstanceOf(UnsupportedActorError);
    expect(await store.history('s')).toHaveLength(1);
    expect(actor.version).toBe(1);
  });

  test("a parent that asks for a promise's snapshots is sent its one, as it starts, before its result", async () => {
    // XState's promise tells its parent its active snapshot when it starts, and its
    // result comes as xstate.done.actor after it, however soon it settles. Three
    // ways to ask: an invoke's onSnapshot (here in the initial state, where XState
    // starts it before the entry's sends), spawnChild with syncSnapshot, and spawn
    // with syncSnapshot inside assign. The control: the same spawn without
    // syncSnapshot sends none.
    const call = fromPromise(({ input }: { input: { x: number } }) => Promise.resolve(input.x * 2));
    type Ctx = { seen: string[]; ref: unknown };
    const see = (context: Ctx, entry: string) => [...context.seen, entry];
    const machine = setup({ types: { context: {} as Ctx }, actors: { call } }).createMachine({
      id: 'promise-snapshots',
      context: { seen: [], ref: null },
      initial: 'a',
      entry: sendTo(({ self }) => self, { type: 'SELF' }),
      states: {
        a: {
          invoke: {
            id: 'p',
            src: 'call',
            input: { x: 1 },
            onSnapshot: {
              actions: assign({
                seen: ({ context, event }) =>
                  see(
                    context,
                    `p:${event.snapshot.status}:${JSON.stringify(event.snapshot.input)}`,
                  ),
              }),
            },
            onDone: {
              target: 'b',
              actions: assign({ seen: ({ context }) => see(context, 'p:done') }),
            },
          },
        },
        b: {
          on: {
            SPAWN: {
              actions: [
                spawnChild('call', { id: 'q', input: { x: 2 }, syncSnapshot: true }),
                spawnChild('call', { id: 'quiet', input: { x: 3 } }),
                assign({
                  ref: ({ spawn }) =>
                    spawn('call', { id: 'r', input: { x: 4 }, syncSnapshot: true }),
                }),
                sendTo(({ self }) => self, { type: 'SELF' }),
              ],
            },
          },
        },
      },
      on: {
        SELF: { actions: assign({ seen: ({ context }) => see(context, 'self') }) },
        'xstate.snapshot.*': {
          actions: assign({ seen: ({ context, event }) => see(context, event.type) }),
        },
        'xstate.done.actor.*': {
          actions: assign({ seen: ({ context, event }) => see(context, event.type) }),
        },
      },
    });
    const plain = createActor(machine).start();
    await new Promise((resolve) => setTimeout(resolve, 5));
    plain.send({ type: 'SPAWN' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const expected = plain.getSnapshot().context.seen;
    expect(expected.slice(0, 3)).toEqual(['p:active:{"x":1}', 'self', 'p:done']);
    expect(expected).toContain('xstate.snapshot.q');
    expect(expected).toContain('xstate.snapshot.r');
    expect(expected).not.toContain('xstate.snapshot.quiet');

    const store = open();
    const durable = await createDurableActor(machine, { id: 'ps', store });
    await getRuntime(store).drain();
    await durable.send({ type: 'SPAWN' });
    await getRuntime(store).drain();
    expect(durable.getSnapshot().context.seen).toEqual(expected);
    expect((await verify(store, { charts: [chartOf(machine)] })).problems).toEqual([]);
  });

  test('a spawnChild of a callback is refused at creation', async () => {
    const machine = setup({ actors: { cb: fromCallback(() => () => {}) } }).createMachine({
      id: 'spawn-child',
      on: { GO: { actions: spawnChild('cb', { id: 'c1' }) } },
    });
    await expect(createDurableActor(machine, { id: 'y', store: open() })).rejects.toMatchObject({
      name: 'UnsupportedActorError',
      actorId: 'c1',
    });
  });
});

describe('an invoked promise is a durable step', () => {
  test('runs once per entry with input, key and signal; its output arrives as xstate.done.actor', async () => {
    const store = open();
    const actor = await createDurableActor(agent(), { id: 'a1', store, clock: new ManualClock(5) });
    await actor.send({ type: 'ASK' });
    await until(() => calls.length === 1);
    expect(calls[0]).toMatchObject({ input: { question: 'why?' }, key: 'a1:invoke:llm:2' });
    pending.resolve({ text: '42' });
    await until(() => actor.state === 'answered');
    expect(actor.getSnapshot().context.answer).toEqual({ text: '42' });
    const rows = await store.history('a1');
    expect(rows.at(-1)).toMatchObject({ eventType: 'xstate.done.actor.llm', toState: 'answered' });
    expect(JSON.parse(rows.at(-1)?.metadata ?? '{}')).toEqual({
      source: 'invoke',
      invoke: 'a1:invoke:llm:2',
    });
    expect(await store.getStep('a1:invoke:llm:2')).toMatchObject({ status: 'done', attempts: 1 });
    expect(calls).toHaveLength(1);
    expect((await verify(store, { charts: [chartOf(agent())] })).ok).toBe(true);
  });

  test('a rejection arrives as xstate.error.actor with a JSON error, guards and assign apply', async () => {
    const store = open();
    const actor = await createDurableActor(agent(), { id: 'a2', store });
    await actor.send({ type: 'ASK' });
    await until(() => calls.length === 1);
    pending.reject('rate limited'); // not an Error
    await until(() => actor.state === 'idle');
    expect(actor.getSnapshot().context.failures).toBe(1);
    pending = deferred();
    await actor.send({ type: 'ASK' }); // a new entry: a new step
    await until(() => calls.length === 2);
    expect(calls[1]?.key).toBe('a2:invoke:llm:4');
    pending.reject(new RangeError('boom'));
    await until(() => actor.state === 'failed');
    const last = JSON.parse((await store.history('a2')).at(-1)?.event ?? '{}') as unknown;
    expect(last).toMatchObject({
      type: 'xstate.error.actor.llm',
      error: { name: 'RangeError', message: 'boom' },
    });
  });

  test('leaving the state aborts the call; its late result is recorded, never delivered', async () => {
    const store = open();
    const actor = await createDurableActor(agent(), { id: 'a3', store });
    await actor.send({ type: 'ASK' });
    await until(() => calls.length === 1);
    await actor.send({ type: 'CANCEL' });
    expect(calls[0]?.signal.aborted).toBe(true);
    pending.resolve('too late');
    await until(async () => (await store.getStep('a3:invoke:llm:2'))?.status === 'done');
    expect(actor.state).toBe('idle');
    expect(await store.history('a3')).toHaveLength(3);
  });

  test('an output that is not JSON is delivered as a typed error', async () => {
    const machine = agent(
      fromPromise<unknown, { question: string }>(() => Promise.resolve({ big: 10n })),
    );
    const actor = await createDurableActor(machine, { id: 'a4', store: open() });
    await actor.send({ type: 'ASK' });
    await until(() => actor.state === 'idle');
    expect(actor.getSnapshot().context.failures).toBe(1);
  });

  test('behaves as plain XState: same states and context on the same events and results', async () => {
    const logic = fromPromise<unknown, { question: string }>(({ input }) =>
      Promise.resolve({ echo: input.question }),
    );
    const plain = createActor(agent(logic)).start();
    plain.send({ type: 'ASK' });
    await toPromise(plain);
    const durable = await createDurableActor(agent(logic), { id: 'a5', store: open() });
    await durable.send({ type: 'ASK' });
    await until(() => durable.getSnapshot().status === 'done');
    expect(durable.getSnapshot().value).toEqual(plain.getSnapshot().value);
    expect(durable.getSnapshot().context).toEqual(plain.getSnapshot().context);
  });
});

describe("invokes of one actor keep XState's order over a store whose round trips come back in any order", () => {
  /** Two regions, each invoking a promise that resolves at once; each outcome is logged. */
  const racer = setup({
    types: { context: {} as { got: string[] } },
    actors: {
      first: fromPromise(async () => Promise.resolve('first')),
      second: fromPromise(async () => Promise.resolve('second')),
    },
  }).createMachine({
    id: 'racer',
    context: { got: [] },
    type: 'parallel',
    states: Object.fromEntries(
      (['first', 'second'] as const).map((src) => [
        src,
        {
          initial: 'waiting',
          states: {
            waiting: {
              invoke: {
                id: src,
                src,
                onDone: {
                  target: 'done',
                  actions: assign({
                    got: ({ context, event }) => [...context.got, String(event.output)],
                  }),
                },
              },
            },
            done: { type: 'final' },
          },
        },
      ]),
    ),
  });

  /**
   * `store` with `method`'s round trip for the first invoke answered only after the
   * second's; `answered` lists the invokes in the order the store answered them.
   */
  function reordered(store: Store, method: 'startStep' | 'finishStep', answered: string[]): Store {
    const original = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
    let secondAnswered: () => void = () => {};
    const second = new Promise<void>((resolve) => (secondAnswered = resolve));
    (store as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
      const invoke = /:invoke:(first|second):/.exec(String(args[0]))?.[1];
      if (invoke === 'first') await second;
      const result = await original(...args);
      if (invoke !== undefined) answered.push(invoke);
      if (invoke === 'second') secondAnswered();
      return result;
    };
    return store;
  }

  test.each(['startStep', 'finishStep'] as const)(
    'with %s of the first invoke answered last, its outcome still arrives first, as in plain XState',
    async (method) => {
      const plain = createActor(racer).start();
      await toPromise(plain);
      expect(plain.getSnapshot().context.got).toEqual(['first', 'second']);
      const answered: string[] = [];
      const durable = await createDurableActor(racer, {
        id: `race-${method}`,
        store: reordered(open(), method, answered),
      });
      await until(() => durable.getSnapshot().status === 'done');
      // The store did answer the second invoke first ...
      expect(answered).toEqual(['second', 'first']);
      // ... and the actor still took the outcomes in XState's order.
      expect(durable.getSnapshot().context).toEqual(plain.getSnapshot().context);
    },
  );
});

describe('invoked promises after a crash', () => {
  test('one that never started runs on recovery; one interrupted mid-run is reconciled, never re-run blindly', async () => {
    const first = open();
    const a = await createDurableActor(agent(), { id: 'never', store: first });
    const b = await createDurableActor(agent(), { id: 'midway', store: first });
    await b.send({ type: 'ASK' });
    await until(() => calls.length === 1); // midway's call is running when the process dies
    // `never`: the entry commits, then the process dies before the call starts.
    first.startStep = () => Promise.resolve(false);
    await a.send({ type: 'ASK' });
    await getRuntime(first).close();

    const store = open();
    pending = deferred();
    const machine = agent();
    const report = await recover(store, {
      charts: [chartOf(machine)],
      reconcile: (step) => ({ status: 'done', result: { reconciled: step.key } }),
    });
    expect(report.steps).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: 'never:invoke:llm:2', outcome: 'started' }),
        expect.objectContaining({ key: 'midway:invoke:llm:2', outcome: 'delivered' }),
      ]),
    );
    expect((await store.loadActor('midway'))?.state).toBe('answered');
    await until(() => calls.length === 2); // never's call, started by recovery
    pending.resolve('late but once');
    await until(async () => (await store.loadActor('never'))?.state === 'answered');
    expect(calls.map((c) => c.key)).toEqual(['midway:invoke:llm:2', 'never:invoke:llm:2']);
  });

  test('without a reconcile hook an interrupted call stays uncertain unless the chart marks it safe to re-run', async () => {
    const safe = setup({
      actors: { llm: fromPromise(() => Promise.resolve('again')) },
    }).createMachine({
      id: 'safe-agent',
      meta: { invokes: { llm: { rerun: 'safe' } } },
      initial: 'thinking',
      states: { thinking: { invoke: { id: 'llm', src: 'llm', onDone: 'done' } }, done: {} },
    });
    const first = open();
    first.finishStep = () => new Promise(() => {}); // dies before recording the outcome
    await createDurableActor(safe, { id: 'r1', store: first });
    await until(async () => (await first.getStep('r1:invoke:llm:1'))?.attempts === 1);
    await getRuntime(first).close();
    const store = open();
    const report = await recover(store, { charts: [chartOf(safe)] });
    expect(report.steps).toEqual([
      expect.objectContaining({ key: 'r1:invoke:llm:1', outcome: 'rerun' }),
    ]);
    await until(async () => (await store.loadActor('r1'))?.state === 'done');
  });
});

describe('an outcome a stopped process recorded late', () => {
  // A networked store runs the last statement a dying process sent: its step's
  // outcome can land after recovery read the step as executing (the PostgreSQL
  // crash test, seed 784236969). That outcome is the step's, delivered once.
  const safe = () =>
    setup({
      types: { context: {} as { got: unknown } },
      actors: { llm: fromPromise(() => Promise.resolve('from the rerun')) },
    }).createMachine({
      id: 'late-agent',
      context: { got: null },
      meta: { invokes: { llm: { rerun: 'safe' } } },
      initial: 'thinking',
      states: {
        thinking: {
          invoke: {
            id: 'llm',
            src: 'llm',
            onDone: { target: 'done', actions: assign({ got: ({ event }) => event.output }) },
          },
        },
        done: {},
      },
    });

  async function interrupted(id: string): Promise<void> {
    const first = open();
    first.finishStep = () => new Promise(() => {}); // dies before recording the outcome
    await createDurableActor(safe(), { id, store: first });
    await until(async () => (await first.getStep(`${id}:invoke:llm:1`))?.attempts === 1);
    await getRuntime(first).close();
  }
  const late = (store: Store, key: string) =>
    store.finishStep(key, 'done', JSON.stringify('from the stopped run'), 5);

  test.each([
    ['reconciled as done', 'done' as const],
    ['reconciled as not done, to run again', 'not_done' as const],
  ])('%s: the recorded outcome is delivered, the call not run again', async (_, status) => {
    const id = `late-${status}`;
    await interrupted(id);
    const store = open();
    const key = `${id}:invoke:llm:1`;
    const report = await recover(store, {
      charts: [chartOf(safe())],
      reconcile: async () => {
        await late(store, key); // lands while the hook decides
        return status === 'done'
          ? { status, result: 'from the hook' }
          : { status, reason: 'not at the provider' };
      },
    });
    expect(report.steps).toEqual([
      { key, outcome: 'delivered', detail: 'recorded done meanwhile' },
    ]);
    await until(async () => (await store.loadActor(id))?.state === 'done');
    expect((await openDurableActor(store, id)).getSnapshot().context.got).toBe(
      'from the stopped run',
    );
  });

  test('the control: with nothing recorded meanwhile the hook decides', async () => {
    await interrupted('late-control');
    const store = open();
    const key = 'late-control:invoke:llm:1';
    const report = await recover(store, {
      charts: [chartOf(safe())],
      reconcile: () => ({ status: 'done', result: 'from the hook' }),
    });
    expect(report.steps).toEqual([{ key, outcome: 'delivered', detail: 'reconciled as done' }]);
    await until(async () => (await store.loadActor('late-control'))?.state === 'done');
    expect((await openDurableActor(store, 'late-control')).getSnapshot().context.got).toBe(
      'from the hook',
    );
  });
});

function chartOf(machine: AnyStateMachine) {
  return { machine, version: 1, migrations: {} } as never;
}

describe('the tools know invoke', () => {
  test('the test planner takes done and error outcomes; the diagram labels them', () => {
    const machine = agent();
    const plan = planTransitionTests(machine, {
      events: { ASK: [{ type: 'ASK' }], CANCEL: [{ type: 'CANCEL' }] },
    });
    const taken = plan.transitions.map(
      (t) => `${t.fromLabel} -${t.step.event.type}-> ${t.toLabel}`,
    );
    expect(taken).toEqual(
      expect.arrayContaining([
        'thinking -xstate.done.actor.llm-> answered',
        'thinking -xstate.error.actor.llm-> idle',
      ]),
    );
    expect([...new Set(plan.states.map((s) => s.label))].sort()).toEqual([
      'answered',
      'failed',
      'idle',
      'thinking',
    ]);
    expect(toMermaid(machine)).toMatch(/done: llm/);
  });
});
