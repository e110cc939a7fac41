/**
 * The Store contract, written once as a function over a store factory and run
 * against every implementation. A new store (PostgreSQL) joins by adding one
 * entry to `targets` whose `open` returns a fresh, empty store.
 */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConcurrencyError, StoreError } from '../src/strict/errors.ts';
import { openStore, parseStoreUrl } from '../src/store/open.ts';
import type { ActorRow, ActorStatus, ActorWrite, Store, TimerRow } from '../src/store/types.ts';

interface StoreTarget {
  name: string;
  /** A fresh, empty store (a networked store may need async setup). */
  open: () => Store | Promise<Store>;
}

const scratch = mkdtempSync(join(tmpdir(), 'agentcharts-conformance-'));
let files = 0;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const targets: StoreTarget[] = [
  { name: 'memory', open: () => openStore('memory:') },
  { name: 'sqlite (file)', open: () => openStore(`sqlite:${join(scratch, `${++files}.db`)}`) },
  { name: 'sqlite (:memory:)', open: () => openStore('sqlite::memory:') },
];

// ---------------------------------------------------------------- row builders

interface WriteOptions {
  machineId?: string;
  state?: string;
  status?: ActorStatus;
  snapshot?: string;
  at?: number;
  createdAt?: number;
  timersSet?: Array<{ id: string; dueAt: number }>;
  timersCancel?: string[];
  consumeTimer?: string;
}

function timer(actorId: string, timerId: string, dueAt: number): TimerRow {
  return { actorId, timerId, event: JSON.stringify({ type: `xstate.after.${timerId}` }), dueAt };
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
    snapshot: options.snapshot ?? JSON.stringify({ value: state, context: { n: version } }),
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
    },
    timersSet: (options.timersSet ?? []).map((t) => timer(actorId, t.id, t.dueAt)),
    timersCancel: options.timersCancel ?? [],
    ...(options.consumeTimer !== undefined ? { consumeTimer: options.consumeTimer } : {}),
  };
}

async function commitOk(store: Store, ...writes: ActorWrite[]): Promise<void> {
  expect(await store.commit(writes)).toEqual(writes.map(() => null));
}

// ---------------------------------------------------------------- the suite

function storeConformance(target: StoreTarget): void {
  describe(`Store conformance: ${target.name}`, () => {
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
        await commitOk(store, write('a', 1, { timersSet: [{ id: 't1', dueAt: 500 }] }));
        await commitOk(store, write('a', 2));
        const before = {
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
        };
        const stale = write('a', 2, {
          state: 'elsewhere',
          timersSet: [{ id: 't2', dueAt: 600 }],
          timersCancel: ['t1'],
        });
        const [error] = await store.commit([stale]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 1, actualVersion: 2 });
        expect({
          actor: await store.loadActor('a'),
          history: await store.history('a'),
          timers: await store.timers('a'),
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
        const foreignTimer = write('b', 1, { timersSet: [{ id: 't', dueAt: 1 }] });
        foreignTimer.timersSet[0] = timer('other', 't', 1);
        const [skip, foreign, fine] = await store.commit([skipping, foreignTimer, write('c', 1)]);
        expect(skip).toMatchObject({ kind: 'invalid_write', actorId: 'a' });
        expect(foreign).toMatchObject({ kind: 'invalid_write', actorId: 'b' });
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

      it('returns an empty result for an empty batch', async () => {
        expect(await store.commit([])).toEqual([]);
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
      it('sets, cancels and replaces timers', async () => {
        await commitOk(
          store,
          write('a', 1, {
            timersSet: [
              { id: 't1', dueAt: 100 },
              { id: 't2', dueAt: 200 },
            ],
          }),
        );
        expect((await store.timers('a')).map((t) => [t.timerId, t.dueAt])).toEqual([
          ['t1', 100],
          ['t2', 200],
        ]);
        await commitOk(
          store,
          write('a', 2, {
            timersCancel: ['t1', 'never-set'],
            timersSet: [
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
            timersSet: [
              { id: 'late', dueAt: 400 },
              { id: 'x', dueAt: 200 },
            ],
          }),
          write('b', 1, {
            timersSet: [
              { id: 'y', dueAt: 100 },
              { id: 'z', dueAt: 200 },
            ],
          }),
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
        await commitOk(store, write('a', 1, { timersSet: [{ id: 't', dueAt: 700 }] }));
        await commitOk(store, write('b', 1, { timersSet: [{ id: 't', dueAt: 300 }] }));
        expect(await store.nextTimerDue()).toBe(300);
        await commitOk(store, write('b', 2, { timersCancel: ['t'] }));
        expect(await store.nextTimerDue()).toBe(700);
      });

      it('deletes a consumed timer and refuses a second consume of it', async () => {
        await commitOk(
          store,
          write('a', 1, {
            timersSet: [
              { id: 't1', dueAt: 100 },
              { id: 't2', dueAt: 200 },
            ],
          }),
        );
        await commitOk(store, write('a', 2, { consumeTimer: 't1' }));
        expect((await store.timers('a')).map((t) => t.timerId)).toEqual(['t2']);
        const [error] = await store.commit([
          write('a', 3, { consumeTimer: 't1', timersCancel: ['t2'] }),
        ]);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ actorId: 'a', expectedVersion: 2 });
        expect((await store.loadActor('a'))?.version).toBe(2);
        expect(await store.history('a')).toHaveLength(2);
        expect((await store.timers('a')).map((t) => t.timerId)).toEqual(['t2']);
      });

      it('re-arms a timer it consumes when the same write sets it again', async () => {
        await commitOk(store, write('a', 1, { timersSet: [{ id: 'tick', dueAt: 100 }] }));
        await commitOk(
          store,
          write('a', 2, { consumeTimer: 'tick', timersSet: [{ id: 'tick', dueAt: 200 }] }),
        );
        expect(await store.timers('a')).toEqual([timer('a', 'tick', 200)]);
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
    });

    describe('isolation of returned rows', () => {
      it('returns copies: mutating what goes in or comes out changes nothing stored', async () => {
        const create = write('a', 1, { timersSet: [{ id: 't', dueAt: 5 }] });
        await commitOk(store, create);
        const pristine = write('a', 1, { timersSet: [{ id: 't', dueAt: 5 }] });
        create.actor.state = 'mutated';
        create.transition.toState = 'mutated';
        if (create.timersSet[0]) create.timersSet[0].dueAt = 1;

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
        expect(await store.timers('a')).toEqual(pristine.timersSet);
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

  it('refuses postgres URLs as unsupported without echoing credentials', () => {
    const error = thrownBy(() => openStore('postgres://admin:hunter2@db.example/app'));
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ operation: 'open', kind: 'unsupported' });
    expect((error as Error).message).not.toContain('hunter2');
  });

  it.each([
    'mysql://admin:hunter2@host/db',
    'agentcharts.db',
    'sqlite:',
    'sqlite:a.db?journal=delete',
    'sqlite:a.db?synchronous=off',
    'sqlite:a.db?busy_timeout=soon',
    'sqlite:a.db?readonly=maybe',
    'memory:extra',
  ])('refuses %s as a bad_url', (url) => {
    const error = thrownBy(() => openStore(url));
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ operation: 'open', kind: 'bad_url' });
    expect((error as Error).message).not.toContain('hunter2');
  });
});
