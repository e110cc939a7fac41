import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup } from 'xstate';
import {
  ConcurrencyError,
  LeaseLostError,
  ManualClock,
  createDurableActor,
  defineChart,
  eventSchema,
  getRuntime,
  openStore,
  recover,
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
  id: 'leased-job',
  initial: 'idle',
  states: {
    idle: { on: { START: 'working' } },
    working: { after: { tick: 'expired' }, on: { STOP: 'idle' } },
    expired: { on: { START: 'working' } },
  },
});
const chart = defineChart({
  name: 'leased-job',
  description: 'test chart',
  machine,
  events,
  eventSamples: { START: [{ type: 'START' }], STOP: [{ type: 'STOP' }] },
  defaultInput: undefined,
  recovery: ({ state }) =>
    state === 'working'
      ? { action: 'send', event: { type: 'STOP' }, reason: 'owner died mid-work' }
      : { action: 'resume', reason: 'nothing in flight' },
  version: 1,
  migrations: {},
});

let dir: string;
const stores: Store[] = [];
function worker(owner: string, clock: ManualClock): Store {
  const store = openStore(`sqlite:${join(dir, 'db.sqlite')}`);
  stores.push(store);
  getRuntime(store, { owner, leaseMs: 10_000, clock, charts: [chart] });
  return store;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-leases-'));
});
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('leases across workers', () => {
  test('an actor whose owner is alive is not recovered by another worker', async () => {
    const clock = new ManualClock(0);
    const a = worker('A', clock);
    const actor = await createDurableActor(machine, { id: 'job-1', store: a });
    await actor.send({ type: 'START' });
    expect(await a.lease('job-1')).toMatchObject({ owner: 'A', leaseUntil: 10_000 });

    const b = worker('B', new ManualClock(5_000));
    const report = await recover(b, { charts: [chart], owner: 'B' });
    expect(report.actors).toEqual([]);
    expect((await b.loadActor('job-1'))?.state).toBe('working');
  });

  test('a dead worker’s actors are recovered by another once the lease runs out', async () => {
    const a = worker('A', new ManualClock(0));
    const actor = await createDurableActor(machine, { id: 'job-2', store: a });
    await actor.send({ type: 'START' });
    // A dies without releasing its lease; B starts after it expired.
    const b = worker('B', new ManualClock(10_001));
    const report = await recover(b, { charts: [chart], owner: 'B' });
    expect(report.actors.map((e) => [e.actorId, e.action, e.stateAfter])).toEqual([
      ['job-2', 'resumed', 'expired'],
    ]);
    // The overdue `tick` timer fired first (B took the lease), so the policy found `expired`.
    expect(report.counts.timersFired).toBe(1);
    expect(await b.lease('job-2')).toMatchObject({ owner: 'B' });
    expect((await verify(b, { charts: [chart] })).ok).toBe(true);
  });

  test('a worker that lost its lease can no longer do owner writes; its plain sends still go through compare-and-set', async () => {
    const clockA = new ManualClock(0);
    const a = worker('A', clockA);
    const actorA = await createDurableActor(machine, { id: 'job-3', store: a });
    await actorA.send({ type: 'START' });

    const clockB = new ManualClock(20_000);
    const b = worker('B', clockB);
    await recover(b, { charts: [chart], owner: 'B' }); // takes the expired lease

    // B goes on: a new `tick` timer is pending under B's lease.
    const actorB = await createDurableActor(machine, { id: 'job-3', store: b });
    await actorB.send({ type: 'START' });
    const [timer] = await b.timers('job-3');
    expect(timer).toBeDefined();

    // A wakes up from a long pause still believing it owns the actor: its timer
    // firing is fenced out by the lease, and so is a recovery action.
    clockA.set(60_000);
    const runtimeA = getRuntime(a);
    expect(runtimeA.holds('job-3')).toBe(true);
    expect(await runtimeA.fireTimer('job-3', timer?.timerId ?? '')).toBe(false);
    expect(runtimeA.holds('job-3')).toBe(false);
    await expect(actorA.sendFromRecovery({ type: 'STOP' }, 'stale owner')).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect((await b.loadActor('job-3'))?.state).toBe('working');
    expect(await b.timers('job-3')).toHaveLength(1);

    // A plain send from A is ordered by compare-and-set after B's writes: the stale
    // copy gets ConcurrencyError, reloads, and the retry goes through.
    await expect(actorA.send({ type: 'STOP' })).rejects.toBeInstanceOf(ConcurrencyError);
    await actorA.send({ type: 'STOP' });
    const rows = await b.history('job-3');
    expect(rows.map((r) => [r.seq, r.toState])).toEqual([
      [1, 'idle'],
      [2, 'working'],
      [3, 'expired'],
      [4, 'working'],
      [5, 'idle'],
    ]);
    expect((await verify(b, { charts: [chart] })).ok).toBe(true);
  });

  test('due timers fire once when two owners poll the same database', async () => {
    const clock = new ManualClock(0);
    const a = worker('A', clock);
    for (let i = 0; i < 10; i++) {
      const actor = await createDurableActor(machine, { id: `t-${i}`, store: a });
      await actor.send({ type: 'START' });
    }
    await getRuntime(a).close(); // A stops cleanly: leases released, timers stay due
    const b = worker('B', new ManualClock(5_000));
    const c = worker('C', new ManualClock(5_000));
    const [rb, rc] = await Promise.all([
      recover(b, { charts: [chart], owner: 'B' }),
      recover(c, { charts: [chart], owner: 'C' }),
    ]);
    expect(rb.counts.actors + rc.counts.actors).toBe(10);
    expect(rb.counts.timersFired + rc.counts.timersFired).toBe(10);
    for (let i = 0; i < 10; i++) {
      const rows = await b.history(`t-${i}`);
      expect(rows.filter((r) => r.eventType.startsWith('xstate.after.'))).toHaveLength(1);
    }
    expect((await verify(b, { charts: [chart] })).ok).toBe(true);
  });
});
