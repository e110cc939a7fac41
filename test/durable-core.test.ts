/**
 * The rebuilt durable core: recovery acts once per stale actor (an overdue timer
 * first, the policy only on a state still stale), loads refuse a snapshot that
 * disagrees with its chain, creation builds no throwaway actor, concurrent sends
 * share one commit, and recovery touches only unfinished work.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  assign,
  createActor,
  fromPromise,
  raise,
  sendTo,
  setup,
  spawnChild,
  type AnyActorRef,
  type EventObject,
} from 'xstate';
import { catalog, charts } from '../machines/index.ts';
import {
  ConcurrencyError,
  ManualClock,
  createDurableActor,
  defineChart,
  exploreMachine,
  getRuntime,
  openStore,
  recover,
  verify,
  type ActorWrite,
  type Store,
} from '../src/index.ts';
import { encodeSnapshot } from '../src/durable/codec.ts';
import { hashTransition, sha256 } from '../src/durable/row.ts';
import type { TransitionRow } from '../src/store/types.ts';
import { ledgerJson, ledgerOf, type Ledger } from '../src/durable/ledger.ts';

const task = catalog['task-lifecycle'];
let dir: string;
let file: string;
const stores: Store[] = [];
function open(url = `sqlite:${file}`): Store {
  const store = openStore(url);
  stores.push(store);
  return store;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-core-'));
  file = join(dir, 'db.sqlite');
});
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await getRuntime(s).close();
    await s.close().catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('recovery of a retrying task whose backoff ran out while the process was down', () => {
  test('fires RETRY once and runs the last attempt: the stale-state policy does not act on the fresh state', async () => {
    const clock = new ManualClock(1_000_000);
    const first = open();
    const actor = await createDurableActor(task.machine, {
      id: 'refund-1',
      store: first,
      input: { taskId: 'refund-1', maxRetries: 3 },
      clock,
    });
    await actor.send({ type: 'START' });
    for (let i = 0; i < 2; i++) {
      await actor.send({ type: 'TRANSIENT_ERROR', error: 'rate_limit' });
      await actor.send({ type: 'RETRY' });
    }
    await actor.send({ type: 'TRANSIENT_ERROR', error: 'rate_limit' });
    expect(actor.state).toBe('retrying');
    expect(actor.getSnapshot().context.retry_count).toBe(2);
    const [backoff] = await first.timers('refund-1');
    expect(backoff?.timerId).toContain('retryBackoff');
    const rowsBefore = (await first.history('refund-1')).length;
    await getRuntime(first).close(); // the process dies with the backoff pending

    const later = new ManualClock((backoff?.dueAt ?? 0) + 60_000);
    const store = open();
    const report = await recover(store, { charts: [task], clock: later });
    expect(report.actors).toHaveLength(1);
    expect(report.actors[0]).toMatchObject({
      actorId: 'refund-1',
      stateBefore: 'retrying',
      stateAfter: 'running',
      action: 'resumed',
      timersFired: 1,
    });
    const rows = await store.history('refund-1');
    expect(rows).toHaveLength(rowsBefore + 1);
    expect(rows.at(-1)).toMatchObject({ fromState: 'retrying', toState: 'running' });
    expect(rows.map((r) => JSON.parse(r.metadata) as { source: string })).not.toContainEqual(
      expect.objectContaining({ source: 'recover' }),
    );
    const recovered = await createDurableActor(task.machine, {
      id: 'refund-1',
      store,
      clock: later,
    });
    expect(recovered.getSnapshot().context.retry_count).toBe(3);
    await recovered.send({ type: 'COMPLETE', result: 'refund_processed' });
    expect(recovered.state).toBe('done');
    expect((await verify(store, { charts: [task] })).ok).toBe(true);
  });

  test('a running task found after a restart still gets the policy: its attempt died with the process', async () => {
    const clock = new ManualClock(0);
    const first = open();
    const actor = await createDurableActor(task.machine, {
      id: 'refund-2',
      store: first,
      input: { taskId: 'refund-2' },
      clock,
    });
    await actor.send({ type: 'START' });
    await getRuntime(first).close();
    const report = await recover(open(), { charts: [task], clock });
    expect(report.actors[0]).toMatchObject({
      stateBefore: 'running',
      stateAfter: 'retrying',
      action: 'sent',
      event: { type: 'TRANSIENT_ERROR' },
    });
  });
});

describe('loading checks the snapshot against the head of its chain', () => {
  async function stored(): Promise<void> {
    const store = open();
    const actor = await createDurableActor(task.machine, {
      id: 't',
      store,
      input: { taskId: 't' },
      clock: new ManualClock(0),
    });
    await actor.send({ type: 'START' });
    await getRuntime(store).close();
    await store.close();
  }

  test('an edited snapshot is corrupt: nothing is written on top of it', async () => {
    await stored();
    const raw = new Database(file);
    const snapshot = raw
      .prepare('SELECT snapshot FROM actors WHERE id = ?')
      .pluck()
      .get('t') as string;
    raw
      .prepare('UPDATE actors SET snapshot = ? WHERE id = ?')
      .run(snapshot.replace('"retry_count":0', '"retry_count":2'), 't');
    raw.close();
    const store = open();
    const error = await createDurableActor(task.machine, { id: 't', store }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'StoreError', kind: 'corrupt', actorId: 't' });
    expect(await store.history('t')).toHaveLength(2);
    expect((await store.loadActor('t'))?.version).toBe(2);
  });

  test('an edited last row is corrupt', async () => {
    await stored();
    const raw = new Database(file);
    raw.exec('DROP TRIGGER transitions_no_update');
    raw.prepare(`UPDATE transitions SET at = at + 1 WHERE actor_id = 't' AND seq = 2`).run();
    raw.close();
    const error = await createDurableActor(task.machine, { id: 't', store: open() }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'StoreError', kind: 'corrupt', actorId: 't' });
  });

  test('every row records the chart version and the hash of the snapshot it produced', async () => {
    await stored();
    const rows = await open().history('t');
    expect(rows.map((r) => r.chartVersion)).toEqual([1, 1]);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.snapshotHash ?? ''))).toBe(true);
  });
});

describe('creation', () => {
  test('computes the initial snapshot once: no throwaway actor runs the context factory', async () => {
    let contexts = 0;
    const machine = setup({ types: { input: {} as { n: number } } }).createMachine({
      id: 'counted',
      context: ({ input }) => {
        contexts++;
        if (typeof input?.n !== 'number') throw new Error('input required');
        return { n: input.n };
      },
      initial: 'a',
      states: { a: {} },
    });
    const store = open('memory:');
    await createDurableActor(machine, { id: 'c1', store, input: { n: 1 } });
    await createDurableActor(machine, { id: 'c2', store, input: { n: 2 } });
    // One per creation, plus at most one for the machine's shared inert scope.
    expect(contexts).toBeLessThanOrEqual(3);
  });
});

describe('group commit', () => {
  const counter = setup({}).createMachine({
    id: 'counter',
    context: { n: 0 },
    on: { INC: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
  });

  function counting(inner: Store): Store & { batches: number[]; failFor?: string } {
    const wrapper = Object.create(inner) as Store & { batches: number[]; failFor?: string };
    wrapper.batches = [];
    wrapper.commit = async (writes: readonly ActorWrite[]) => {
      wrapper.batches.push(writes.length);
      const kept = writes.filter((w) => w.actorId !== wrapper.failFor);
      const results = await inner.commit(kept);
      return writes.map((w) =>
        w.actorId === wrapper.failFor
          ? new ConcurrencyError({ actorId: w.actorId, expectedVersion: w.expectedVersion })
          : (results.shift() ?? null),
      );
    };
    return wrapper;
  }

  test('concurrent sends to different actors share one transaction; a failing write fails only its send', async () => {
    const store = counting(open());
    stores.push(store);
    const actors = [];
    for (let i = 0; i < 8; i++)
      actors.push(await createDurableActor(counter, { id: `a${i}`, store }));
    store.batches.length = 0;
    store.failFor = 'a3';
    const results = await Promise.allSettled(actors.map((a) => a.send({ type: 'INC' })));
    expect(store.batches).toEqual([8]);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    expect((await store.loadActor('a3'))?.version).toBe(1);
    expect((await store.loadActor('a4'))?.version).toBe(2);
  });
});

describe('recovery reads only unfinished work', () => {
  test('finished actors are never loaded, and actors that only resume get no live actor', async () => {
    const store = open();
    const clock = new ManualClock(0);
    for (let i = 0; i < 20; i++) {
      const a = await createDurableActor(task.machine, {
        id: `done-${i}`,
        store,
        input: { taskId: `done-${i}` },
        clock,
      });
      await a.send({ type: 'START' });
      await a.send({ type: 'COMPLETE', result: 'ok' });
    }
    for (let i = 0; i < 3; i++) {
      await createDurableActor(task.machine, {
        id: `planned-${i}`,
        store,
        input: { taskId: `planned-${i}` },
        clock,
      });
    }
    await getRuntime(store).close();
    const fresh = open();
    const loads: string[] = [];
    const watched = Object.create(fresh) as Store;
    watched.loadActorHead = (id: string) => {
      loads.push(id);
      return fresh.loadActorHead(id);
    };
    const report = await recover(watched, { charts: [task], clock });
    expect(report.actors.map((a) => a.actorId).sort()).toEqual([
      'planned-0',
      'planned-1',
      'planned-2',
    ]);
    expect(report.counts.resumed).toBe(3);
    expect(loads).toEqual([]);
    expect(getRuntime(watched).liveActor('planned-0')).toBeUndefined();
  });
});

/** A task started and paused for approval: two `after` timers pending. */
async function pausedTask(store: Store, id: string, clock: ManualClock) {
  const actor = await createDurableActor(task.machine, { id, store, input: { taskId: id }, clock });
  await actor.send({ type: 'START' });
  await actor.send(task.eventSamples.PAUSE_FOR_APPROVAL?.[0] as never);
  return actor;
}

describe('snapshot encoding', () => {
  test('verify reads a ledger written in the long form (by an earlier build) as the same timers, and still sees a changed one', async () => {
    const store = open();
    await pausedTask(store, 'long-1', new ManualClock(1_000_000));
    await getRuntime(store).close();
    await store.close();
    // Rewrites the head as an earlier build wrote it: every timer in full, its
    // snapshot hash and chain hash recomputed, so only the form differs.
    const rewrite = (due: (t: { due: number }) => number) => {
      const db = new Database(file);
      const row = db.prepare('SELECT snapshot FROM actors WHERE id = ?').get('long-1') as {
        snapshot: string;
      };
      const snapshot = JSON.parse(row.snapshot) as {
        agentcharts: { timers: Array<{ after: string; due: number }> };
      };
      snapshot.agentcharts.timers = snapshot.agentcharts.timers.map((t) => ({
        key: t.after,
        id: t.after,
        sendId: t.after,
        event: { type: t.after },
        due: due(t),
      })) as never;
      const text = JSON.stringify(snapshot);
      const head = db
        .prepare(
          `SELECT actor_id AS actorId, seq, from_state AS fromState, to_state AS toState,
            event_type AS eventType, event, at, metadata, prev_hash AS prevHash,
            chart_version AS chartVersion FROM transitions WHERE actor_id = ? ORDER BY seq DESC LIMIT 1`,
        )
        .get('long-1') as Omit<TransitionRow, 'hash' | 'snapshotHash'>;
      const snapshotHash = sha256(text);
      const hash = hashTransition({ ...head, snapshotHash });
      // The log is append-only (a trigger): lifted for this one edit.
      const triggers = db
        .prepare(
          `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'transitions'`,
        )
        .all() as Array<{ name: string; sql: string }>;
      for (const t of triggers) db.exec(`DROP TRIGGER ${t.name}`);
      db.prepare(
        'UPDATE transitions SET snapshot_hash = ?, hash = ? WHERE actor_id = ? AND seq = ?',
      ).run(snapshotHash, hash, 'long-1', head.seq);
      for (const t of triggers) db.exec(t.sql);
      db.prepare('UPDATE actors SET snapshot = ?, head_hash = ? WHERE id = ?').run(
        text,
        hash,
        'long-1',
      );
      db.close();
    };
    rewrite((t) => t.due);
    const long = await verify(open(), { charts: [task] });
    expect(long.ok).toBe(true);
    // Control: the same rewrite with a timer moved is a difference.
    rewrite((t) => t.due + 1);
    const moved = await verify(open(), { charts: [task] });
    expect(moved.problems.map((p) => p.detail)).toContain(
      'what the actor has pending (timers, invokes) differs from the replay',
    );
  });
  test('an `after` timer is stored once by its key; any other timer in full; both read back as they were armed', async () => {
    const clock = new ManualClock(1_000_000);
    const store = open();
    const paused = await pausedTask(store, 'paused-1', clock);
    const pinger = setup({
      types: { events: {} as { type: 'GO' } | { type: 'PING' } },
    }).createMachine({
      id: 'pinger',
      initial: 'idle',
      states: {
        idle: {
          on: {
            GO: {
              target: 'waiting',
              actions: raise({ type: 'PING' }, { delay: 5_000, id: 'ping' }),
            },
          },
        },
        waiting: { on: { PING: 'idle' } },
      },
    });
    const other = await createDurableActor(pinger, { id: 'pinger-1', store, clock });
    await other.send({ type: 'GO' });

    const stored = (id: string) =>
      store
        .loadActor(id)
        .then(
          (row) => JSON.parse(row?.snapshot ?? '{}') as { agentcharts?: { timers?: unknown[] } },
        );
    const short = (await stored('paused-1')).agentcharts?.timers ?? [];
    expect(short).toHaveLength(2);
    // With when it was armed, and its rank in the tree's arm order: XState fires
    // timers due at once in that order.
    for (const entry of short) {
      expect(Object.keys(entry as object)).toEqual(['after', 'due', 'at', 'rank']);
    }
    const long = (await stored('pinger-1')).agentcharts?.timers ?? [];
    expect(long).toEqual([
      {
        key: 'ping',
        id: 'ping',
        sendId: 'ping',
        event: { type: 'PING' },
        due: 1_005_000,
        at: 1_000_000,
        rank: [expect.any(Number), 0, 0],
      },
    ]);

    // Read back: the ledger as armed, the store's timer rows with their events.
    const ledger = ledgerOf(await stored('paused-1'));
    expect(ledger?.timers.map((t) => [t.key === t.id && t.id === t.sendId, t.event])).toEqual(
      (await store.timers('paused-1')).map((row) => [true, JSON.parse(row.event) as unknown]),
    );
    expect(
      (await store.timers('paused-1')).map((row) => JSON.parse(row.event) as { type: string }),
    ).toEqual(ledger?.timers.map((t) => ({ type: t.key })));
    // And they fire: the reminder, then the timeout of the approval gate.
    clock.advance(31 * 60_000);
    await getRuntime(store).fireDueTimers();
    expect(paused.state).not.toBe('paused');
    const report = await verify(store, { charts: [task, defineChart(pinger)] });
    expect(report.ok).toBe(true);
  });
  test('writes what getPersistedSnapshot gives, for every reachable state of every chart', () => {
    for (const chart of charts) {
      const { states } = exploreMachine(chart.machine, {
        events: chart.eventSamples,
        input: chart.defaultInput,
        ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
      });
      expect(states.size).toBeGreaterThan(1);
      for (const snapshot of states.values()) {
        const ours: unknown = JSON.parse(encodeSnapshot(chart.machine, snapshot));
        const xstate: unknown = JSON.parse(
          JSON.stringify(chart.machine.getPersistedSnapshot(snapshot)),
        );
        expect(ours).toEqual(xstate);
      }
    }
  });

  test("with children, writes the very bytes of XState's persisted snapshot, as children change and as they do not", async () => {
    const kid = setup({
      types: { context: {} as { n: number }, events: {} as { type: 'TICK' } },
    }).createMachine({
      context: { n: 0 },
      initial: 'counting',
      states: {
        counting: {
          on: {
            TICK: [
              { guard: ({ context }) => context.n >= 1, target: 'done' },
              { actions: assign({ n: ({ context }) => context.n + 1 }) },
            ],
          },
        },
        done: { type: 'final' },
      },
    });
    const parent = setup({
      types: {
        context: {} as { ref: AnyActorRef | undefined; seen: number; note: string },
        events: {} as { type: 'SPAWN' } | { type: 'POKE' } | { type: 'NOTE'; text: string },
      },
      actors: { kid, work: fromPromise(() => Promise.resolve('ok')) },
    }).createMachine({
      context: { ref: undefined, seen: 0, note: '' },
      initial: 'running',
      invoke: { id: 'job', src: 'work' },
      states: {
        running: {
          entry: assign({ ref: ({ spawn }) => spawn('kid', { id: 'held' }) }),
          on: {
            SPAWN: { actions: spawnChild('kid', { id: 'loose', systemId: 'loose-one' }) },
            POKE: {
              actions: [sendTo('held', { type: 'TICK' }), sendTo('loose', { type: 'TICK' })],
            },
            NOTE: {
              actions: assign({
                note: ({ event }) => event.text,
                seen: ({ context }) => context.seen + 1,
              }),
            },
          },
        },
      },
    });
    const ledger: Ledger = {
      timers: [
        {
          key: 't1',
          id: 't1',
          sendId: 't1',
          event: { type: 'NOTE', text: 'later' } as EventObject,
          due: 5,
        },
      ],
      invokes: [{ id: 'job', key: 'k' }],
    };
    const actor = createActor(parent).start();
    const events = [
      { type: 'NOTE', text: 'a "quoted" \u2028 note' },
      { type: 'SPAWN' },
      { type: 'NOTE', text: 'b' },
      { type: 'POKE' },
      { type: 'NOTE', text: 'c' },
      { type: 'POKE' },
      { type: 'NOTE', text: 'd' },
    ] as const;
    const compare = () => {
      const snapshot = actor.getSnapshot();
      expect(Object.keys(snapshot.children).length).toBeGreaterThan(0);
      for (const with_ of [undefined, ledger]) {
        const persisted = parent.getPersistedSnapshot(snapshot) as Record<string, unknown>;
        const xstate = JSON.stringify(
          with_ ? { ...persisted, agentcharts: ledgerJson(with_) } : persisted,
        );
        // Twice: the second from the children's cached JSON.
        expect(encodeSnapshot(parent, snapshot, with_)).toBe(xstate);
        expect(encodeSnapshot(parent, snapshot, with_)).toBe(xstate);
      }
    };
    compare();
    for (const event of events) {
      actor.send(event);
      compare();
    }
    await new Promise((resolve) => setTimeout(resolve, 0)); // the promise settles
    compare();
    actor.stop();
  });
});
