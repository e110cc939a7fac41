import { afterEach, describe, expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { type DurableActor } from '../src/durable/actor.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { type DurableRuntime } from '../src/durable/runtime.ts';
import {
  ALERT_RULES,
  defaultThresholds,
  evaluateAlerts,
  parseDuration,
  parseThreshold,
  type AlertRuleName,
} from '../src/observe/alerts.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';

const T0 = Date.parse('2026-03-01T09:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;

type Task = DurableActor<typeof taskLifecycle.machine>;

describe.each(['memory:', 'sqlite::memory:'])('alert rules over %s', (url) => {
  let store: Store;
  let clock: ManualClock;
  let runtime: DurableRuntime;
  const opened: Store[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) {
      await getRuntime(s).close();
      await s.close();
    }
  });

  function fresh(): void {
    store = openStore(url);
    opened.push(store);
    clock = new ManualClock(T0);
    runtime = getRuntime(store, { clock });
  }

  const task = (id: string, input: Record<string, unknown> = {}): Promise<Task> =>
    createDurableActor(taskLifecycle.machine, {
      id,
      store,
      input: { taskId: id, approvalTimeoutMs: 24 * HOUR, maxRetries: 5, ...input },
      clock,
    });

  async function settle(): Promise<void> {
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
    await runtime.drain();
  }

  /** Instances of one rule at the clock's now (or `at`). */
  async function fired(rule: AlertRuleName, options: { at?: number; overrides?: object } = {}) {
    const [result] = await evaluateAlerts(store, {
      now: options.at ?? clock.now(),
      rules: [rule],
      thresholds: options.overrides as never,
    });
    return (result?.instances ?? []).map((i) => i.actorId ?? i.message);
  }

  /** Lets the pending backoff timer of `t` fire RETRY, time stopping at its due time. */
  async function retryNow(t: Task): Promise<void> {
    const [timer] = await store.timers(t.id);
    if (!timer) throw new Error('no backoff timer');
    clock.advance(timer.dueAt - clock.now());
    await settle();
    expect(t.getSnapshot().value).toBe('running');
  }

  test('task_in_running_too_long fires after 30 minutes in running, not at 30 minutes', async () => {
    fresh();
    const stuck = await task('stuck');
    const moved = await task('moved');
    await stuck.send({ type: 'START' });
    await moved.send({ type: 'START' });
    clock.advance(20 * MIN);
    // Leaving running and coming back restarts the time in state.
    await moved.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'db' });
    await moved.send({ type: 'DEPENDENCY_RESOLVED' });
    clock.advance(10 * MIN);
    expect(await fired('task_in_running_too_long')).toEqual([]);
    clock.advance(1);
    expect(await fired('task_in_running_too_long')).toEqual(['stuck']);
    clock.advance(20 * MIN);
    expect(await fired('task_in_running_too_long')).toEqual(['stuck', 'moved']);
  });

  test('task_retry_flapping fires after three retries oscillating with running, not after two', async () => {
    fresh();
    const flappy = await task('flappy');
    const twice = await task('twice');
    await flappy.send({ type: 'START' });
    await twice.send({ type: 'START' });
    for (let i = 0; i < 2; i++) {
      await flappy.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
      await retryNow(flappy);
      await twice.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
      await retryNow(twice);
    }
    expect(await fired('task_retry_flapping')).toEqual([]);
    await flappy.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
    expect(await fired('task_retry_flapping')).toEqual(['flappy']);
    await retryNow(flappy);
    expect(await fired('task_retry_flapping')).toEqual(['flappy']);
    // An hour later the retries left the window: no longer flapping.
    clock.advance(HOUR);
    expect(await fired('task_retry_flapping')).toEqual([]);
  });

  test('task_retry_flapping ignores a task that failed for good', async () => {
    fresh();
    const t = await task('gives-up');
    await t.send({ type: 'START' });
    for (let i = 0; i < 3; i++) {
      await t.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
      await retryNow(t);
    }
    expect(await fired('task_retry_flapping')).toEqual(['gives-up']);
    await t.send({ type: 'FATAL_ERROR', error: 'gave up' });
    expect(await fired('task_retry_flapping')).toEqual([]);
  });

  test('task_paused_abandoned fires after 4 hours paused, not at 4 hours', async () => {
    fresh();
    const t = await task('waiting');
    await t.send({ type: 'START' });
    await t.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: T0 });
    clock.advance(4 * HOUR);
    await settle(); // the approval reminder fires meanwhile; the task stays paused
    expect(t.getSnapshot().value).toBe('paused');
    expect(await fired('task_paused_abandoned')).toEqual([]);
    clock.advance(1);
    expect(await fired('task_paused_abandoned')).toEqual(['waiting']);
  });

  test('task_blocked_prolonged fires after 2 hours blocked, not at 2 hours or once resolved', async () => {
    fresh();
    const t = await task('blocked');
    const resolved = await task('resolved');
    for (const x of [t, resolved]) {
      await x.send({ type: 'START' });
      await x.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payments-api' });
    }
    clock.advance(HOUR);
    await resolved.send({ type: 'DEPENDENCY_RESOLVED' });
    clock.advance(HOUR);
    expect(await fired('task_blocked_prolonged')).toEqual([]);
    clock.advance(1);
    expect(await fired('task_blocked_prolonged')).toEqual(['blocked']);
  });

  test('too_many_failed_tasks fires above 30% failed in the window, not at 30%', async () => {
    fresh();
    const tasks: Task[] = [];
    for (let i = 0; i < 10; i++) {
      const t = await task(`t${i}`);
      await t.send({ type: 'START' });
      tasks.push(t);
    }
    for (const t of tasks.slice(0, 3)) await t.send({ type: 'FATAL_ERROR', error: 'config' });
    expect(await fired('too_many_failed_tasks')).toEqual([]);
    await tasks[3]?.send({ type: 'FATAL_ERROR', error: 'config' });
    const [instance] = await fired('too_many_failed_tasks');
    expect(instance).toMatch(/^4 of 10 tasks .* failed \(40\.0% > 30\.0%\)$/);
    // An hour and a minute later the failures left the window.
    clock.advance(61 * MIN);
    expect(await fired('too_many_failed_tasks')).toEqual([]);
  });

  test('too_many_failed_tasks waits for enough tasks before judging a ratio', async () => {
    fresh();
    const t = await task('only');
    await t.send({ type: 'START' });
    await t.send({ type: 'FATAL_ERROR', error: 'x' });
    expect(await fired('too_many_failed_tasks')).toEqual([]);
    expect(
      await fired('too_many_failed_tasks', {
        overrides: { too_many_failed_tasks: { minTasks: 1 } },
      }),
    ).toHaveLength(1);
  });

  test('invalid_transition_spike fires above 10 invalid attempts in a minute, not at 10', async () => {
    fresh();
    const t = await task('target');
    const attempt = () => expect(t.send({ type: 'COMPLETE' })).rejects.toThrow();
    for (let i = 0; i < 10; i++) {
      await attempt();
      clock.advance(5_000);
    }
    expect(await fired('invalid_transition_spike')).toEqual([]);
    await attempt();
    expect(await fired('invalid_transition_spike')).toEqual([
      '11 invalid transition attempts in the last 1.0 min (limit 10)',
    ]);
    // Ill-formed events are rejections too, but not invalid transitions.
    clock.advance(2 * MIN);
    for (let i = 0; i < 12; i++) {
      await expect(t.send({ type: 'PAUSE_FOR_APPROVAL' } as never)).rejects.toThrow();
    }
    expect(await fired('invalid_transition_spike')).toEqual([]);
  });

  test('thresholds are configurable per rule', async () => {
    fresh();
    const t = await task('brief');
    await t.send({ type: 'START' });
    await t.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: T0 });
    clock.advance(HOUR + 1);
    await settle();
    const overrides = { task_paused_abandoned: { maxMs: HOUR } };
    expect(await fired('task_paused_abandoned')).toEqual([]);
    expect(await fired('task_paused_abandoned', { overrides })).toEqual(['brief']);
    const results = await evaluateAlerts(store, { now: clock.now(), thresholds: overrides });
    expect(results.map((r) => [r.rule, r.firing])).toEqual([
      ['task_in_running_too_long', false],
      ['task_retry_flapping', false],
      ['task_paused_abandoned', true],
      ['task_blocked_prolonged', false],
      ['too_many_failed_tasks', false],
      ['invalid_transition_spike', false],
    ]);
  });
});

describe('the alert rules as data', () => {
  test('are the six rules of seed 001 with its thresholds as defaults', () => {
    expect(ALERT_RULES.map((r) => [r.name, r.severity, r.condition])).toEqual([
      ['task_in_running_too_long', 'critical', 'time_in_state(RUNNING) > 30min'],
      ['task_retry_flapping', 'critical', 'retry_count >= 3 AND oscillating RETRYING ↔ RUNNING'],
      ['task_paused_abandoned', 'warning', 'time_in_state(PAUSED) > 4h'],
      ['task_blocked_prolonged', 'warning', 'time_in_state(BLOCKED) > 2h'],
      ['too_many_failed_tasks', 'critical', 'failed_count / total_tasks > 0.3 (sliding window)'],
      ['invalid_transition_spike', 'warning', 'invalid_transition_attempts > 10/min'],
    ]);
    const d = defaultThresholds();
    expect(d.task_in_running_too_long.maxMs).toBe(30 * MIN);
    expect(d.task_retry_flapping.minRetries).toBe(3);
    expect(d.task_paused_abandoned.maxMs).toBe(4 * HOUR);
    expect(d.task_blocked_prolonged.maxMs).toBe(2 * HOUR);
    expect(d.too_many_failed_tasks.maxFailedRatio).toBe(0.3);
    expect(d.invalid_transition_spike).toEqual({ maxPerWindow: 10, windowMs: MIN });
    d.task_paused_abandoned.states.push('mutated');
    expect(defaultThresholds().task_paused_abandoned.states).toEqual(['paused', 'Paused']);
  });

  test('parse threshold overrides with durations, lists and numbers, refusing unknown names', () => {
    expect(parseThreshold('task_paused_abandoned.maxMs=2h')).toEqual([
      'task_paused_abandoned',
      'maxMs',
      2 * HOUR,
    ]);
    expect(parseThreshold('task_blocked_prolonged.states=blocked,EXECUTION.Blocked')).toEqual([
      'task_blocked_prolonged',
      'states',
      ['blocked', 'EXECUTION.Blocked'],
    ]);
    expect(parseThreshold('too_many_failed_tasks.maxFailedRatio=0.5')).toEqual([
      'too_many_failed_tasks',
      'maxFailedRatio',
      0.5,
    ]);
    expect(() => parseThreshold('nope.maxMs=1')).toThrow(/unknown alert rule/);
    expect(() => parseThreshold('task_paused_abandoned.bogus=1')).toThrow(/no threshold "bogus"/);
    expect(() => parseThreshold('task_paused_abandoned.maxMs=soon')).toThrow(/duration/);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1.5m')).toBe(90_000);
    expect(parseDuration('250')).toBe(250);
  });
});
