/**
 * XState's `waitFor` and `toPromise` on a durable actor: its observers get what
 * XState's get (snapshots, then `complete` or `error`), so the two work as they do
 * on `createActor(machine)`; agentcharts exports them typed for a durable actor.
 */
import { describe, expect, test } from 'vitest';
import { assign, createActor, fromPromise, setup, waitFor as xstateWaitFor } from 'xstate';
import { createDurableActor, openStore, toPromise, waitFor } from '../src/index.ts';
import { closedAfterEach } from './support/stores.ts';

const track = closedAfterEach();

const working = (fail: boolean) =>
  setup({
    actors: {
      work: fromPromise(async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        if (fail) throw new Error('work failed');
        return 5;
      }),
    },
  }).createMachine({
    id: 'working',
    initial: 'a',
    context: { n: 0 },
    states: {
      a: { on: { GO: 'b' } },
      b: {
        invoke: {
          src: 'work',
          onDone: { target: 'c', actions: assign({ n: ({ event }) => event.output }) },
          onError: 'broken',
        },
      },
      c: { type: 'final' },
      // Its entry throws: the actor fails, as in XState.
      broken: {
        entry: assign(() => {
          throw new Error('cannot go on');
        }),
      },
    },
    output: ({ context }) => ({ n: context.n }),
  });

describe('waitFor and toPromise on a durable actor', () => {
  test('resolve as on plain XState: the snapshot the predicate holds for, then the output', async () => {
    const machine = working(false);
    const plain = createActor(machine).start();
    const plainWaited = xstateWaitFor(plain, (s) => s.matches('c'));
    plain.send({ type: 'GO' });

    const actor = await createDurableActor(machine, {
      id: 'w1',
      store: track(openStore('memory:')),
    });
    const waited = waitFor(actor, (s) => s.matches('c'), { timeout: 5_000 });
    const output = toPromise(actor);
    // Already true: resolves with the current snapshot, as XState's does.
    expect((await waitFor(actor, (s) => s.matches('a'))).value).toBe('a');
    await actor.send({ type: 'GO' });
    const snapshot = await waited;
    expect(snapshot.context).toEqual({ n: 5 });
    expect(snapshot.value).toBe((await plainWaited).value);
    expect(await output).toEqual({ n: 5 });
  });

  test('reject when the actor fails or the time is up, as XState', async () => {
    const actor = await createDurableActor(working(true), {
      id: 'w2',
      store: track(openStore('memory:')),
    });
    const never = waitFor(actor, (s) => s.matches('c'));
    const output = toPromise(actor);
    const soon = waitFor(actor, (s) => s.matches('c'), { timeout: 1 });
    await expect(soon).rejects.toThrow(/Timeout of 1 ms exceeded/);
    await actor.send({ type: 'GO' });
    await expect(never).rejects.toThrow('cannot go on');
    await expect(output).rejects.toThrow('cannot go on');
  });

  test('a function listener still gets the transition notice', async () => {
    const actor = await createDurableActor(working(false), {
      id: 'w3',
      store: track(openStore('memory:')),
    });
    const notices: Array<{ from: string | null; to: string; version: number }> = [];
    actor.subscribe((n) => notices.push({ from: n.from, to: n.to, version: n.version }));
    await actor.send({ type: 'GO' });
    await waitFor(actor, (s) => s.status === 'done', { timeout: 5_000 });
    expect(notices).toEqual([
      { from: 'a', to: 'b', version: 2 },
      { from: 'b', to: 'c', version: 3 },
    ]);
  });
});
