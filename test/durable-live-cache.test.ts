/**
 * The runtime's cache of live actors with a limit (`maxLiveActors`): least
 * recently used idle actors leave memory, busy ones stay, a handle someone holds
 * stays the one handle of its actor, and nothing is lost or written twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup } from 'xstate';
import {
  ManualClock,
  createDurableActor,
  defineChart,
  eventSchema,
  getRuntime,
  openStore,
  verify,
  type EventFromSchemas,
  type Store,
} from '../src/index.ts';

const events = { START: eventSchema('START'), STOP: eventSchema('STOP') };
const machine = setup({
  types: { events: {} as EventFromSchemas<typeof events> },
  schemas: { events },
  delays: { tick: 1_000 },
}).createMachine({
  id: 'cached-job',
  initial: 'idle',
  states: {
    idle: { on: { START: 'working', STOP: 'idle' } },
    working: { after: { tick: 'expired' }, on: { STOP: 'idle' } },
    expired: { on: { START: 'working' } },
  },
});
const chart = defineChart(machine, { events });

let dir: string;
const stores: Store[] = [];
function open(options: { max?: number; clock?: ManualClock } = {}): Store {
  const store = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
  stores.push(store);
  getRuntime(store, {
    charts: [chart],
    ...(options.max === undefined ? {} : { maxLiveActors: options.max }),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return store;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-live-cache-'));
});
afterEach(async () => {
  for (const store of stores.splice(0)) {
    await getRuntime(store).close();
    await store.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

test('past the limit, least recently used idle actors leave memory; loading them again costs one read', async () => {
  const store = open({ max: 10 });
  const runtime = getRuntime(store);
  for (let i = 0; i < 50; i++) {
    const actor = await createDurableActor(machine, { id: `job-${i}`, store });
    await actor.send({ type: 'STOP' });
  }
  expect(runtime.liveCount).toBe(10);
  // The ten most recent stay.
  for (let i = 40; i < 50; i++) expect(runtime.liveActor(`job-${i}`)).toBeDefined();
  expect(runtime.liveActor('job-0')).toBeUndefined();
  // Touching an old one brings it back (reloaded, or the same handle while it is held).
  const again = await runtime.actor('job-3');
  expect(again.getSnapshot().value).toBe('idle');
  await again.send({ type: 'START' });
  expect((await store.loadActor('job-3'))?.state).toBe('working');
  expect(runtime.liveCount).toBeLessThanOrEqual(10);
  expect((await verify(store, { charts: [chart] })).problems).toEqual([]);
});

test('a handle the caller still holds stays the only handle of its actor, and reloads before it decides', async () => {
  const store = open({ max: 2 });
  const runtime = getRuntime(store);
  const held = await createDurableActor(machine, { id: 'held', store });
  for (let i = 0; i < 5; i++) await createDurableActor(machine, { id: `other-${i}`, store });
  expect(runtime.liveActor('held')).toBeUndefined();

  // Another process moves the actor while this one's handle is out of the cache.
  const other = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
  stores.push(other);
  getRuntime(other, { charts: [chart] });
  await (await getRuntime(other).actor('held')).send({ type: 'START' });

  // The runtime hands back the held object, not a second one with its own mailbox.
  expect(await runtime.actor('held')).toBe(held);
  // Its next send is decided on the stored state (working), not the old one (idle).
  await held.send({ type: 'STOP' });
  expect(held.getSnapshot().value).toBe('idle');
  expect(held.version).toBe(3);
});

test('busy actors stay: a listener, or a timer only this process would fire', async () => {
  const clock = new ManualClock(1_000_000);
  const store = open({ max: 1, clock });
  const runtime = getRuntime(store);
  const listened = await createDurableActor(machine, { id: 'listened', store });
  const subscription = listened.subscribe(() => undefined);
  const timed = await createDurableActor(machine, { id: 'timed', store });
  await timed.send({ type: 'START' }); // arms the 1 s timer in this process
  for (let i = 0; i < 3; i++) await createDurableActor(machine, { id: `plain-${i}`, store });
  expect(runtime.liveActor('listened')).toBe(listened);
  expect(runtime.liveActor('timed')).toBe(timed);

  // The timer still fires here, from memory.
  clock.advance(1_000);
  await runtime.drain();
  expect((await store.loadActor('timed'))?.state).toBe('expired');

  // Once nothing holds them, the next load past the limit lets them go.
  subscription.unsubscribe();
  await createDurableActor(machine, { id: 'last', store });
  expect(runtime.liveActor('listened')).toBeUndefined();
  expect(runtime.liveActor('timed')).toBeUndefined();
  expect(runtime.liveCount).toBe(1);
});

test('with timer polling on, an actor waiting on a timer may leave memory: the poll fires it from the store', async () => {
  const clock = new ManualClock(1_000_000);
  const store = open({ max: 1, clock });
  const runtime = getRuntime(store);
  runtime.startTimerPolling(100);
  const timed = await createDurableActor(machine, { id: 'timed', store });
  await timed.send({ type: 'START' });
  await createDurableActor(machine, { id: 'plain', store });
  expect(runtime.liveActor('timed')).toBeUndefined();
  clock.advance(1_000);
  for (let i = 0; i < 20 && (await store.loadActor('timed'))?.state !== 'expired'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(100);
  }
  await runtime.drain();
  expect((await store.loadActor('timed'))?.state).toBe('expired');
  // Fired once: created, START, the timer.
  expect((await store.history('timed')).map((r) => r.eventType)).toEqual([
    'xstate.init',
    'START',
    'xstate.after.tick.cached-job.working',
  ]);
});

test('a limit below one is refused', () => {
  const store = open();
  expect(() => getRuntime(store).limitLiveActors(0)).toThrow(RangeError);
});
