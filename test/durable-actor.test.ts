import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { assign, emit, setup } from 'xstate';
import { pino } from 'pino';
import * as z from 'zod';
import {
  ConcurrencyError,
  DurableRuntime,
  InvalidEventError,
  InvalidTransitionError,
  ManualClock,
  SnapshotVersionError,
  StoreError,
  UncertainStepError,
  createDurableActor,
  defineChart,
  eventSchema,
  getRuntime,
  openDurableActor,
  openStore,
  recover,
  verify,
  type ActorWrite,
  type EventFromSchemas,
  type Store,
} from '../src/index.ts';

const events = {
  START: eventSchema('START', { by: z.string().min(1) }),
  FINISH: eventSchema('FINISH'),
  CANCEL: eventSchema('CANCEL'),
};
type Ev = EventFromSchemas<typeof events>;

/** A small chart with a guard, a durable `after` delay, an emitted event and a user effect. */
const effectsRun: string[] = [];
const machine = setup({
  types: {
    context: {} as { starts: number; by: string | null; timeoutMs: number },
    events: {} as Ev,
    input: {} as { timeoutMs: number },
  },
  schemas: { events },
  actions: {
    recordStart: assign({
      starts: ({ context }) => context.starts + 1,
      by: ({ event }) => (event.type === 'START' ? event.by : null),
    }),
    announce: emit({ type: 'STARTED' }),
    sideEffect: () => {
      effectsRun.push('sideEffect');
    },
  },
  delays: { workTimeout: ({ context }) => context.timeoutMs },
}).createMachine({
  id: 'toy-job',
  context: ({ input }) => ({ starts: 0, by: null, timeoutMs: input.timeoutMs }),
  initial: 'idle',
  states: {
    idle: {
      on: { START: { target: 'working', actions: ['recordStart', 'announce', 'sideEffect'] } },
    },
    working: {
      after: { workTimeout: 'timedOut' },
      on: { FINISH: 'done', CANCEL: 'idle' },
    },
    timedOut: { on: { START: { target: 'working', actions: 'recordStart' } } },
    done: { type: 'final' },
  },
});
const chart = defineChart({
  name: 'toy-job',
  description: 'test chart',
  machine,
  events,
  eventSamples: {
    START: [{ type: 'START', by: 'a' }],
    FINISH: [{ type: 'FINISH' }],
    CANCEL: [{ type: 'CANCEL' }],
  },
  defaultInput: { timeoutMs: 1000 },
  recovery: ({ state }) =>
    state === 'working'
      ? { action: 'send', event: { type: 'CANCEL' }, reason: 'work interrupted' }
      : { action: 'resume', reason: 'safe' },
  version: 1,
  migrations: {},
});

let dir: string;
let file: string;
const stores: Store[] = [];
function open(): Store {
  const store = openStore(`sqlite:${file}`);
  stores.push(store);
  return store;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-durable-'));
  file = join(dir, 'db.sqlite');
  effectsRun.length = 0;
});
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** A store whose commits fail on demand (fault injection). */
function faulty(inner: Store): Store & { failNext: number } {
  const wrapper = Object.create(inner) as Store & { failNext: number };
  wrapper.failNext = 0;
  wrapper.commit = (writes: readonly ActorWrite[]) => {
    if (wrapper.failNext > 0) {
      wrapper.failNext--;
      return Promise.reject(
        new StoreError({ operation: 'commit', kind: 'io', actorId: writes[0]?.actorId }),
      );
    }
    return inner.commit(writes);
  };
  return wrapper;
}

describe('a durable actor', () => {
  test('persists its creation and every transition with a hash-chained audit row', async () => {
    const store = open();
    const clock = new ManualClock(1_000);
    const actor = await createDurableActor(machine, {
      id: 'j1',
      store,
      input: { timeoutMs: 5000 },
      clock,
    });
    await actor.send({ type: 'START', by: 'alice' });
    expect(actor.getSnapshot().value).toBe('working');
    expect(actor.version).toBe(2);
    const rows = await actor.history();
    expect(rows.map((r) => [r.seq, r.fromState, r.toState, r.eventType])).toEqual([
      [1, null, 'idle', 'xstate.init'],
      [2, 'idle', 'working', 'START'],
    ]);
    expect(rows[1]?.prevHash).toBe(rows[0]?.hash);
    expect(JSON.parse(rows[1]?.event ?? '{}')).toEqual({ type: 'START', by: 'alice' });
    const row = await store.loadActor('j1');
    expect(row?.state).toBe('working');
    expect(row?.version).toBe(2);
  });

  test('is loaded back with the same state by a fresh process on the same database', async () => {
    const first = await createDurableActor(machine, {
      id: 'j2',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await first.send({ type: 'START', by: 'bob' });
    const second = await createDurableActor(machine, {
      id: 'j2',
      store: open(),
      input: { timeoutMs: 1 },
      clock: new ManualClock(),
    });
    expect(second.getSnapshot().value).toBe('working');
    expect(second.getSnapshot().context).toMatchObject({ starts: 1, by: 'bob' });
    expect(second.version).toBe(2);
  });

  test('rejects an illegal event with InvalidTransitionError, writes nothing and records the rejection', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'j3',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const error = await actor.send({ type: 'FINISH' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({
      machineId: 'toy-job',
      actorId: 'j3',
      state: 'idle',
      eventType: 'FINISH',
    });
    expect(actor.version).toBe(1);
    expect(await store.history('j3')).toHaveLength(1);
    expect(await store.listRejections({ actorId: 'j3' })).toMatchObject([
      { state: 'idle', eventType: 'FINISH', reason: 'invalid_transition' },
    ]);
  });

  test('rejects an ill-formed event with InvalidEventError naming the field, never the value', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'j4',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const error = await actor.send({ type: 'START', by: 42 } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidEventError);
    expect(error).toMatchObject({ field: 'by', reason: 'invalid_field' });
    expect((error as Error).message).not.toContain('42');
    const forged = await actor
      .send({ type: 'xstate.after.workTimeout.toy-job.working' } as never)
      .catch((e: unknown) => e);
    expect(forged).toBeInstanceOf(InvalidEventError);
    expect(actor.version).toBe(1);
  });

  test('fails the send and keeps memory and disk at the previous state when the write fails', async () => {
    const store = faulty(open());
    const actor = await createDurableActor(machine, {
      id: 'j5',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    store.failNext = 1;
    await expect(actor.send({ type: 'START', by: 'a' })).rejects.toBeInstanceOf(StoreError);
    expect(actor.getSnapshot().value).toBe('idle');
    expect(actor.version).toBe(1);
    expect((await store.loadActor('j5'))?.state).toBe('idle');
    expect(effectsRun).toEqual([]);
    await actor.send({ type: 'START', by: 'a' });
    expect(actor.getSnapshot().value).toBe('working');
    expect(effectsRun).toEqual(['sideEffect']);
  });

  test('serialises concurrent sends to one actor in order', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'j6',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const sends: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) {
      sends.push(actor.send({ type: 'START', by: `u${i}` }));
      sends.push(actor.send({ type: 'CANCEL' }));
    }
    await Promise.all(sends);
    const rows = await actor.history();
    expect(rows).toHaveLength(41);
    expect(rows.slice(1).map((r) => r.eventType)).toEqual(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'START' : 'CANCEL')),
    );
    expect(actor.getSnapshot().context).toMatchObject({ starts: 20, by: 'u19' });
  });

  test('keeps a committed transition when a subscriber throws', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'j7',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const seen: string[] = [];
    actor.subscribe(() => {
      throw new Error('observer bug');
    });
    actor.subscribe((n) => seen.push(`${n.from}->${n.to}`));
    actor.on('STARTED', (e) => seen.push(e.type));
    await actor.send({ type: 'START', by: 'a' });
    expect(actor.getSnapshot().value).toBe('working');
    expect(seen).toEqual(['STARTED', 'idle->working']);
  });

  test('reports a concurrent writer with ConcurrencyError and succeeds after reloading', async () => {
    const a = await createDurableActor(machine, {
      id: 'j8',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const b = await createDurableActor(machine, {
      id: 'j8',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await a.send({ type: 'START', by: 'a' });
    await expect(b.send({ type: 'START', by: 'b' })).rejects.toBeInstanceOf(ConcurrencyError);
    expect(b.getSnapshot().value).toBe('idle');
    // b reloads on its next send and sees a's transition.
    await expect(b.send({ type: 'START', by: 'b' })).rejects.toBeInstanceOf(InvalidTransitionError);
    await b.send({ type: 'FINISH' });
    expect(b.getSnapshot().status).toBe('done');
    const report = await verify(stores[0] as Store, { charts: [chart] });
    expect(report).toMatchObject({ ok: true, actorsChecked: 1, rowsChecked: 3 });
  });

  test('retries a send that lost a race when asked to, deciding on the reloaded state', async () => {
    const a = await createDurableActor(machine, {
      id: 'j10',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const b = await createDurableActor(machine, {
      id: 'j10',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await a.send({ type: 'START', by: 'a' });
    await a.send({ type: 'CANCEL' });
    // b's copy is idle at version 1, the store idle at version 3: START is legal on
    // both, so only the compare-and-set notices; one retry reloads and commits.
    await b.send({ type: 'START', by: 'b' }, undefined, { conflictRetries: 1 });
    expect(b.version).toBe(4);
    expect(b.getSnapshot().context).toMatchObject({ starts: 2, by: 'b' });
    expect((await verify(stores[0] as Store, { charts: [chart] })).ok).toBe(true);
  });

  test('decides legality on the stored state when another process moved the actor', async () => {
    const a = await createDurableActor(machine, {
      id: 'j9',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const b = await createDurableActor(machine, {
      id: 'j9',
      store: open(),
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await b.send({ type: 'START', by: 'b' });
    // a still caches `idle`, where FINISH is illegal; the stored state is `working`.
    await a.send({ type: 'FINISH' });
    expect(a.getSnapshot().status).toBe('done');
    expect(await (stores[0] as Store).listRejections({ actorId: 'j9' })).toEqual([]);
  });

  test('fails an event for an actor that does not exist with a StoreError naming it', async () => {
    const store = open();
    const error = await openDurableActor(store, 'nobody', { charts: [chart] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ actorId: 'nobody', kind: 'not_found' });
  });

  test("mode 'create' reads nothing before its commit, and refuses an actor that exists by that commit alone", async () => {
    const inner = open();
    const reads: string[] = [];
    const store = Object.create(inner) as Store;
    store.loadActorHead = (actorId: string) => {
      reads.push(actorId);
      return inner.loadActorHead(actorId);
    };
    const errors: unknown[] = [];
    const logged: string[] = [];
    const runtime = getRuntime(store, {
      logger: pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) }),
    });
    runtime.observe({ onWriteError: (notice) => void errors.push(notice) });
    const options = { id: 'c1', store, input: { timeoutMs: 5000 }, mode: 'create' as const };
    const first = await createDurableActor(machine, options);
    await first.send({ type: 'START', by: 'a' });
    first.detach();
    expect(reads).toEqual([]);

    // Another process's actor of that id (this runtime holds none now).
    const error = await createDurableActor(machine, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConcurrencyError);
    expect(error).toMatchObject({ actorId: 'c1', expectedVersion: 0, actualVersion: 2 });
    expect(reads).toEqual([]);
    expect(errors).toEqual([]);
    expect(logged).toEqual([]);
    // Nothing written by the refused creation: the actor is where it was.
    const again = await createDurableActor(machine, { ...options, mode: 'load' });
    expect(again.getSnapshot().value).toBe('working');
    expect(again.version).toBe(2);
    expect(reads).toEqual(['c1']);
  });
});

describe('store faults under a durable actor', () => {
  test('a busy database fails the send with a StoreError naming the actor, and the actor keeps serving after', async () => {
    const store = openStore(`sqlite:${file}?busy_timeout=50`);
    stores.push(store);
    const a = await createDurableActor(machine, {
      id: 'f1',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const b = await createDurableActor(machine, {
      id: 'f2',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const locker = new Database(file);
    locker.exec('BEGIN EXCLUSIVE');
    const error = await a.send({ type: 'START', by: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ actorId: 'f1', kind: 'busy' });
    expect(a.getSnapshot().value).toBe('idle');
    locker.exec('ROLLBACK');
    locker.close();
    await b.send({ type: 'START', by: 'y' });
    await a.send({ type: 'START', by: 'x' });
    expect([a.getSnapshot().value, b.getSnapshot().value]).toEqual(['working', 'working']);
    expect((await verify(store, { charts: [chart] })).ok).toBe(true);
  });

  test('a full disk fails the send with nothing half-written; other actors go on once space is back', async () => {
    const store = open();
    const a = await createDurableActor(machine, {
      id: 'f3',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const raw = (store as unknown as { db: Database.Database }).db;
    const pages = raw.pragma('page_count', { simple: true }) as number;
    raw.pragma(`max_page_count = ${pages}`);
    const big = 'x'.repeat(60_000);
    const error = await a.send({ type: 'START', by: big }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'StoreError', kind: 'full', actorId: 'f3' });
    expect(await store.history('f3')).toHaveLength(1);
    expect((await store.loadActor('f3'))?.version).toBe(1);
    raw.pragma('max_page_count = 1073741823');
    await a.send({ type: 'START', by: big });
    expect(a.version).toBe(2);
    expect((await verify(store, { charts: [chart] })).ok).toBe(true);
  });

  test('a read-only database fails the send with a StoreError and changes nothing', async () => {
    const writer = open();
    await createDurableActor(machine, {
      id: 'f4',
      store: writer,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    const reader = openStore(`sqlite:${file}?readonly=1`);
    stores.push(reader);
    const ro = await createDurableActor(machine, {
      id: 'f4',
      store: reader,
      clock: new ManualClock(),
    });
    await expect(ro.send({ type: 'START', by: 'r' })).rejects.toMatchObject({
      name: 'StoreError',
      kind: 'readonly',
      actorId: 'f4',
    });
    expect((await writer.loadActor('f4'))?.version).toBe(1);
  });
});

describe('durable timers', () => {
  test('become rows with an absolute due time and are cancelled when their state is left', async () => {
    const store = open();
    const clock = new ManualClock(10_000);
    const actor = await createDurableActor(machine, {
      id: 't1',
      store,
      input: { timeoutMs: 3000 },
      clock,
    });
    await actor.send({ type: 'START', by: 'a' });
    const timers = await store.timers('t1');
    expect(timers).toHaveLength(1);
    expect(timers[0]).toMatchObject({ dueAt: 13_000 });
    await actor.send({ type: 'CANCEL' });
    expect(await store.timers('t1')).toEqual([]);
    clock.advance(10_000);
    await actor.runtime.drain();
    expect(actor.getSnapshot().value).toBe('idle');
  });

  test('fire in process when due, through the send path', async () => {
    const store = open();
    const clock = new ManualClock(0);
    const actor = await createDurableActor(machine, {
      id: 't2',
      store,
      input: { timeoutMs: 3000 },
      clock,
    });
    await actor.send({ type: 'START', by: 'a' });
    clock.advance(3000);
    await waitFor(() => actor.getSnapshot().value === 'timedOut');
    const rows = await actor.history();
    expect(rows.at(-1)).toMatchObject({
      eventType: 'xstate.after.workTimeout.toy-job.working',
      toState: 'timedOut',
    });
    expect(JSON.parse(rows.at(-1)?.metadata ?? '{}')).toMatchObject({ source: 'timer' });
    expect(await store.timers('t2')).toEqual([]);
  });

  test('survive a restart and fire once on recover, even when two processes recover the same database', async () => {
    const clock = new ManualClock(0);
    const first = await createDurableActor(machine, {
      id: 't3',
      store: open(),
      input: { timeoutMs: 3000 },
      clock,
    });
    await first.send({ type: 'START', by: 'a' });
    await first.runtime.close(); // the process "dies" with the timer pending

    const later = new ManualClock(60_000);
    const [r1, r2] = await Promise.all([
      recover(open(), { charts: [chart], clock: later }),
      recover(open(), { charts: [chart], clock: later }),
    ]);
    expect(r1.counts.timersFired + r2.counts.timersFired).toBe(1);
    const rows = await (stores.at(-1) as Store).history('t3');
    expect(rows.filter((r) => r.eventType.startsWith('xstate.after.'))).toHaveLength(1);
    expect(rows.at(-1)?.toState).toBe('timedOut');
    expect((await verify(stores.at(-1) as Store, { charts: [chart] })).ok).toBe(true);
  });

  test('fire a targetless delayed transition that only emits (the approval reminder)', async () => {
    const store = open();
    const clock = new ManualClock(0);
    const task = await createDurableActor(taskLifecycle.machine, {
      id: 'reminded',
      store,
      input: { taskId: 'reminded', approvalTimeoutMs: 400 },
      clock,
    });
    const reminders: string[] = [];
    task.on('APPROVAL_REMINDER', (e) => reminders.push(e.type));
    await task.send({ type: 'START' });
    await task.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund over limit', requestedAt: 0 });
    clock.advance(200);
    await waitFor(() => reminders.length === 1);
    expect(task.getSnapshot().value).toBe('paused');
    expect(await store.listRejections({ actorId: 'reminded' })).toEqual([]);
    expect((await task.history()).at(-1)).toMatchObject({ fromState: 'paused', toState: 'paused' });
    expect((await store.timers('reminded')).map((t) => t.timerId)).toEqual([
      'xstate.after.approvalTimeout.task-lifecycle.paused',
    ]);
  });
});

describe('recover', () => {
  test('applies the machine policy to stale states and reports what it did per actor', async () => {
    const store = open();
    const clock = new ManualClock(0);
    const a = await createDurableActor(machine, {
      id: 'r1',
      store,
      input: { timeoutMs: 999_999 },
      clock,
    });
    await a.send({ type: 'START', by: 'a' });
    await createDurableActor(machine, { id: 'r2', store, input: { timeoutMs: 999_999 }, clock });
    const done = await createDurableActor(machine, {
      id: 'r3',
      store,
      input: { timeoutMs: 999_999 },
      clock,
    });
    await done.send({ type: 'START', by: 'a' });
    await done.send({ type: 'FINISH' });
    await a.runtime.close();

    const report = await recover(open(), { charts: [chart], clock: new ManualClock(1000) });
    expect(report.counts).toMatchObject({ actors: 2, sent: 1, resumed: 1, failed: 0 });
    expect(report.actors.find((e) => e.actorId === 'r1')).toMatchObject({
      action: 'sent',
      stateBefore: 'working',
      stateAfter: 'idle',
      event: { type: 'CANCEL' },
    });
    const last = (await (stores.at(-1) as Store).history('r1')).at(-1);
    expect(JSON.parse(last?.metadata ?? '{}')).toMatchObject({
      source: 'recover',
      reason: 'work interrupted',
    });
  });

  test('keeps the declared policy when actors are created after the charts were registered', async () => {
    const store = open();
    await recover(store, { charts: [chart], clock: new ManualClock(0) });
    const a = await createDurableActor(machine, { id: 'r4', store, input: { timeoutMs: 999_999 } });
    await a.send({ type: 'START', by: 'a' });
    const report = await recover(store, { charts: [], clock: new ManualClock(1000) });
    expect(report.actors.find((e) => e.actorId === 'r4')).toMatchObject({
      action: 'sent',
      stateAfter: 'idle',
    });
  });

  test('reports an actor of an unknown machine and keeps recovering the others', async () => {
    const store = open();
    const other = setup({}).createMachine({
      id: 'unregistered',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: {} },
    });
    await createDurableActor(other, { id: 'u1', store, clock: new ManualClock() });
    await createDurableActor(machine, {
      id: 'u2',
      store,
      input: { timeoutMs: 10 },
      clock: new ManualClock(),
    });
    const report = await recover(open(), { charts: [chart], clock: new ManualClock() });
    expect(report.actors.find((e) => e.actorId === 'u1')).toMatchObject({
      action: 'failed',
      error: { name: 'StoreError' },
    });
    expect(report.actors.find((e) => e.actorId === 'u2')).toMatchObject({ action: 'resumed' });
  });
});

describe('idempotent steps', () => {
  test('run once; a second call returns the stored result without running', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 's1',
      store,
      input: { timeoutMs: 5 },
      clock: new ManualClock(),
    });
    let runs = 0;
    const keys: string[] = [];
    const fn = (key: string) => {
      runs++;
      keys.push(key);
      return { receipt: 'r-1' };
    };
    expect(await actor.step('refund', fn)).toEqual({ receipt: 'r-1' });
    expect(await actor.step('refund', fn)).toEqual({ receipt: 'r-1' });
    const again = await createDurableActor(machine, {
      id: 's1',
      store: open(),
      clock: new ManualClock(),
    });
    expect(await again.step('refund', fn)).toEqual({ receipt: 'r-1' });
    expect(runs).toBe(1);
    expect(keys).toEqual(['s1:refund']);
    expect(await store.getStep('s1:refund')).toMatchObject({ status: 'done', attempts: 1 });
  });

  test('run again after a failure', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 's2',
      store,
      input: { timeoutMs: 5 },
      clock: new ManualClock(),
    });
    let runs = 0;
    await expect(
      actor.step('pay', () => {
        runs++;
        throw new Error('gateway 503');
      }),
    ).rejects.toThrow('gateway 503');
    expect(await store.getStep('s2:pay')).toMatchObject({ status: 'failed' });
    expect(await actor.step('pay', () => ++runs)).toBe(2);
  });

  test('found executing after a crash are uncertain: never re-run blindly, settled by reconcile', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 's3',
      store,
      input: { timeoutMs: 5 },
      clock: new ManualClock(),
    });
    await store.beginStep({ key: 's3:refund', actorId: 's3', name: 'refund', startedAt: 0 }); // the crash left it executing
    let runs = 0;
    await expect(actor.step('refund', () => ++runs)).rejects.toBeInstanceOf(UncertainStepError);
    await actor.runtime.close();

    const seen: string[] = [];
    const report = await recover(open(), {
      charts: [chart],
      clock: new ManualClock(),
      reconcile: (step) => {
        seen.push(step.key);
        return { status: 'done', result: 'refund-found-at-provider' };
      },
    });
    expect(seen).toEqual(['s3:refund']);
    expect(report.steps).toEqual([
      { key: 's3:refund', outcome: 'done', detail: 'reconciled as done' },
    ]);
    const reloaded = await createDurableActor(machine, {
      id: 's3',
      store: stores.at(-1) as Store,
      clock: new ManualClock(),
    });
    expect(await reloaded.step('refund', () => ++runs)).toBe('refund-found-at-provider');
    expect(runs).toBe(0);
  });

  test('one whose outcome another run recorded while the hook decided keeps that outcome', async () => {
    // A dying process's last statement can land after recovery read the step.
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 's4',
      store,
      input: { timeoutMs: 5 },
      clock: new ManualClock(),
    });
    await store.beginStep({ key: 's4:refund', actorId: 's4', name: 'refund', startedAt: 0 });
    await actor.runtime.close();
    const next = open();
    const report = await recover(next, {
      charts: [chart],
      clock: new ManualClock(),
      reconcile: async (step) => {
        await next.finishStep(step.key, 'done', JSON.stringify('refunded by the stopped run'), 1);
        return { status: 'done', result: 'refund-found-at-provider' };
      },
    });
    expect(report.steps).toEqual([
      { key: 's4:refund', outcome: 'done', detail: 'recorded done meanwhile' },
    ]);
    expect(await next.getStep('s4:refund')).toMatchObject({
      status: 'done',
      result: JSON.stringify('refunded by the stopped run'),
    });
  });
});

describe('audit integrity and versions', () => {
  test('verify names the actor and the first row that was edited', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'v1',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await actor.send({ type: 'START', by: 'a' });
    await actor.send({ type: 'CANCEL' });
    await actor.send({ type: 'START', by: 'b' });
    await createDurableActor(machine, {
      id: 'v2',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    expect((await verify(store, { charts: [chart] })).ok).toBe(true);

    const raw = new Database(file);
    for (const t of raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as {
      name: string;
    }[]) {
      raw.exec(`DROP TRIGGER "${t.name}"`);
    }
    raw
      .prepare('UPDATE transitions SET event = ? WHERE actor_id = ? AND seq = 3')
      .run('{"type":"FINISH"}', 'v1');
    raw.close();
    const report = await verify(store, { charts: [chart] });
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      { actorId: 'v1', kind: 'chain', seq: 3, detail: 'row content does not match its hash' },
    ]);
  });

  test('verify detects a snapshot that differs from the replayed log', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'v3',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await actor.send({ type: 'START', by: 'a' });
    const raw = new Database(file);
    const row = raw.prepare('SELECT snapshot FROM actors WHERE id = ?').get('v3') as {
      snapshot: string;
    };
    raw
      .prepare('UPDATE actors SET snapshot = ? WHERE id = ?')
      .run(row.snapshot.replace('"starts":1', '"starts":7'), 'v3');
    raw.close();
    const report = await verify(store, { charts: [chart] });
    expect(report.problems).toMatchObject([{ actorId: 'v3', kind: 'snapshot' }]);
  });

  test('an older snapshot version is migrated on load; a newer one fails naming actor and versions', async () => {
    const store = open();
    await createDurableActor(machine, {
      id: 'm1',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await store.close();
    const v2 = await createDurableActor(machine, {
      id: 'm1',
      store: open(),
      version: 2,
      migrations: { 1: (s) => ({ ...s, context: { ...(s['context'] as object), starts: 100 } }) },
      clock: new ManualClock(),
    });
    expect(v2.getSnapshot().context).toMatchObject({ starts: 100 });

    const raw = new Database(file);
    raw.prepare('UPDATE actors SET chart_version = 3 WHERE id = ?').run('m1');
    raw.close();
    const error = await createDurableActor(machine, {
      id: 'm1',
      store: open(),
      clock: new ManualClock(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SnapshotVersionError);
    expect(error).toMatchObject({ actorId: 'm1', storedVersion: 3, currentVersion: 1 });
    expect((error as Error).message).toContain('m1');
  });

  test('a corrupt snapshot or an unknown state fails with a typed error naming the actor', async () => {
    const store = open();
    await createDurableActor(machine, {
      id: 'c1',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await createDurableActor(machine, {
      id: 'c2',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    await store.close();
    const raw = new Database(file);
    raw.prepare('UPDATE actors SET snapshot = ? WHERE id = ?').run('{not json', 'c1');
    raw
      .prepare('UPDATE actors SET snapshot = ? WHERE id = ?')
      .run(
        '{"status":"active","value":"vanished","context":{},"children":{},"historyValue":{}}',
        'c2',
      );
    raw.close();
    const corrupt = await createDurableActor(machine, {
      id: 'c1',
      store: open(),
      clock: new ManualClock(),
    }).catch((e: unknown) => e);
    expect(corrupt).toMatchObject({ name: 'StoreError', kind: 'corrupt', actorId: 'c1' });
    const unknown = await createDurableActor(machine, {
      id: 'c2',
      store: open(),
      clock: new ManualClock(),
    }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(SnapshotVersionError);
    expect(unknown).toMatchObject({ actorId: 'c2' });
  });

  test('a runtime is one per store and closing it stops its timers', async () => {
    const store = open();
    const actor = await createDurableActor(machine, {
      id: 'x1',
      store,
      input: { timeoutMs: 5000 },
      clock: new ManualClock(),
    });
    expect(actor.runtime).toBeInstanceOf(DurableRuntime);
    const again = await createDurableActor(machine, { id: 'x1', store });
    expect(again).toBe(actor);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
