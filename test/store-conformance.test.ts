/**
 * The Store contract, written once as a function over a store factory and run
 * against every implementation. A store joins by adding one entry to `targets`
 * whose `open` returns a fresh, empty store. PostgreSQL runs against a real
 * throwaway server (test/support/postgres.ts), each test in a fresh schema.
 */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConcurrencyError, LeaseLostError, StoreError } from '../src/core/errors.ts';
import { InvalidOptionsError } from '../src/core/options.ts';
import { openStore, parseStoreUrl } from '../src/store/open.ts';
import { openPostgresStore } from '../src/store/postgres/store.ts';
import type {
  ActorRow,
  ActorStatus,
  ActorWrite,
  Store,
  TimerClaim,
  TimerRow,
} from '../src/store/types.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';

interface StoreTarget {
  name: string;
  /** A fresh, empty store (a networked store may need async setup). */
  open: () => Store | Promise<Store>;
  /** Starts what the target needs (a server), once before its tests. */
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
}

const scratch = mkdtempSync(join(tmpdir(), 'agentcharts-conformance-'));
let files = 0;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const targets: StoreTarget[] = [
  { name: 'memory', open: () => openStore('memory:') },
  { name: 'sqlite (file)', open: () => openStore(`sqlite:${join(scratch, `${++files}.db`)}`) },
  { name: 'sqlite (:memory:)', open: () => openStore('sqlite::memory:') },
];

let server: PostgresServer | undefined;
if (postgresAvailable()) {
  targets.push({
    name: 'postgres',
    open: () => {
      if (server === undefined) throw new Error('the PostgreSQL server did not start');
      return openStore(server.freshUrl());
    },
    setup: async () => {
      server = await startPostgres();
    },
    teardown: async () => {
      await server?.destroy();
    },
  });
} else {
  describe('Store conformance: postgres', () => {
    it.skip('SKIPPED: PostgreSQL not installed', () => undefined);
  });
}

// ---------------------------------------------------------------- row builders

interface WriteOptions {
  machineId?: string;
  state?: string;
  status?: ActorStatus;
  snapshot?: string;
  at?: number;
  createdAt?: number;
  /** The timers pending after this write, in the order the actor armed them (in its snapshot). */
  timers?: Array<{ id: string; dueAt: number }>;
  lease?: { owner: string; now: number };
}

function timer(actorId: string, timerId: string, dueAt: number): TimerRow {
  return { actorId, timerId, event: JSON.stringify({ type: `xstate.after.${timerId}` }), dueAt };
}

/** A snapshot whose pending timers (under `agentcharts`, as the runtime keeps them) are `timers`. */
function withTimers(state: string, version: number, timers: Array<{ id: string; dueAt: number }>) {
  return JSON.stringify({
    value: state,
    context: { n: version },
    agentcharts:
      timers.length === 0
        ? {}
        : {
            timers: timers.map((t) => ({
              key: t.id,
              sendId: t.id,
              event: { type: `xstate.after.${t.id}` },
              due: t.dueAt,
            })),
          },
  });
}

/** The write that moves `actorId` to `version` (1 creates it). */
function write(actorId: string, version: number, options: WriteOptions = {}): ActorWrite {
  const at = options.at ?? 1_000 + version;
  const state = options.state ?? `s${version}`;
  const actor: ActorRow = {
    id: actorId,
    machineId: options.machineId ?? 'task-lifecycle',
    chartVersion: 1,
    version,
    state,
    status: options.status ?? 'active',
    snapshot:
      options.snapshot ??
      (options.timers !== undefined
        ? withTimers(state, version, options.timers)
        : JSON.stringify({ value: state, context: { n: version } })),
    createdAt: options.createdAt ?? at,
    updatedAt: at,
    headHash: `h${version}`,
  };
  return {
    actorId,
    expectedVersion: version - 1,
    actor,
    transition: {
      actorId,
      seq: version,
      fromState: version === 1 ? null : `s${version - 1}`,
      toState: state,
      eventType: version === 1 ? 'xstate.init' : 'NEXT',
      event: JSON.stringify({ type: version === 1 ? 'xstate.init' : 'NEXT' }),
      at,
      metadata: JSON.stringify({ source: 'send' }),
      prevHash: `h${version - 1}`,
      hash: `h${version}`,
      chartVersion: null,
      snapshotHash: null,
    },
    ...(options.timers !== undefined && options.timers.length > 0
      ? { nextDueAt: Math.min(...options.timers.map((t) => t.dueAt)) }
      : {}),
    ...(options.lease !== undefined ? { lease: options.lease } : {}),
  };
}

async function commitOk(store: Store, ...writes: ActorWrite[]): Promise<void> {
  expect(await store.commit(writes)).toEqual(writes.map(() => null));
}

// ---------------------------------------------------------------- the suite

function storeConformance(target: StoreTarget): void {
  describe(`Store conformance: ${target.name}`, () => {
    if (target.setup) beforeAll(target.setup);
    if (target.teardown) afterAll(target.teardown);
    let store: Store;
    beforeEach(async () => {
      store = await target.open();
    });
    afterEach(() => store.close());

    describe('actors and compare-and-set', () => {
      it('creates an actor at version 1 with its creation row', async () => {
        const create = write('a', 1);
        await commitOk(store, create);
        expect(await store.loadActor('a')).toEqual(create.actor);
        expect(await store.history('a')).toEqual([create.transition]);
        expect(await store.loadActor('missing')).toBeUndefined();
      });

      it('refuses a second create of the same id with a ConcurrencyError', async () => {
        await commitOk(store, write('a', 1));
        const [error] = await store.commit([write('a', 1, { snapshot: '{"other":true}' })]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 0, actualVersion: 1 });
        expect((await store.loadActor('a'))?.snapshot).toBe(write('a', 1).actor.snapshot);
        expect(await store.history('a')).toHaveLength(1);
      });

      it('updates at the expected version and keeps the creation time', async () => {
        await commitOk(store, write('a', 1, { createdAt: 50 }));
        const update = write('a', 2, { createdAt: 999, at: 2_000 });
        await commitOk(store, update);
        expect(await store.loadActor('a')).toEqual({ ...update.actor, createdAt: 50 });
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2]);
      });

      it('rejects a stale update with the actual version and leaves row, history and timers unchanged', async () => {
        await commitOk(store, write('a', 1, { timers: [{ id: 't1', dueAt: 500 }] }));
        await commitOk(store, write('a', 2, { timers: [{ id: 't1', dueAt: 500 }] }));
        const before = {
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
          next: await store.nextTimerDue(),
        };
        const stale = write('a', 2, { state: 'elsewhere', timers: [{ id: 't2', dueAt: 100 }] });
        const [error] = await store.commit([stale]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 1, actualVersion: 2 });
        expect({
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
          next: await store.nextTimerDue(),
        }).toEqual(before);
      });

      it('rejects an update of an actor that does not exist as not_found', async () => {
        const [error] = await store.commit([write('ghost', 3)]);
        expect(error).toBeInstanceOf(StoreError);
        expect(error).toMatchObject({ operation: 'commit', kind: 'not_found', actorId: 'ghost' });
        expect(await store.history('ghost')).toEqual([]);
      });

      it('rejects a malformed write alone as invalid_write', async () => {
        const skipping = write('a', 1);
        skipping.actor.version = 5;
        const fractional = write('b', 1, { timers: [{ id: 't', dueAt: 1 }] });
        fractional.nextDueAt = 1.5;
        const [skip, due, fine] = await store.commit([skipping, fractional, write('c', 1)]);
        expect(skip).toMatchObject({ kind: 'invalid_write', actorId: 'a' });
        expect(due).toMatchObject({ kind: 'invalid_write', actorId: 'b', detail: /nextDueAt/ });
        expect(fine).toBeNull();
        expect(await store.loadActor('a')).toBeUndefined();
        expect(await store.loadActor('b')).toBeUndefined();
      });

      it('stores the snapshot as opaque text, even when it is not JSON', async () => {
        await commitOk(store, write('a', 1, { snapshot: '{not json' }));
        expect((await store.loadActor('a'))?.snapshot).toBe('{not json');
      });
    });

    describe('group commit', () => {
      it('commits the other writes of a batch when one conflicts', async () => {
        await commitOk(store, write('b', 1));
        const results = await store.commit([write('a', 1), write('b', 1), write('c', 1)]);
        expect(results[0]).toBeNull();
        expect(results[1]).toBeInstanceOf(ConcurrencyError);
        expect(results[2]).toBeNull();
        expect((await store.listActors()).map((a) => a.id)).toEqual(['a', 'b', 'c']);
        expect(await store.history('b')).toHaveLength(1);
      });

      it('applies several writes to one actor in batch order', async () => {
        await commitOk(store, write('a', 1), write('a', 2), write('a', 3));
        expect((await store.loadActor('a'))?.version).toBe(3);
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2, 3]);
      });

      it('refuses an update at the expected version whose prevHash is not the head hash, and changes nothing', async () => {
        await commitOk(store, write('a', 1));
        const forged = write('a', 2);
        forged.transition.prevHash = 'not-h1';
        const [error] = await store.commit([forged]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 1, actualVersion: 1 });
        expect((await store.loadActor('a'))?.headHash).toBe('h1');
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1]);
      });

      it('refuses the writes a batch made on top of a refused one, and commits the rest', async () => {
        // Another writer moved "a" to version 2 first; this batch's 1 → 2 is refused,
        // and its 2 → 3, made on top of it, finds version 2 written by someone else.
        await commitOk(store, write('a', 1));
        const theirs = write('a', 2, { snapshot: '{"theirs":true}' });
        theirs.actor.headHash = 'theirs-2';
        theirs.transition.hash = 'theirs-2';
        await commitOk(store, theirs);
        const [first, second, other] = await store.commit([
          write('a', 2),
          write('a', 3),
          write('b', 1),
        ]);
        expect(first).toBeInstanceOf(ConcurrencyError);
        expect(second).toBeInstanceOf(ConcurrencyError);
        expect(other).toBeNull();
        const row = await store.loadActor('a');
        expect([row?.version, row?.snapshot, row?.headHash]).toEqual([
          2,
          '{"theirs":true}',
          'theirs-2',
        ]);
        expect((await store.history('a')).map((t) => [t.seq, t.prevHash, t.hash])).toEqual([
          [1, 'h0', 'h1'],
          [2, 'h1', 'theirs-2'],
        ]);
        expect((await store.loadActor('b'))?.version).toBe(1);
      });

      it('returns an empty result for an empty batch', async () => {
        expect(await store.commit([])).toEqual([]);
      });
    });

    describe('signed request nonces', () => {
      it('remembers a nonce per key until it expires, then takes it as new', async () => {
        const remember = (key: string, nonce: string, now: number, expiresAt = 1_000) =>
          store.rememberRequest({ key, nonce, expiresAt, now });
        expect(await remember('k', 'n1', 0)).toBe('new');
        expect(await remember('k', 'n1', 999)).toBe('replayed');
        expect(await remember('other', 'n1', 999)).toBe('new');
        expect(await remember('k', 'n2', 999)).toBe('new');
        expect(await remember('k', 'n1', 1_001, 2_000)).toBe('new');
        expect(await remember('k', 'n1', 1_500, 2_000)).toBe('replayed');
      });
    });

    describe('history', () => {
      it('returns transition rows in seq order', async () => {
        await commitOk(store, write('b', 1));
        for (let v = 1; v <= 5; v++) await commitOk(store, write('a', v));
        const history = await store.history('a');
        expect(history.map((t) => t.seq)).toEqual([1, 2, 3, 4, 5]);
        expect(history[0]).toEqual(write('a', 1).transition);
        expect(history[4]).toEqual(write('a', 5).transition);
        expect(await store.history('nobody')).toEqual([]);
      });

      it('lists every actor id that has history, in order', async () => {
        await commitOk(store, write('c', 1), write('a', 1), write('b', 1));
        expect(await store.actorIdsWithHistory()).toEqual(['a', 'b', 'c']);
      });
    });

    describe('timers', () => {
      it("reads an actor's timers from its snapshot, earliest first, those due at once as it armed them", async () => {
        await commitOk(
          store,
          write('a', 1, {
            timers: [
              { id: 't1', dueAt: 200 },
              { id: 't2', dueAt: 100 },
              { id: 't0', dueAt: 200 },
            ],
          }),
        );
        expect((await store.timers('a')).map((t) => [t.timerId, t.dueAt])).toEqual([
          ['t2', 100],
          ['t1', 200],
          ['t0', 200],
        ]);
        await commitOk(
          store,
          write('a', 2, {
            timers: [
              { id: 't2', dueAt: 300 },
              { id: 't3', dueAt: 250 },
            ],
          }),
        );
        expect(await store.timers('a')).toEqual([timer('a', 't3', 250), timer('a', 't2', 300)]);
        expect(await store.timers('nobody')).toEqual([]);
      });

      it('lists due timers earliest first, bounded by now and limit', async () => {
        await commitOk(
          store,
          write('a', 1, {
            timers: [
              { id: 'late', dueAt: 400 },
              { id: 'x', dueAt: 200 },
            ],
          }),
          write('b', 1, {
            timers: [
              { id: 'y', dueAt: 100 },
              { id: 'z', dueAt: 200 },
            ],
          }),
          write('c', 1),
        );
        const ids = (rows: TimerRow[]) => rows.map((t) => `${t.actorId}/${t.timerId}`);
        expect(ids(await store.dueTimers(200, 10))).toEqual(['b/y', 'a/x', 'b/z']);
        expect(ids(await store.dueTimers(200, 2))).toEqual(['b/y', 'a/x']);
        expect(ids(await store.dueTimers(99, 10))).toEqual([]);
        expect(ids(await store.dueTimers(1_000, 10))).toEqual(['b/y', 'a/x', 'b/z', 'a/late']);
        await expect(store.dueTimers(200, -1)).rejects.toMatchObject({ kind: 'bad_query' });
      });

      it('reports the earliest pending due time, or undefined', async () => {
        expect(await store.nextTimerDue()).toBeUndefined();
        await commitOk(store, write('a', 1, { timers: [{ id: 't', dueAt: 700 }] }));
        await commitOk(store, write('b', 1, { timers: [{ id: 't', dueAt: 300 }] }));
        expect(await store.nextTimerDue()).toBe(300);
        await commitOk(store, write('b', 2, { timers: [] }));
        expect(await store.nextTimerDue()).toBe(700);
      });

      it('finds due timers exactly before and after the read models refresh, as commits arm and clear them', async () => {
        const due = async () => (await store.dueTimers(1_000, 10)).map((t) => t.actorId);
        await commitOk(
          store,
          write('a', 1, { timers: [{ id: 't', dueAt: 100 }] }),
          write('b', 1, { timers: [{ id: 't', dueAt: 5_000 }] }),
        );
        expect(await due()).toEqual(['a']);
        await store.refreshReadModels();
        expect(await due()).toEqual(['a']);
        // Cleared by one commit and armed by another since the last refresh.
        await commitOk(store, write('a', 2, { timers: [] }));
        await commitOk(store, write('b', 2, { timers: [{ id: 't', dueAt: 900 }] }));
        expect(await due()).toEqual(['b']);
        expect(await store.nextTimerDue()).toBe(900);
        await store.refreshReadModels();
        expect(await due()).toEqual(['b']);
        expect(await store.nextTimerDue()).toBe(900);
        await store.rebuildReadModels();
        expect(await due()).toEqual(['b']);
      });

      it('fires a timer once: a second writer that fires it at the same version conflicts', async () => {
        const both = [
          { id: 't1', dueAt: 100 },
          { id: 't2', dueAt: 200 },
        ];
        await commitOk(store, write('a', 1, { timers: both }));
        await commitOk(store, write('a', 2, { timers: [{ id: 't2', dueAt: 200 }] }));
        const [error] = await store.commit([write('a', 2, { timers: [{ id: 't2', dueAt: 200 }] })]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 1, actualVersion: 2 });
        expect(await store.history('a')).toHaveLength(2);
        expect((await store.timers('a')).map((t) => t.timerId)).toEqual(['t2']);
      });
    });

    describe('steps', () => {
      const step = { key: 'a:charge', actorId: 'a', name: 'charge', startedAt: 10 };

      it('begins a step once and returns the existing row on a second begin', async () => {
        const first = await store.beginStep(step);
        expect(first).toEqual({
          created: true,
          row: { ...step, status: 'executing', result: null, finishedAt: null, attempts: 1 },
        });
        const second = await store.beginStep({ ...step, startedAt: 99 });
        expect(second).toEqual({ created: false, row: first.row });
        expect(await store.getStep('a:charge')).toEqual(first.row);
        expect(await store.getStep('a:none')).toBeUndefined();
      });

      it('finishes an executing step with its result, once', async () => {
        await store.beginStep(step);
        await store.finishStep('a:charge', 'done', '{"id":"ch_1"}', 20);
        expect(await store.getStep('a:charge')).toMatchObject({
          status: 'done',
          result: '{"id":"ch_1"}',
          finishedAt: 20,
        });
        await expect(store.finishStep('a:charge', 'failed', '{}', 30)).rejects.toMatchObject({
          name: 'StoreError',
          operation: 'step',
          kind: 'conflict',
          actorId: 'a',
        });
        await expect(store.finishStep('a:none', 'done', '{}', 30)).rejects.toMatchObject({
          kind: 'not_found',
        });
      });

      it('restarts an uncertain or failed step with one more attempt, never a done one', async () => {
        await store.beginStep(step);
        await store.restartStep('a:charge', 40);
        expect(await store.getStep('a:charge')).toMatchObject({
          status: 'executing',
          startedAt: 40,
          attempts: 2,
        });
        await store.finishStep('a:charge', 'failed', '{"error":"declined"}', 45);
        await store.restartStep('a:charge', 50);
        expect(await store.getStep('a:charge')).toMatchObject({
          status: 'executing',
          result: null,
          finishedAt: null,
          startedAt: 50,
          attempts: 3,
        });
        await store.finishStep('a:charge', 'done', '{}', 60);
        await expect(store.restartStep('a:charge', 70)).rejects.toMatchObject({ kind: 'conflict' });
        await expect(store.restartStep('a:none', 70)).rejects.toMatchObject({ kind: 'not_found' });
      });

      it('lists steps filtered by actor and status', async () => {
        await store.beginStep(step);
        await store.beginStep({ key: 'a:mail', actorId: 'a', name: 'mail', startedAt: 5 });
        await store.beginStep({ key: 'b:charge', actorId: 'b', name: 'charge', startedAt: 1 });
        await store.finishStep('a:mail', 'done', 'null', 6);
        const keys = async (q?: Parameters<Store['listSteps']>[0]) =>
          (await store.listSteps(q)).map((s) => s.key);
        expect(await keys()).toEqual(['b:charge', 'a:mail', 'a:charge']);
        expect(await keys({ actorId: 'a' })).toEqual(['a:mail', 'a:charge']);
        expect(await keys({ status: 'executing' })).toEqual(['b:charge', 'a:charge']);
        expect(await keys({ actorId: 'a', status: 'done' })).toEqual(['a:mail']);
      });
    });

    describe('messages, steps and parents written with a transition', () => {
      const out = (to: string, idx: number, body = `{"type":"E${idx}"}`) => ({
        to,
        kind: 'event' as const,
        body,
        idx,
      });
      const pending = async (to: string) =>
        (await store.pendingMessages({ to, limit: 10 })).map((m) => ({
          id: m.id,
          from: m.from,
          fromSeq: m.fromSeq,
          idx: m.idx,
          body: m.body,
          at: m.at,
        }));
      /** `a` at version 2 has sent two messages to `r`; returns their ids. */
      async function sent(): Promise<number[]> {
        await commitOk(store, write('a', 1), write('r', 1));
        await commitOk(store, { ...write('a', 2), messagesOut: [out('r', 0), out('r', 1)] });
        return (await pending('r')).map((m) => m.id);
      }

      it('sends messages in their order with the transition, and begins its steps and links a created child', async () => {
        await sent();
        expect(await pending('r')).toEqual([
          expect.objectContaining({
            from: 'a',
            fromSeq: 2,
            idx: 0,
            body: '{"type":"E0"}',
            at: 1_002,
          }),
          expect.objectContaining({
            from: 'a',
            fromSeq: 2,
            idx: 1,
            body: '{"type":"E1"}',
            at: 1_002,
          }),
        ]);
        const [first, second] = await pending('r');
        expect((first?.id ?? 0) < (second?.id ?? 0)).toBe(true);
        await commitOk(store, {
          ...write('c', 1),
          parentId: 'a',
          stepsBegin: [{ key: 'c:charge', name: 'charge', startedAt: 7 }],
        });
        expect((await store.childrenOf('a')).map((row) => row.id)).toEqual(['c']);
        expect(await store.getStep('c:charge')).toMatchObject({
          actorId: 'c',
          name: 'charge',
          status: 'executing',
          attempts: 0,
        });
      });

      it("commits a batch of writes with messages, one actor's in batch order, each on its own", async () => {
        await commitOk(store, write('a', 1), write('b', 1), write('r', 1));
        const results = await store.commit([
          { ...write('a', 2), messagesOut: [out('r', 0)] },
          { ...write('b', 2), messagesOut: [out('r', 0)] },
          { ...write('a', 3), messagesOut: [out('r', 0), out('r', 1)] },
          { ...write('b', 2), messagesOut: [out('r', 1)] },
          { ...write('kid', 1), parentId: 'b' },
        ]);
        expect(results.slice(0, 3)).toEqual([null, null, null]);
        expect(results[3]).toBeInstanceOf(ConcurrencyError);
        expect(results[4]).toBeNull();
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2, 3]);
        const fromA = (await store.pendingMessages({ to: 'r', limit: 10 })).filter(
          (m) => m.from === 'a',
        );
        expect(fromA.map((m) => [m.fromSeq, m.idx])).toEqual([
          [2, 0],
          [3, 0],
          [3, 1],
        ]);
        const fromB = (await pending('r')).filter((m) => m.from === 'b');
        expect(fromB.map((m) => m.fromSeq)).toEqual([2]);
        expect((await store.childrenOf('b')).map((row) => row.id)).toEqual(['kid']);
      });

      it("keeps one actor's batch order when only some of its writes have messages", async () => {
        await commitOk(store, write('a', 1), write('r', 1));
        const results = await store.commit([
          write('a', 2),
          { ...write('a', 3), messagesOut: [out('r', 0)] },
          write('a', 4),
        ]);
        expect(results).toEqual([null, null, null]);
        expect((await store.history('a')).map((t) => t.seq)).toEqual([1, 2, 3, 4]);
        expect((await pending('r')).map((m) => [m.from, m.fromSeq])).toEqual([['a', 3]]);
      });

      it('delivers a message once: a second write consuming it conflicts and writes nothing', async () => {
        const [id] = await sent();
        await commitOk(store, { ...write('r', 2), consumeMessage: id });
        expect((await pending('r')).map((m) => m.id)).not.toContain(id);
        const [error] = await store.commit([
          {
            ...write('r', 3),
            consumeMessage: id,
            messagesOut: [out('a', 0)],
            stepsBegin: [{ key: 'r:twice', name: 'twice', startedAt: 1 }],
          },
        ]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'r', expectedVersion: 2, actualVersion: 2 });
        expect((await store.loadActor('r'))?.version).toBe(2);
        expect((await store.history('r')).map((t) => t.seq)).toEqual([1, 2]);
        expect(await pending('a')).toEqual([]);
        expect(await store.getStep('r:twice')).toBeUndefined();
      });

      it('never gives a new message the id of a delivered one: a late delivery of that id conflicts', async () => {
        const [first, second] = await sent();
        // The newest message (the largest id) is delivered; then `a` sends another.
        await commitOk(store, { ...write('r', 2), consumeMessage: second });
        await commitOk(store, { ...write('a', 3), messagesOut: [out('r', 0, '{"type":"LATE"}')] });
        const newer = (await pending('r')).find((m) => m.body === '{"type":"LATE"}')?.id ?? -1;
        expect(newer).toBeGreaterThan(second ?? Infinity);
        // A deliverer that read `second` before it was delivered, at the current version.
        const [late] = await store.commit([{ ...write('r', 3), consumeMessage: second }]);
        expect(late).toBeInstanceOf(ConcurrencyError);
        expect((await store.history('r')).map((t) => t.seq)).toEqual([1, 2]);
        expect((await pending('r')).map((m) => m.id)).toEqual([first, newer]);
        // The control: the newer message, by its own id, is delivered.
        await commitOk(store, { ...write('r', 3), consumeMessage: newer });
        expect((await pending('r')).map((m) => m.id)).toEqual([first]);
      });

      it('keeps the message of a write that loses its compare-and-set, and of a creation whose actor exists', async () => {
        const [first, second] = await sent();
        const [stale] = await store.commit([
          { ...write('r', 3), consumeMessage: first, messagesOut: [out('a', 0)] },
        ]);
        expect(stale).toMatchObject({ name: 'ConcurrencyError', actualVersion: 1 });
        const [exists] = await store.commit([
          { ...write('r', 1), consumeMessage: second, parentId: 'a' },
        ]);
        expect(exists).toMatchObject({ name: 'ConcurrencyError', actualVersion: 1 });
        expect((await pending('r')).map((m) => m.id)).toEqual([first, second]);
        expect(await pending('a')).toEqual([]);
        expect(await store.childrenOf('a')).toEqual([]);
      });

      it('creates a spawned child once from its message, and refuses the message gone', async () => {
        await commitOk(store, write('p', 1));
        await commitOk(store, {
          ...write('p', 2),
          messagesOut: [out('kid', 0, '{"src":"child"}'), out('kid2', 1, '{"src":"child"}')],
        });
        const [kid, kid2] = (await store.pendingMessages({ limit: 10 })).map((m) => m.id);
        await commitOk(store, { ...write('kid', 1), consumeMessage: kid, parentId: 'p' });
        expect(await store.dropMessage(kid2 ?? -1)).toBe(true);
        const [gone] = await store.commit([
          { ...write('kid2', 1), consumeMessage: kid2, parentId: 'p' },
        ]);
        expect(gone).toMatchObject({
          name: 'ConcurrencyError',
          expectedVersion: 0,
          actualVersion: 0,
        });
        expect(await store.loadActor('kid2')).toBeUndefined();
        expect((await store.childrenOf('p')).map((row) => row.id)).toEqual(['kid']);
        expect(await store.pendingMessages({ limit: 10 })).toEqual([]);
      });
    });

    describe('listing actors', () => {
      beforeEach(async () => {
        await commitOk(
          store,
          write('a1', 1, { machineId: 'm', state: 'running' }),
          write('a2', 1, { machineId: 'm', state: 'paused' }),
          write('a3', 1, { machineId: 'm', state: 'running', status: 'done' }),
          write('b1', 1, { machineId: 'n', state: 'running' }),
          write('b2', 1, { machineId: 'n', state: 'paused', status: 'error' }),
        );
      });
      const ids = (rows: ActorRow[]) => rows.map((a) => a.id);

      it('filters by machine, state and status', async () => {
        expect(ids(await store.listActors({ machineId: 'm' }))).toEqual(['a1', 'a2', 'a3']);
        expect(ids(await store.listActors({ state: 'running' }))).toEqual(['a1', 'a3', 'b1']);
        expect(ids(await store.listActors({ status: 'active' }))).toEqual(['a1', 'a2', 'b1']);
        expect(
          ids(await store.listActors({ machineId: 'm', state: 'running', status: 'active' })),
        ).toEqual(['a1']);
        expect(await store.listActors({ machineId: 'nope' })).toEqual([]);
      });

      it('pages by id with afterId and limit', async () => {
        const pages: string[][] = [];
        let afterId: string | undefined;
        for (;;) {
          const page = await store.listActors({ afterId, limit: 2 });
          if (page.length === 0) break;
          pages.push(ids(page));
          afterId = page.at(-1)?.id;
        }
        expect(pages).toEqual([['a1', 'a2'], ['a3', 'b1'], ['b2']]);
        expect(ids(await store.listActors({ state: 'paused', afterId: 'a2' }))).toEqual(['b2']);
        expect(await store.listActors({ limit: 0 })).toEqual([]);
      });

      it('orders and pages ids by their bytes, whatever the locale', async () => {
        const odd = ['b', 'B', 'a', '_', 'é', 'Z', 'a-'];
        await commitOk(
          store,
          ...odd.map((id) => write(id, 1, { timers: [{ id: 't', dueAt: 7 }] })),
        );
        const bytes = ['B', 'Z', '_', 'a', 'a-', 'a1', 'a2', 'a3', 'b', 'b1', 'b2', 'é'];
        expect(ids(await store.listActors())).toEqual(bytes);
        expect(ids(await store.listActors({ afterId: 'a', limit: 3 }))).toEqual(['a-', 'a1', 'a2']);
        expect(ids(await store.listActors({ afterId: 'b2' }))).toEqual(['é']);
        expect((await store.actorIdsWithHistory()).filter((id) => odd.includes(id))).toEqual(
          bytes.filter((id) => odd.includes(id)),
        );
        expect((await store.dueTimers(7, 100)).map((t) => t.actorId)).toEqual(
          bytes.filter((id) => odd.includes(id)),
        );
      });

      it('returns at most 100 actors by default', async () => {
        const many = Array.from({ length: 105 }, (_, i) =>
          write(`c${String(i).padStart(3, '0')}`, 1),
        );
        await commitOk(store, ...many);
        const rows = await store.listActors();
        expect(rows).toHaveLength(100);
        expect(rows[0]?.id).toBe('a1');
      });
    });

    describe('leases', () => {
      const take = (owner: string, now: number, limit = 10, actorIds?: string[]) =>
        store.acquireLeases({ owner, now, leaseUntil: now + 100, limit, actorIds });
      const ids = (rows: Array<{ actorId: string }>) => rows.map((r) => r.actorId);

      it('leases unowned active actors in id order up to the limit, never done ones', async () => {
        await commitOk(
          store,
          write('c', 1),
          write('a', 1),
          write('d', 1, { status: 'done' }),
          write('b', 1),
        );
        expect(await take('A', 1_000, 2)).toEqual([
          { actorId: 'a', owner: 'A', leaseUntil: 1_100 },
          { actorId: 'b', owner: 'A', leaseUntil: 1_100 },
        ]);
        // Actors A already holds are not returned again: repeated calls page on.
        expect(ids(await take('A', 1_000, 2))).toEqual(['c']);
        expect(await take('A', 1_000, 2)).toEqual([]);
        expect(await store.lease('a')).toEqual({ actorId: 'a', owner: 'A', leaseUntil: 1_100 });
        expect(await store.lease('d')).toBeUndefined();
        expect(await store.lease('nobody')).toBeUndefined();
      });

      it('does not let B take an actor A holds until the lease has expired', async () => {
        await commitOk(store, write('a', 1));
        await take('A', 1_000);
        expect(await take('B', 1_050)).toEqual([]);
        // Expired only at a `now` greater than leaseUntil.
        expect(await take('B', 1_100)).toEqual([]);
        expect(await store.lease('a')).toMatchObject({ owner: 'A' });
        expect(await take('B', 1_101)).toEqual([{ actorId: 'a', owner: 'B', leaseUntil: 1_201 }]);
        expect(await store.lease('a')).toEqual({ actorId: 'a', owner: 'B', leaseUntil: 1_201 });
      });

      it('takes or renews exactly the listed actors, whatever their status, skipping ones held by others', async () => {
        await commitOk(
          store,
          write('a', 1),
          write('b', 1, { status: 'done' }),
          write('c', 1),
          write('d', 1),
        );
        await take('B', 1_000, 10, ['c']);
        await take('A', 1_000, 10, ['d']);
        expect(await take('A', 1_050, 10, ['d', 'c', 'b', 'a', 'ghost', 'a'])).toEqual([
          { actorId: 'a', owner: 'A', leaseUntil: 1_150 },
          { actorId: 'b', owner: 'A', leaseUntil: 1_150 },
          { actorId: 'd', owner: 'A', leaseUntil: 1_150 },
        ]);
        expect(await store.lease('c')).toMatchObject({ owner: 'B', leaseUntil: 1_100 });
        expect(await take('A', 1_050, 10, [])).toEqual([]);
      });

      it('renews a lease only while its owner still holds it', async () => {
        await commitOk(store, write('a', 1), write('b', 1), write('c', 1));
        await take('A', 1_000, 10, ['a', 'b']);
        await take('B', 1_000, 10, ['c']);
        expect(
          await store.renewLeases({
            owner: 'A',
            now: 1_100,
            leaseUntil: 1_500,
            actorIds: ['c', 'b', 'a', 'ghost'],
          }),
        ).toEqual(['a', 'b']);
        expect(await store.lease('a')).toMatchObject({ owner: 'A', leaseUntil: 1_500 });
        expect(await store.lease('c')).toMatchObject({ owner: 'B', leaseUntil: 1_100 });
        // Once expired, a lease cannot be renewed, even before anyone else took it.
        expect(
          await store.renewLeases({ owner: 'B', now: 1_101, leaseUntil: 2_000, actorIds: ['c'] }),
        ).toEqual([]);
        expect(await store.lease('c')).toMatchObject({ owner: 'B', leaseUntil: 1_100 });
      });

      it('releases only the leases its owner holds, so others can take them at once', async () => {
        await commitOk(store, write('a', 1), write('b', 1));
        await take('A', 1_000, 10, ['a']);
        await take('B', 1_000, 10, ['b']);
        await store.releaseLeases('A', ['a', 'b', 'ghost']);
        expect(await store.lease('a')).toBeUndefined();
        expect(await store.lease('b')).toMatchObject({ owner: 'B' });
        expect(ids(await take('C', 1_001))).toEqual(['a']);
      });

      it('leaves the lease untouched when a compare-and-set write commits', async () => {
        await commitOk(store, write('a', 1));
        await take('A', 1_000);
        await commitOk(store, write('a', 2), write('a', 3, { lease: { owner: 'A', now: 1_050 } }));
        expect(await store.lease('a')).toEqual({ actorId: 'a', owner: 'A', leaseUntil: 1_100 });
        expect((await store.loadActor('a'))?.version).toBe(3);
      });

      it('refuses bad lease requests as bad_query', async () => {
        await expect(take('', 1_000)).rejects.toMatchObject({
          name: 'StoreError',
          kind: 'bad_query',
        });
        await expect(take('A', 1_000, -1)).rejects.toMatchObject({ kind: 'bad_query' });
        await expect(
          store.acquireLeases({ owner: 'A', now: 1.5, leaseUntil: 2, limit: 1 }),
        ).rejects.toMatchObject({ kind: 'bad_query' });
      });
    });

    describe('lease fencing', () => {
      const fenced = (actorId: string, version: number, owner: string, now: number) =>
        write(actorId, version, { lease: { owner, now } });

      it('fails the fenced write of a worker whose lease was taken over, and commits the rest of the batch', async () => {
        await commitOk(store, write('a', 1, { timers: [{ id: 't', dueAt: 500 }] }), write('b', 1));
        await store.acquireLeases({ owner: 'A', now: 1_000, leaseUntil: 1_100, limit: 10 });
        await commitOk(store, fenced('a', 2, 'A', 1_100));
        // A stalls past its lease; B takes the actor over.
        await store.acquireLeases({ owner: 'B', now: 1_200, leaseUntil: 1_300, limit: 10 });
        const before = {
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
        };
        const stale = write('a', 3, { timers: [], lease: { owner: 'A', now: 1_050 } });
        const [lost, other] = await store.commit([stale, write('b', 2)]);
        expect(lost).toBeInstanceOf(LeaseLostError);
        expect(lost).toMatchObject({ actorId: 'a', owner: 'A', holder: 'B' });
        expect(other).toBeNull();
        expect({
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
        }).toEqual(before);
        expect((await store.loadActor('b'))?.version).toBe(2);
        await commitOk(store, write('a', 3, { timers: [], lease: { owner: 'B', now: 1_250 } }));
      });

      it('fails a fenced write once the lease expired, even if nobody took the actor', async () => {
        await commitOk(store, write('a', 1));
        await store.acquireLeases({ owner: 'A', now: 1_000, leaseUntil: 1_100, limit: 10 });
        const [error] = await store.commit([fenced('a', 2, 'A', 1_101)]);
        expect(error).toBeInstanceOf(LeaseLostError);
        expect(error).toMatchObject({ actorId: 'a', owner: 'A', holder: undefined });
        expect((await store.loadActor('a'))?.version).toBe(1);
      });

      it('fails a fenced write on an actor that is unowned or missing', async () => {
        await commitOk(store, write('a', 1));
        const [unowned, missing] = await store.commit([
          fenced('a', 2, 'A', 1_000),
          fenced('ghost', 2, 'A', 1_000),
        ]);
        expect(unowned).toBeInstanceOf(LeaseLostError);
        expect(missing).toBeInstanceOf(LeaseLostError);
        expect(await store.history('ghost')).toEqual([]);
      });

      it('lets plain writes through whoever holds the lease, ordered by compare-and-set alone', async () => {
        await commitOk(store, write('a', 1));
        await store.acquireLeases({ owner: 'A', now: 1_000, leaseUntil: 1_100, limit: 10 });
        await commitOk(store, write('a', 2));
        const [stale] = await store.commit([fenced('a', 2, 'A', 1_050)]);
        expect(stale).toBeInstanceOf(ConcurrencyError);
        expect(stale).toMatchObject({ expectedVersion: 1, actualVersion: 2 });
      });
    });

    describe('timer claims', () => {
      const claim = (owner: string, now: number, limit = 10) =>
        store.claimDueTimers({ owner, now, claimUntil: now + 50, limit });
      const keys = (rows: TimerClaim[]) => rows.map((t) => `${t.actorId}/${t.timerId}`);

      beforeEach(async () => {
        await commitOk(
          store,
          write('a', 1, {
            timers: [
              { id: 'x', dueAt: 200 },
              { id: 'late', dueAt: 900 },
            ],
          }),
          write('b', 1, {
            timers: [
              { id: 'y', dueAt: 100 },
              { id: 'z', dueAt: 200 },
            ],
          }),
        );
      });

      it('claims the due timers of up to limit actors, earliest first, taking their leases', async () => {
        expect(await claim('A', 200, 1)).toEqual([
          { ...timer('b', 'y', 100), claimedBy: 'A', claimUntil: 250 },
          { ...timer('b', 'z', 200), claimedBy: 'A', claimUntil: 250 },
        ]);
        expect(await store.lease('b')).toEqual({ actorId: 'b', owner: 'A', leaseUntil: 250 });
        expect(keys(await claim('B', 200))).toEqual(['a/x']);
        expect(await claim('C', 200)).toEqual([]);
        // Claims are invisible to the timers themselves.
        expect(await store.timers('b')).toEqual([timer('b', 'y', 100), timer('b', 'z', 200)]);
      });

      it('gives concurrent claimers disjoint sets that together cover every due timer', async () => {
        const results = await Promise.all(
          ['A', 'B', 'C', 'D'].map((owner) => claim(owner, 1_000, 1)),
        );
        const all = results.flatMap(keys);
        expect(new Set(all).size).toBe(all.length);
        expect(all.sort()).toEqual(['a/late', 'a/x', 'b/y', 'b/z']);
      });

      it('lets another worker claim an actor again once its lease expired', async () => {
        expect(keys(await claim('A', 100))).toEqual(['b/y']);
        expect(keys(await claim('B', 150))).toEqual([]);
        expect(keys(await claim('B', 151))).toEqual(['b/y']);
      });

      it('leaves an actor another worker leased to it, and claims again one its owner holds', async () => {
        await store.acquireLeases({ owner: 'A', now: 0, leaseUntil: 5_000, limit: 1 });
        expect((await store.lease('a'))?.owner).toBe('A');
        expect(keys(await claim('B', 1_000))).toEqual(['b/y', 'b/z']);
        expect(keys(await claim('A', 1_000))).toEqual(['a/x', 'a/late']);
        // b commits (z moves): B, which claimed it, still holds it; A does not get it.
        await commitOk(store, write('b', 2, { timers: [{ id: 'z', dueAt: 1_010 }] }));
        expect(keys(await claim('A', 1_010))).toEqual(['a/x', 'a/late']);
        expect(keys(await claim('B', 1_010))).toEqual(['b/z']);
      });
    });

    describe('rejections', () => {
      it('records rejections and lists them since a time, oldest first', async () => {
        const rejection = (actorId: string, at: number) => ({
          actorId,
          machineId: 'm',
          state: 'running',
          eventType: 'PAUSE',
          reason: 'invalid_transition',
          at,
        });
        await store.recordRejection(rejection('a', 30));
        await store.recordRejection(rejection('b', 10));
        await store.recordRejection(rejection('a', 20));
        expect((await store.listRejections()).map((r) => r.at)).toEqual([10, 20, 30]);
        expect(await store.listRejections({ since: 20 })).toEqual([
          rejection('a', 20),
          rejection('a', 30),
        ]);
        expect(await store.listRejections({ since: 15, actorId: 'b' })).toEqual([]);
        expect((await store.listRejections({ actorId: 'b' })).map((r) => r.at)).toEqual([10]);
      });

      it('prunes rejections older than a time, then all but the newest', async () => {
        const reject = (actorId: string, at: number) =>
          store.recordRejection({
            actorId,
            machineId: 'm',
            state: 's',
            eventType: 'X',
            reason: 'invalid_transition',
            at,
          });
        for (const [id, at] of [
          ['a', 10],
          ['b', 20],
          ['c', 30],
          ['d', 30],
          ['e', 40],
          ['f', 50],
        ] as const) {
          await reject(id, at);
        }
        expect(await store.pruneRejections({ before: 20 })).toBe(1);
        expect(await store.pruneRejections({ keep: 3 })).toBe(2);
        // Of the two rows at 30, the one recorded later is newer.
        expect((await store.listRejections()).map((r) => r.actorId)).toEqual(['d', 'e', 'f']);
        expect(await store.pruneRejections({ keep: 5 })).toBe(0);
        expect(await store.pruneRejections({ before: 100, keep: 1 })).toBe(3);
        expect(await store.listRejections()).toEqual([]);
      });
    });

    describe('observability queries', () => {
      type MoveOptions = WriteOptions & { userId?: string; from?: string | null };
      /** The write that moves `actorId` from `options.from` to `to` at `at` (version 1 creates it). */
      const move = (
        actorId: string,
        version: number,
        to: string,
        at: number,
        options: MoveOptions = {},
      ): ActorWrite => {
        const w = write(actorId, version, { ...options, state: to, at });
        return {
          ...w,
          transition: { ...w.transition, fromState: options.from ?? null },
          ...(options.userId !== undefined ? { userId: options.userId } : {}),
        };
      };
      /** A chain of states for one actor: each entry is [state, at]; the first creates it. */
      const walk = async (
        actorId: string,
        steps: Array<[string, number]>,
        options: MoveOptions = {},
      ) => {
        let from: string | null = null;
        for (const [i, [state, at]] of steps.entries()) {
          await commitOk(store, move(actorId, i + 1, state, at, { ...options, from }));
          from = state;
        }
      };

      it('counts rejections in a window, optionally of one reason', async () => {
        const reject = (at: number, reason = 'invalid_transition') =>
          store.recordRejection({
            actorId: 'a',
            machineId: 'm',
            state: 's',
            eventType: 'X',
            reason,
            at,
          });
        for (const at of [5, 10, 15, 20]) await reject(at);
        await reject(12, 'unknown_event');
        expect(await store.countRejections({ since: 10 })).toBe(4);
        expect(await store.countRejections({ since: 10, until: 20 })).toBe(3);
        expect(await store.countRejections({ since: 0, reason: 'invalid_transition' })).toBe(4);
        expect(await store.countRejections({ since: 21 })).toBe(0);
      });

      it('counts actors per machine, state and status with their summed age', async () => {
        await walk('a', [['running', 100]], { machineId: 'm1', createdAt: 100 });
        await walk(
          'b',
          [
            ['running', 100],
            ['done', 400],
          ],
          { machineId: 'm1', createdAt: 100, status: 'done' },
        );
        await walk(
          'c',
          [
            ['running', 200],
            ['done', 250],
          ],
          { machineId: 'm1', createdAt: 200, status: 'done' },
        );
        await walk('d', [['running', 50]], { machineId: 'm0', createdAt: 50, userId: 'u1' });
        expect(await store.countActors()).toEqual([
          { machineId: 'm0', state: 'running', status: 'active', count: 1, totalAgeMs: 0 },
          { machineId: 'm1', state: 'done', status: 'done', count: 2, totalAgeMs: 350 },
          { machineId: 'm1', state: 'running', status: 'active', count: 1, totalAgeMs: 0 },
        ]);
        expect(await store.countActors({ machineId: 'm0' })).toHaveLength(1);
        expect(await store.countActors({ userId: 'u1' })).toEqual([
          { machineId: 'm0', state: 'running', status: 'active', count: 1, totalAgeMs: 0 },
        ]);
        expect(await store.countActors({ updatedSince: 260 })).toEqual([
          { machineId: 'm1', state: 'done', status: 'done', count: 1, totalAgeMs: 300 },
        ]);
        expect(await store.countActors({ userId: 'nobody' })).toEqual([]);
      });

      it('knows since when each actor stands in its state, across updates that keep the state', async () => {
        await walk('a', [
          ['planned', 10],
          ['running', 20],
          ['running', 30],
          ['running', 40],
        ]);
        await walk('b', [
          ['planned', 10],
          ['running', 25],
          ['paused', 35],
        ]);
        await walk('c', [['running', 5]], { userId: 'u1' });
        expect(await store.actorsInStates({ states: ['running'] })).toEqual([
          {
            actorId: 'c',
            machineId: 'task-lifecycle',
            state: 'running',
            status: 'active',
            stateSince: 5,
            updatedAt: 5,
            userId: 'u1',
          },
          {
            actorId: 'a',
            machineId: 'task-lifecycle',
            state: 'running',
            status: 'active',
            stateSince: 20,
            updatedAt: 40,
            userId: null,
          },
        ]);
        const ids = async (query: Parameters<Store['actorsInStates']>[0]) =>
          (await store.actorsInStates(query)).map((d) => d.actorId);
        expect(await ids({ states: ['running', 'paused'], enteredBefore: 20 })).toEqual(['c', 'a']);
        expect(await ids({ states: ['running', 'paused'], enteredBefore: 19 })).toEqual(['c']);
        expect(await ids({ states: ['paused'] })).toEqual(['b']);
        expect(await ids({ states: ['running', 'paused'], userId: 'u1' })).toEqual(['c']);
        expect(await ids({ states: ['running', 'paused'], limit: 1 })).toEqual(['c']);
        expect(await ids({ states: ['running'], machineId: 'other' })).toEqual([]);
        expect(await ids({ states: [] })).toEqual([]);
      });

      it('applies writes that name the row they replace, setting what changed and keeping the rest', async () => {
        // The runtime passes `previous`: the store may write only the columns that
        // differ from it. Each step changes another set of them.
        const steps: Array<{ state: string; status?: ActorStatus; chart?: number; at: number }> = [
          { state: 'running', at: 10 },
          { state: 'running', at: 20 },
          { state: 'paused', at: 30 },
          { state: 'paused', chart: 2, at: 40 },
          { state: 'done', status: 'done', chart: 3, at: 50 },
        ];
        let previous: ActorRow | undefined;
        for (const [i, step] of steps.entries()) {
          const w = move('a', i + 1, step.state, step.at, {
            from: previous?.state ?? null,
            ...(step.status !== undefined ? { status: step.status } : {}),
          });
          const actor: ActorRow = { ...w.actor, chartVersion: step.chart ?? 1, createdAt: 10 };
          await commitOk(store, {
            ...w,
            actor,
            ...(previous !== undefined ? { previous } : {}),
            ...(i === 3 ? { nextDueAt: 99 } : {}),
          });
          expect(await store.loadActor('a')).toEqual(actor);
          previous = actor;
        }
        const [dwell] = await store.actorsInStates({ states: ['done'] });
        expect(dwell).toMatchObject({
          state: 'done',
          status: 'done',
          stateSince: 50,
          updatedAt: 50,
        });
        const [paused] = await store.actorsInStates({ states: ['paused'] });
        expect(paused).toBeUndefined();
        expect(await store.history('a')).toHaveLength(steps.length);
      });

      it('records the user only at creation and ignores it on updates', async () => {
        await commitOk(store, move('a', 1, 'running', 10, { userId: 'u1' }));
        await commitOk(store, { ...move('a', 2, 'paused', 20, { from: 'running' }), userId: 'u2' });
        const [dwell] = await store.actorsInStates({ states: ['paused'] });
        expect(dwell?.userId).toBe('u1');
        const [error] = await store.commit([{ ...write('b', 1), userId: '' }]);
        expect(error).toMatchObject({ kind: 'invalid_write' });
      });

      it('counts state entries per actor in a window, ignoring rows that stay in the state', async () => {
        await walk('flappy', [
          ['running', 10],
          ['retrying', 20],
          ['running', 30],
          ['retrying', 40],
          ['retrying', 45],
          ['running', 50],
          ['retrying', 60],
        ]);
        await walk('calm', [
          ['running', 10],
          ['retrying', 20],
          ['running', 30],
        ]);
        expect(await store.countStateEntries({ toStates: ['retrying'], since: 0 })).toEqual([
          {
            actorId: 'flappy',
            machineId: 'task-lifecycle',
            state: 'retrying',
            status: 'active',
            count: 3,
          },
          {
            actorId: 'calm',
            machineId: 'task-lifecycle',
            state: 'running',
            status: 'active',
            count: 1,
          },
        ]);
        const counts = async (query: Parameters<Store['countStateEntries']>[0]) =>
          (await store.countStateEntries(query)).map((c) => [c.actorId, c.count]);
        expect(await counts({ toStates: ['retrying'], since: 0, minCount: 3 })).toEqual([
          ['flappy', 3],
        ]);
        expect(await counts({ toStates: ['retrying'], since: 21 })).toEqual([['flappy', 2]]);
        expect(await counts({ toStates: ['retrying', 'running'], since: 0, limit: 1 })).toEqual([
          ['flappy', 6],
        ]);
      });

      it('feeds transition rows since a time in (at, actor, seq) order with their machine', async () => {
        await walk('b', [
          ['x', 10],
          ['y', 30],
        ]);
        await walk(
          'a',
          [
            ['x', 10],
            ['y', 20],
          ],
          { machineId: 'other' },
        );
        const feed = await store.transitionsSince({ since: 0 });
        expect(feed.map((t) => [t.at, t.actorId, t.seq, t.machineId])).toEqual([
          [10, 'a', 1, 'other'],
          [10, 'b', 1, 'task-lifecycle'],
          [20, 'a', 2, 'other'],
          [30, 'b', 2, 'task-lifecycle'],
        ]);
        expect(feed[3]).toEqual({
          ...(await store.history('b'))[1],
          machineId: 'task-lifecycle',
        });
        const since = async (query: Parameters<Store['transitionsSince']>[0]) =>
          (await store.transitionsSince(query)).map((t) => `${t.actorId}${t.seq}`);
        expect(await since({ since: 15 })).toEqual(['a2', 'b2']);
        expect(await since({ since: 0, limit: 2 })).toEqual(['a1', 'b1']);
        expect(await since({ since: 0, machineId: 'other' })).toEqual(['a1', 'a2']);
      });
    });

    describe('isolation of returned rows', () => {
      it('returns copies: mutating what goes in or comes out changes nothing stored', async () => {
        const create = write('a', 1, { timers: [{ id: 't', dueAt: 5 }] });
        await commitOk(store, create);
        const pristine = write('a', 1, { timers: [{ id: 't', dueAt: 5 }] });
        create.actor.state = 'mutated';
        create.transition.toState = 'mutated';
        create.nextDueAt = 1;

        const loaded = await store.loadActor('a');
        if (loaded) loaded.snapshot = 'mutated';
        const listed = await store.listActors();
        if (listed[0]) listed[0].version = 42;
        const history = await store.history('a');
        if (history[0]) history[0].hash = 'mutated';
        const timers = await store.timers('a');
        if (timers[0]) timers[0].event = 'mutated';
        const due = await store.dueTimers(10, 10);
        if (due[0]) due[0].dueAt = 99;

        await store.beginStep({ key: 'a:s', actorId: 'a', name: 's', startedAt: 1 });
        const step = await store.getStep('a:s');
        if (step) step.status = 'done';
        const rejection = {
          actorId: 'a',
          machineId: 'm',
          state: 's1',
          eventType: 'X',
          reason: 'invalid_transition',
          at: 1,
        };
        await store.recordRejection(rejection);
        rejection.reason = 'mutated';
        const rejections = await store.listRejections();
        if (rejections[0]) rejections[0].state = 'mutated';

        expect(await store.loadActor('a')).toEqual(pristine.actor);
        expect(await store.history('a')).toEqual([pristine.transition]);
        expect(await store.timers('a')).toEqual([timer('a', 't', 5)]);
        expect(await store.nextTimerDue()).toBe(5);
        expect((await store.getStep('a:s'))?.status).toBe('executing');
        expect(await store.listRejections()).toEqual([
          { ...rejection, reason: 'invalid_transition' },
        ]);
      });
    });

    describe('closing', () => {
      it('refuses every operation after close with a StoreError of kind closed', async () => {
        await commitOk(store, write('a', 1));
        await store.close();
        const calls: Array<[string, () => Promise<unknown>]> = [
          ['commit', () => store.commit([write('a', 2)])],
          ['load', () => store.loadActor('a')],
          ['query', () => store.listActors()],
          ['query', () => store.history('a')],
          ['query', () => store.actorIdsWithHistory()],
          ['timer', () => store.timers('a')],
          ['timer', () => store.dueTimers(0, 1)],
          ['timer', () => store.nextTimerDue()],
          ['step', () => store.getStep('a:s')],
          ['step', () => store.beginStep({ key: 'a:s', actorId: 'a', name: 's', startedAt: 1 })],
          ['step', () => store.finishStep('a:s', 'done', '{}', 2)],
          ['step', () => store.restartStep('a:s', 2)],
          ['step', () => store.listSteps()],
          ['commit', () => store.acquireLeases({ owner: 'A', now: 1, leaseUntil: 2, limit: 1 })],
          [
            'commit',
            () => store.renewLeases({ owner: 'A', now: 1, leaseUntil: 2, actorIds: ['a'] }),
          ],
          ['commit', () => store.releaseLeases('A', ['a'])],
          ['load', () => store.lease('a')],
          ['timer', () => store.claimDueTimers({ owner: 'A', now: 1, claimUntil: 2, limit: 1 })],
          [
            'commit',
            () =>
              store.recordRejection({
                actorId: 'a',
                machineId: 'm',
                state: 's',
                eventType: 'X',
                reason: 'r',
                at: 1,
              }),
          ],
          ['query', () => store.listRejections()],
          ['query', () => store.countRejections({ since: 0 })],
          ['query', () => store.countActors()],
          ['query', () => store.actorsInStates({ states: ['s1'] })],
          ['query', () => store.countStateEntries({ toStates: ['s1'], since: 0 })],
          ['query', () => store.transitionsSince({ since: 0 })],
        ];
        for (const [operation, call] of calls) {
          const error: unknown = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(StoreError);
          expect(error).toMatchObject({ operation, kind: 'closed' });
        }
        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}

for (const target of targets) storeConformance(target);

/** What `work` throws (undefined if it returns). */
function thrownBy(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('openStore', () => {
  it('opens sqlite in ./agentcharts.db when given no URL', async () => {
    const dir = mkdtempSync(join(scratch, 'default-'));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const store = openStore();
      expect([store.kind, store.location]).toEqual(['sqlite', 'sqlite:./agentcharts.db']);
      await store.close();
      expect(existsSync(join(dir, 'agentcharts.db'))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it('opens memory: and sqlite::memory: stores', async () => {
    const memory = openStore('memory:');
    const sqlite = openStore('sqlite::memory:');
    expect([memory.kind, sqlite.kind]).toEqual(['memory', 'sqlite']);
    await Promise.all([memory.close(), sqlite.close()]);
  });

  it('parses sqlite URL parameters', () => {
    expect(
      parseStoreUrl('sqlite:data/a.db?synchronous=NORMAL&busy_timeout=200&readonly=1'),
    ).toEqual({
      kind: 'sqlite',
      file: 'data/a.db',
      options: { synchronous: 'normal', busyTimeoutMs: 200, readonly: true },
    });
    expect(parseStoreUrl()).toEqual({ kind: 'sqlite', file: './agentcharts.db', options: {} });
  });

  it('opens a postgres URL without connecting, and keeps the password out of its location', async () => {
    const store = openStore(
      'postgresql://admin:hunter2@db.invalid:5433/app?statement_timeout=250&schema=jobs',
    );
    expect(store.kind).toBe('postgres');
    expect(store.location).toBe('postgresql://admin@db.invalid:5433/app?schema=jobs');
    await store.close();
  });

  it('parses postgres URL parameters and passes the others to pg', () => {
    expect(
      parseStoreUrl(
        'postgres://u:p@h/db?statement_timeout=250&connect_timeout=3&pool_max=4&rollback_retries=0&schema=app_1&sslmode=disable',
      ),
    ).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://u:p@h/db?sslmode=disable',
      options: {
        statementTimeoutMs: 250,
        connectTimeoutMs: 3_000,
        poolMax: 4,
        rollbackRetries: 0,
        schema: 'app_1',
      },
    });
  });

  it.each([-1, 1.5, Number.NaN, '3'])(
    'refuses rollbackRetries %s as an option of the PostgreSQL store, and takes 0',
    async (retries) => {
      const url = 'postgres://u:p@db.invalid/db';
      const error = thrownBy(() =>
        openPostgresStore(url, { rollbackRetries: retries as unknown as number }),
      );
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect((error as Error).message).toContain('rollbackRetries');
      await openPostgresStore(url, { rollbackRetries: 0 }).close();
    },
  );

  it.each([
    'mysql://admin:hunter2@host/db',
    'agentcharts.db',
    'sqlite:',
    'sqlite:a.db?journal=delete',
    'sqlite:a.db?synchronous=off',
    'sqlite:a.db?busy_timeout=soon',
    'sqlite:a.db?readonly=maybe',
    'memory:extra',
    'postgres://admin:hunter2@host:99999/db',
    'postgres://admin:hunter2@host/db?statement_timeout=soon',
    'postgres://admin:hunter2@host/db?pool_max=0',
    'postgres://admin:hunter2@host/db?connect_timeout=-1',
    'postgres://admin:hunter2@host/db?rollback_retries=-1',
    'postgres://admin:hunter2@host/db?rollback_retries=many',
    'postgres://admin:hunter2@host/db?schema=Robert%27);DROP',
  ])('refuses %s as a bad_url', (url) => {
    const error = thrownBy(() => openStore(url));
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ operation: 'open', kind: 'bad_url' });
    expect((error as Error).message).not.toContain('hunter2');
  });
});
