/**
 * An event with no caller (a timer here; messages and invoke outcomes take the
 * same path) that arrives at an actor whose in-memory snapshot another process
 * has moved is decided on the stored state, not refused on the stale one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { setup } from 'xstate';
import {
  ManualClock,
  createDurableActor,
  defineChart,
  getRuntime,
  openStore,
  type Store,
} from '../src/index.ts';

const machine = setup({
  types: { events: {} as { type: 'GO' } },
  delays: { soon: 1_000 },
}).createMachine({
  id: 'stale-timer',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'armed' } },
    armed: { after: { soon: 'fired' } },
    fired: {},
  },
});
const chart = defineChart(machine);

const dir = mkdtempSync(join(tmpdir(), 'agentcharts-stale-'));
const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) {
    await getRuntime(store).close();
    await store.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a due timer fires in a process whose copy of the actor is stale', async () => {
  const clock = new ManualClock(1_000_000);
  const open = () => {
    const store = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
    stores.push(store);
    getRuntime(store, { charts: [chart], clock });
    return store;
  };
  const a = open();
  const b = open();
  // Process A holds the actor in `idle`; process B moves it to `armed`, arming the timer.
  const inA = await createDurableActor(machine, { id: 'x', store: a });
  await (await getRuntime(b).actor('x')).send({ type: 'GO' });
  expect(inA.getSnapshot().value).toBe('idle');
  // The timer is due (time moved without `advance`, so B's own wake-up does not
  // fire it); A's poll finds it and fires it through its stale copy.
  clock.now = () => 1_000_000 + 5_000;
  expect(await getRuntime(a).fireDueTimers()).toBe(1);
  expect((await a.loadActor('x'))?.state).toBe('fired');
  expect(inA.getSnapshot().value).toBe('fired');
});
