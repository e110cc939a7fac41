import { afterEach, describe, expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { type DurableRuntime } from '../src/durable/runtime.ts';
import { createMetrics, type AgentchartsMetrics } from '../src/observe/metrics.ts';
import { openStore } from '../src/store/open.ts';
import type { ActorWrite, Store, StoreRetry } from '../src/store/types.ts';
import { StoreError } from '../src/core/errors.ts';

const T0 = Date.parse('2026-03-01T09:00:00.000Z');
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function open(store: Store = openStore('sqlite::memory:')) {
  const clock = new ManualClock(T0);
  const runtime = getRuntime(store, { clock });
  const metrics = createMetrics(runtime);
  cleanup.push(async () => {
    metrics.stop();
    await runtime.close();
    await store.close();
  });
  return { store, clock, runtime, metrics };
}

async function settle(runtime: DurableRuntime): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
  await runtime.drain();
}

type Labels = Record<string, string | number>;
async function scrape(metrics: AgentchartsMetrics) {
  const json = (await metrics.registry.getMetricsAsJSON()) as unknown as Array<{
    name: string;
    type: string;
    values: Array<{ value: number; labels: Labels; metricName?: string }>;
  }>;
  const find = (name: string) => json.find((m) => m.name === name);
  /** The value of one series (labels must match exactly), or undefined. */
  const value = (name: string, labels: Labels, metricName = name) =>
    find(name)?.values.find(
      (v) =>
        (v.metricName ?? name) === metricName &&
        JSON.stringify(Object.entries(v.labels).sort()) ===
          JSON.stringify(Object.entries(labels).sort()),
    )?.value;
  return { json, find, value, text: await metrics.metrics() };
}

const task = (store: Store, clock: ManualClock, id: string) =>
  createDurableActor(taskLifecycle.machine, {
    id,
    store,
    input: { taskId: id, approvalTimeoutMs: 3_600_000 },
    clock,
  });

describe('metrics after real durable sends', () => {
  test('names follow Prometheus conventions: agentcharts_ prefix, _total counters, _seconds histograms', async () => {
    const { metrics } = open();
    const { json, text } = await scrape(metrics);
    expect(json.map((m) => m.name).sort()).toEqual([
      'agentcharts_actors',
      'agentcharts_invalid_events_total',
      'agentcharts_invalid_transitions_total',
      'agentcharts_recovery_duration_seconds',
      'agentcharts_retries_total',
      'agentcharts_retry_ratio',
      'agentcharts_state_duration_seconds',
      'agentcharts_time_in_state_seconds',
      'agentcharts_transitions_total',
      'agentcharts_write_errors_total',
    ]);
    for (const m of json) {
      expect(m.name).toMatch(/^agentcharts_[a-z_]+$/);
      if (m.type === 'counter') expect(m.name).toMatch(/_total$/);
      if (m.type === 'histogram') expect(m.name).toMatch(/_seconds$/);
      expect(text).toContain(`# TYPE ${m.name} ${m.type}`);
    }
  });

  test('count transitions by machine, event and target, and the state distribution from the store', async () => {
    const { store, clock, metrics } = open();
    const t1 = await task(store, clock, 't1');
    const t2 = await task(store, clock, 't2');
    await task(store, clock, 't3');
    await t1.send({ type: 'START' });
    await t2.send({ type: 'START' });
    await t2.send({ type: 'COMPLETE' });
    const { value } = await scrape(metrics);
    const m = 'task-lifecycle';
    expect(
      value('agentcharts_transitions_total', { machine: m, event: 'START', target: 'running' }),
    ).toBe(2);
    expect(
      value('agentcharts_transitions_total', { machine: m, event: 'COMPLETE', target: 'done' }),
    ).toBe(1);
    expect(
      value('agentcharts_transitions_total', {
        machine: m,
        event: 'xstate.init',
        target: 'planned',
      }),
    ).toBe(3);
    expect(value('agentcharts_actors', { machine: m, state: 'planned' })).toBe(1);
    expect(value('agentcharts_actors', { machine: m, state: 'running' })).toBe(1);
    expect(value('agentcharts_actors', { machine: m, state: 'done' })).toBe(1);
  });

  test('measure time in state: a histogram on leaving, a per-actor gauge on scrape that drops finished actors', async () => {
    const { store, clock, metrics } = open();
    const t1 = await task(store, clock, 't1');
    await t1.send({ type: 'START' });
    clock.advance(90_000);
    await t1.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payments-api' });
    clock.advance(30_000);
    const first = await scrape(metrics);
    const m = 'task-lifecycle';
    expect(
      first.value(
        'agentcharts_state_duration_seconds',
        { machine: m, state: 'running' },
        'agentcharts_state_duration_seconds_sum',
      ),
    ).toBe(90);
    expect(
      first.value(
        'agentcharts_state_duration_seconds',
        { machine: m, state: 'running', le: 300 },
        'agentcharts_state_duration_seconds_bucket',
      ),
    ).toBe(1);
    expect(
      first.value(
        'agentcharts_state_duration_seconds',
        { machine: m, state: 'running', le: 60 },
        'agentcharts_state_duration_seconds_bucket',
      ),
    ).toBe(0);
    expect(
      first.value('agentcharts_time_in_state_seconds', {
        machine: m,
        state: 'blocked',
        actor_id: 't1',
      }),
    ).toBe(30);
    clock.advance(10_000);
    expect(
      (await scrape(metrics)).value('agentcharts_time_in_state_seconds', {
        machine: m,
        state: 'blocked',
        actor_id: 't1',
      }),
    ).toBe(40);
    await t1.send({ type: 'FATAL_ERROR', error: 'dependency gone' });
    const last = await scrape(metrics);
    expect(last.find('agentcharts_time_in_state_seconds')?.values).toEqual([]);
    expect(
      last.value(
        'agentcharts_state_duration_seconds',
        { machine: m, state: 'blocked' },
        'agentcharts_state_duration_seconds_sum',
      ),
    ).toBe(40);
  });

  test('track retries, the retry ratio and the time to recover from retrying and paused', async () => {
    const { store, clock, runtime, metrics } = open();
    const t1 = await task(store, clock, 't1');
    const t2 = await task(store, clock, 't2');
    await t1.send({ type: 'START' });
    await t2.send({ type: 'START' });
    await t1.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
    const backoff = (await store.timers('t1'))[0];
    expect(backoff).toBeDefined();
    await t2.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: T0 });
    // The backoff fires RETRY (time stops there while it is delivered); t2 waits for its approver.
    const wait = (backoff?.dueAt ?? 0) - clock.now();
    clock.advance(wait);
    await settle(runtime);
    clock.advance(120_000 - wait);
    expect(t1.getSnapshot().value).toBe('running');
    await t2.send({ type: 'APPROVAL_GRANTED', approver: 'ops' });
    const { value } = await scrape(metrics);
    const m = 'task-lifecycle';
    expect(value('agentcharts_retries_total', { machine: m })).toBe(1);
    // START, START, TRANSIENT_ERROR, PAUSE, RETRY, APPROVAL_GRANTED: 1 retry in 6.
    expect(value('agentcharts_retry_ratio', { machine: m })).toBeCloseTo(1 / 6);
    expect(
      value(
        'agentcharts_recovery_duration_seconds',
        { machine: m, from: 'retrying' },
        'agentcharts_recovery_duration_seconds_sum',
      ),
    ).toBe(((backoff?.dueAt ?? 0) - T0) / 1000);
    expect(
      value(
        'agentcharts_recovery_duration_seconds',
        { machine: m, from: 'paused' },
        'agentcharts_recovery_duration_seconds_count',
      ),
    ).toBe(1);
    expect(
      value(
        'agentcharts_recovery_duration_seconds',
        { machine: m, from: 'paused' },
        'agentcharts_recovery_duration_seconds_sum',
      ),
    ).toBe(120);
  });

  test('count invalid transitions by state and event, and invalid events by reason', async () => {
    const { store, clock, metrics } = open();
    const t1 = await task(store, clock, 't1');
    await expect(t1.send({ type: 'COMPLETE' })).rejects.toThrow(/COMPLETE/);
    await expect(t1.send({ type: 'COMPLETE' })).rejects.toThrow();
    await expect(t1.send({ type: 'NOPE' } as never)).rejects.toThrow();
    const { value, find } = await scrape(metrics);
    expect(
      value('agentcharts_invalid_transitions_total', {
        machine: 'task-lifecycle',
        state: 'planned',
        event: 'COMPLETE',
      }),
    ).toBe(2);
    const invalidEvents = find('agentcharts_invalid_events_total')?.values ?? [];
    expect(invalidEvents).toHaveLength(1);
    expect(invalidEvents[0]?.labels.machine).toBe('task-lifecycle');
    expect(invalidEvents[0]?.value).toBe(1);
  });

  test('count failed writes by error class and store error kind', async () => {
    const inner = openStore('sqlite::memory:');
    const store = Object.create(inner) as Store & { fail: boolean };
    store.fail = false;
    store.commit = (writes: readonly ActorWrite[]) =>
      store.fail
        ? Promise.reject(new StoreError({ operation: 'commit', kind: 'full', actorId: 'x' }))
        : inner.commit(writes);
    const { clock, metrics } = open(store);
    const t1 = await task(store, clock, 't1');
    store.fail = true;
    await expect(t1.send({ type: 'START' })).rejects.toBeInstanceOf(StoreError);
    const { value } = await scrape(metrics);
    expect(value('agentcharts_write_errors_total', { error: 'StoreError', kind: 'full' })).toBe(1);
    expect(
      value('agentcharts_transitions_total', {
        machine: 'task-lifecycle',
        event: 'START',
        target: 'running',
      }),
    ).toBeUndefined();
  });

  test("count the store's runs again after a rollback, by code, until stop()", async () => {
    const inner = openStore('sqlite::memory:');
    const listeners = new Set<(retry: StoreRetry) => void>();
    const store = Object.create(inner) as Store;
    store.onRetry = (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    };
    const retried = (code: string, attempt = 1) => {
      for (const l of listeners) l({ code, attempt, detail: 'rolled back' });
    };
    const { runtime, metrics } = open(store);
    // The runtime listens too (it logs each at WARN); the metrics add one listener.
    expect(listeners.size).toBe(2);
    retried('40P01');
    retried('40P01', 2);
    retried('40001');
    const { value } = await scrape(metrics);
    expect(value('agentcharts_store_rollback_retries_total', { code: '40P01' })).toBe(2);
    expect(value('agentcharts_store_rollback_retries_total', { code: '40001' })).toBe(1);
    // Counted whatever store the state distribution reads (`store: false` here).
    const other = createMetrics(runtime, { store: false });
    retried('40001');
    expect(
      (await scrape(other)).value('agentcharts_store_rollback_retries_total', { code: '40001' }),
    ).toBe(1);
    other.stop();
    metrics.stop();
    // Only the runtime's listener is left.
    expect(listeners.size).toBe(1);
  });

  test('stop() detaches from the runtime and frees the names for another registry user', async () => {
    const { store, clock, runtime, metrics } = open();
    metrics.stop();
    expect((await metrics.registry.getMetricsAsJSON()).length).toBe(0);
    const again = createMetrics(runtime, { registry: metrics.registry });
    cleanup.push(() => Promise.resolve(again.stop()));
    const t1 = await task(store, clock, 't1');
    await t1.send({ type: 'START' });
    const counted = (await scrape(again)).value('agentcharts_transitions_total', {
      machine: 'task-lifecycle',
      event: 'START',
      target: 'running',
    });
    expect(counted).toBe(1);
  });
});
