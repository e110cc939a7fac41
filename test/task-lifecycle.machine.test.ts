import { beforeAll, describe, expect, it } from 'vitest';
import {
  createActor,
  SimulatedClock,
  transition,
  type AnyMachineSnapshot,
  type EventObject,
  type SnapshotFrom,
} from 'xstate';
import {
  chart,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  InvalidTaskInputError,
  machine,
  recovery,
  retryCeiling,
  retryDelay,
  type ApprovalReminder,
  type TaskLifecycleContext,
  type TaskLifecycleEvent,
  type TaskLifecycleInput,
} from '../machines/task-lifecycle/index.ts';
import { InvalidEventError, InvalidTransitionError } from '../src/core/errors.ts';
import { checkEvent, createStrictActor } from '../src/strict/strict-actor.ts';
import { stateLabel } from '../src/core/state.ts';
import { eventLabel, exploreMachine, transitionTable } from '../src/testing/explore.ts';

type TaskSnapshot = SnapshotFrom<typeof machine>;

/** Seed 001 §2 `TRANSITION_TABLE`, transcribed row by row: (from, event) → to. */
const SEED_TRANSITION_TABLE: ReadonlyArray<readonly [string, string, string]> = [
  ['planned', 'START', 'running'],
  ['running', 'PAUSE_FOR_APPROVAL', 'paused'],
  ['running', 'BLOCK_ON_DEPENDENCY', 'blocked'],
  ['running', 'COMPLETE', 'done'],
  ['running', 'FATAL_ERROR', 'failed'],
  ['running', 'TRANSIENT_ERROR', 'retrying'],
  ['paused', 'APPROVAL_GRANTED', 'running'],
  ['paused', 'APPROVAL_DENIED', 'failed'],
  ['paused', 'TIMEOUT', 'failed'],
  ['blocked', 'DEPENDENCY_RESOLVED', 'running'],
  ['blocked', 'FATAL_ERROR', 'failed'],
  ['retrying', 'RETRY', 'running'],
  ['retrying', 'MAX_RETRIES_EXCEEDED', 'failed'],
  ['retrying', 'FATAL_ERROR', 'failed'],
];
const SEED_ROWS = SEED_TRANSITION_TABLE.map(([from, event, to]) => `${from} --${event}--> ${to}`);
const SEED_STATES = ['planned', 'running', 'paused', 'blocked', 'retrying', 'done', 'failed'];

/**
 * How delayed (`after`) edges map to table events. A delayed transition is
 * targetless and only raises a table event, so a delayed edge must land exactly
 * where sending one of these events lands (checked below, not assumed):
 * - `retryBackoff` raises RETRY while retries remain, MAX_RETRIES_EXCEEDED once exhausted;
 * - `approvalTimeout` raises TIMEOUT;
 * - `approvalReminder` raises no event: it only emits APPROVAL_REMINDER and must
 *   leave state and context untouched, so it is no edge of the table.
 */
const DELAYED_EDGE_EVENTS: Readonly<Record<string, readonly string[]>> = {
  retryBackoff: ['RETRY', 'MAX_RETRIES_EXCEEDED'],
  approvalTimeout: ['TIMEOUT'],
  approvalReminder: [],
};

const exploreOptions = { events: chart.eventSamples, input: chart.defaultInput };

function same(a: AnyMachineSnapshot, b: AnyMachineSnapshot): boolean {
  return JSON.stringify([a.value, a.context]) === JSON.stringify([b.value, b.context]);
}

function ctx(snapshot: TaskSnapshot): TaskLifecycleContext {
  return snapshot.context;
}

/** Every sample event of the chart. */
function allSamples(): TaskLifecycleEvent[] {
  return Object.values(chart.eventSamples).flatMap((list) => [
    ...((list ?? []) as readonly TaskLifecycleEvent[]),
  ]);
}

function startActor(input: TaskLifecycleInput = { taskId: 'task-1' }, clock?: SimulatedClock) {
  return createStrictActor(machine, { id: 'actor-1', input, ...(clock ? { clock } : {}) }).start();
}

const pause = (requestedAt = 1_000): TaskLifecycleEvent => ({
  type: 'PAUSE_FOR_APPROVAL',
  reason: 'refund_approval',
  requestedAt,
});
const transient: TaskLifecycleEvent = { type: 'TRANSIENT_ERROR', error: 'rate_limit' };

describe('task-lifecycle conformance with seed 001', () => {
  let graph: ReturnType<typeof exploreMachine<typeof machine>>;
  beforeAll(() => {
    graph = exploreMachine(machine, exploreOptions);
  });

  it('reaches every one of the seven seed states', () => {
    const labels = new Set([...graph.states.values()].map((s) => stateLabel(s.value)));
    expect([...labels].sort()).toEqual([...SEED_STATES].sort());
  });

  it('has exactly the fourteen transitions of TRANSITION_TABLE for sent events', () => {
    const sent = transitionTable(machine, exploreOptions).filter((row) => !row.includes('after:'));
    expect(sent).toEqual([...SEED_ROWS].sort());
  });

  it('lands every delayed edge exactly where sending its mapped table event lands', () => {
    const delayed = graph.edges.filter((e) => e.event.type.startsWith('xstate.after.'));
    expect(new Set(delayed.map((e) => eventLabel(e.event.type)))).toEqual(
      new Set(Object.keys(DELAYED_EDGE_EVENTS).map((d) => `after:${d}`)),
    );
    for (const edge of delayed) {
      const delay = eventLabel(edge.event.type).slice('after:'.length);
      const from = graph.states.get(edge.from)!;
      const to = graph.states.get(edge.to)!;
      const candidates = DELAYED_EDGE_EVENTS[delay];
      expect(candidates, `unmapped delay ${delay}`).toBeDefined();
      if (candidates!.length === 0) {
        expect(same(from, to), `${delay} must not change state or context`).toBe(true);
        continue;
      }
      const matches = candidates!.filter((type) => {
        if (!from.can({ type } as TaskLifecycleEvent)) return false;
        const [next] = transition(machine, from, { type } as TaskLifecycleEvent);
        return same(next, to);
      });
      expect(matches, `${edge.fromLabel} --${delay}--> ${edge.toLabel}`).toHaveLength(1);
    }
  });

  it('equals TRANSITION_TABLE exactly once delayed edges are mapped to the events they raise', () => {
    const rows = new Set<string>();
    for (const edge of graph.edges) {
      let type = edge.event.type;
      if (type.startsWith('xstate.after.')) {
        const from = graph.states.get(edge.from)!;
        const to = graph.states.get(edge.to)!;
        const delay = eventLabel(type).slice('after:'.length);
        const raised = (DELAYED_EDGE_EVENTS[delay] ?? []).find(
          (t) =>
            from.can({ type: t } as TaskLifecycleEvent) &&
            same(transition(machine, from, { type: t } as TaskLifecycleEvent)[0], to),
        );
        if (raised === undefined) continue; // the reminder: no table event, no state change
        type = raised;
      }
      rows.add(`${edge.fromLabel} --${type}--> ${edge.toLabel}`);
    }
    expect([...rows].sort()).toEqual([...SEED_ROWS].sort());
  });

  it('rejects every (state, event type) pair that the table does not list', () => {
    const legal = new Set(SEED_TRANSITION_TABLE.map(([from, event]) => `${from}:${event}`));
    const types = Object.keys(chart.events);
    for (const snapshot of graph.states.values()) {
      const label = stateLabel(snapshot.value);
      for (const type of types) {
        if (legal.has(`${label}:${type}`)) continue;
        for (const sample of allSamples().filter((e) => e.type === type)) {
          expect(snapshot.can(sample), `${label} + ${type}`).toBe(false);
        }
      }
    }
  });

  it('has a sample for every event type of the schemas', () => {
    expect(Object.keys(chart.eventSamples).sort()).toEqual(Object.keys(chart.events).sort());
    expect(new Set(SEED_TRANSITION_TABLE.map(([, event]) => event))).toEqual(
      new Set(Object.keys(chart.events)),
    );
  });
});

describe('task-lifecycle strict validation', () => {
  it('rejects an event the current state does not accept with InvalidTransitionError and keeps the snapshot', () => {
    const actor = startActor();
    const before = actor.getSnapshot();
    let error: unknown;
    try {
      actor.send({ type: 'COMPLETE' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({
      machineId: 'task-lifecycle',
      actorId: 'actor-1',
      state: 'planned',
      eventType: 'COMPLETE',
    });
    expect(actor.getSnapshot()).toBe(before);
  });

  it('rejects every event in the terminal states done and failed', () => {
    const done = startActor();
    done.send({ type: 'START' });
    done.send({ type: 'COMPLETE' });
    const failed = startActor();
    failed.send({ type: 'START' });
    failed.send({ type: 'FATAL_ERROR', error: 'forbidden' });
    for (const actor of [done, failed]) {
      expect(actor.getSnapshot().status).toBe('done');
      for (const sample of allSamples()) {
        expect(() => actor.send(sample)).toThrow(InvalidTransitionError);
      }
    }
  });

  it('rejects ill-formed events with InvalidEventError naming the field and keeps the snapshot', () => {
    const actor = startActor();
    actor.send({ type: 'START' });
    const before = actor.getSnapshot();
    const secret = 'SECRET-PAYLOAD-4711';
    const cases: Array<[unknown, string, string | undefined]> = [
      [{ type: 'CANCEL' }, 'unknown_type', undefined],
      [{ type: 'PAUSE_FOR_APPROVAL', requestedAt: 5 }, 'missing_field', 'reason'],
      [
        { type: 'PAUSE_FOR_APPROVAL', reason: secret, requestedAt: secret },
        'invalid_field',
        'requestedAt',
      ],
      [
        { type: 'PAUSE_FOR_APPROVAL', reason: secret, requestedAt: -1 },
        'invalid_field',
        'requestedAt',
      ],
      [{ type: 'TRANSIENT_ERROR', error: '' }, 'invalid_field', 'error'],
      [{ type: 'COMPLETE', extra: secret }, 'unexpected_field', 'extra'],
      [
        { type: 'COMPLETE', checkpoint: { step: 'x', data: secret, note: secret } },
        'unexpected_field',
        'checkpoint.note',
      ],
      [{ type: 'COMPLETE', checkpoint: { data: secret } }, 'missing_field', 'checkpoint.step'],
      [
        JSON.parse(`{"type":"COMPLETE","result":{"__proto__":{"polluted":"${secret}"}}}`),
        'forbidden_key',
        'result.__proto__',
      ],
      [JSON.parse(`{"type":"START","__proto__":{"x":"${secret}"}}`), 'forbidden_key', '__proto__'],
    ];
    for (const [event, reason, field] of cases) {
      let error: unknown;
      try {
        actor.send(event as TaskLifecycleEvent);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(event)).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'task-lifecycle', reason, field });
      expect((error as Error).message).not.toContain(secret);
      expect(actor.getSnapshot()).toBe(before);
    }
  });

  it('rejects invalid input with InvalidTaskInputError naming the field, never the value', () => {
    const cases: Array<[unknown, string]> = [
      [{ taskId: '' }, 'taskId'],
      [{ taskId: 't', maxRetries: -1 }, 'maxRetries'],
      [{ taskId: 't', maxRetries: 1.5 }, 'maxRetries'],
      [{ taskId: 't', backoff: { baseMs: 5000, capMs: 1000 } }, 'backoff.capMs'],
      [{ taskId: 't', approvalTimeoutMs: 0 }, 'approvalTimeoutMs'],
      [{ taskId: 't', secretKey: 'SECRET-INPUT-99' }, ''],
    ];
    for (const [input, field] of cases) {
      const snapshot = createActor(machine, { input: input as TaskLifecycleInput }).getSnapshot();
      expect(snapshot.status, JSON.stringify(input)).toBe('error');
      expect(snapshot.error).toBeInstanceOf(InvalidTaskInputError);
      expect(snapshot.error).toMatchObject({ field, code: 'INVALID_INPUT' });
      expect((snapshot.error as Error).message).not.toContain('SECRET-INPUT-99');
    }
  });

  it('fills input defaults: three retries, 1 s to 60 s backoff, 30 minute approval wait, task id as jitter seed', () => {
    const context = ctx(startActor({ taskId: 'task-9' }).getSnapshot());
    expect(context).toMatchObject({
      task_id: 'task-9',
      retry_count: 0,
      max_retries: 3,
      backoff: { baseMs: 1_000, capMs: 60_000 },
      approval_timeout_ms: 30 * 60 * 1_000,
      jitter_seed: 'task-9',
    });
    expect(DEFAULT_APPROVAL_TIMEOUT_MS).toBe(1_800_000);
    expect(
      ctx(startActor({ taskId: 'task-9', jitterSeed: 'seed-x' }).getSnapshot()).jitter_seed,
    ).toBe('seed-x');
  });
});

describe('task-lifecycle persisted snapshots', () => {
  it('restores every reachable state from JSON with the same value, context and accepted events', () => {
    const graph = exploreMachine(machine, exploreOptions);
    expect(graph.states.size).toBeGreaterThan(20);
    for (const snapshot of graph.states.values()) {
      const json = JSON.stringify(machine.getPersistedSnapshot(snapshot));
      const restored = createActor(machine, {
        snapshot: JSON.parse(json) as ReturnType<typeof machine.getPersistedSnapshot>,
        input: chart.defaultInput,
      }).getSnapshot();
      expect(restored.value).toEqual(snapshot.value);
      expect(restored.context).toEqual(snapshot.context);
      expect(restored.status).toBe(snapshot.status);
      const delayed = ['retryBackoff', 'approvalTimeout', 'approvalReminder'].map(
        (d): EventObject => ({
          type: `xstate.after.${d}.task-lifecycle.${stateLabel(snapshot.value)}`,
        }),
      );
      for (const event of [...allSamples(), ...delayed]) {
        expect(
          restored.can(event as TaskLifecycleEvent),
          `${stateLabel(snapshot.value)} + ${event.type}`,
        ).toBe(snapshot.can(event as TaskLifecycleEvent));
      }
    }
  });
});

describe('task-lifecycle retries', () => {
  it('raises retry_count on every RETRY and rejects RETRY once maxRetries is reached', () => {
    const actor = startActor({ taskId: 'task-r', maxRetries: 2 });
    actor.send({ type: 'START' });
    for (let i = 1; i <= 2; i++) {
      actor.send(transient);
      expect(actor.can({ type: 'MAX_RETRIES_EXCEEDED' })).toBe(false);
      actor.send({ type: 'RETRY' });
      expect(ctx(actor.getSnapshot()).retry_count).toBe(i);
      expect(actor.getSnapshot().value).toBe('running');
    }
    actor.send(transient);
    const exhausted = actor.getSnapshot();
    expect(() => actor.send({ type: 'RETRY' })).toThrow(InvalidTransitionError);
    expect(actor.getSnapshot()).toBe(exhausted);
    actor.send({ type: 'MAX_RETRIES_EXCEEDED' });
    expect(actor.getSnapshot().value).toBe('failed');
    expect(ctx(actor.getSnapshot())).toMatchObject({
      retry_count: 2,
      last_error: { event: 'MAX_RETRIES_EXCEEDED' },
    });
  });

  it('allows three retries by default and none with maxRetries 0', () => {
    const actor = startActor({ taskId: 'task-d' });
    actor.send({ type: 'START' });
    for (let i = 0; i < 3; i++) {
      actor.send(transient);
      actor.send({ type: 'RETRY' });
    }
    actor.send(transient);
    expect(actor.can({ type: 'RETRY' })).toBe(false);
    expect(actor.can({ type: 'MAX_RETRIES_EXCEEDED' })).toBe(true);

    const none = startActor({ taskId: 'task-0', maxRetries: 0 });
    none.send({ type: 'START' });
    none.send(transient);
    expect(none.can({ type: 'RETRY' })).toBe(false);
    expect(none.can({ type: 'MAX_RETRIES_EXCEEDED' })).toBe(true);
  });

  it('keeps FATAL_ERROR legal in retrying whether or not retries remain', () => {
    for (const maxRetries of [0, 3]) {
      const actor = startActor({ taskId: 'task-f', maxRetries });
      actor.send({ type: 'START' });
      actor.send(transient);
      actor.send({ type: 'FATAL_ERROR', error: 'forbidden' });
      expect(actor.getSnapshot().value).toBe('failed');
      expect(ctx(actor.getSnapshot()).last_error).toEqual({
        event: 'FATAL_ERROR',
        message: 'forbidden',
      });
    }
  });

  it('sends RETRY after exactly the retryBackoff delay of each attempt', () => {
    const clock = new SimulatedClock();
    const input = {
      taskId: 'task-backoff',
      maxRetries: 3,
      backoff: { baseMs: 1_000, capMs: 3_000 },
    };
    const actor = startActor(input, clock);
    actor.send({ type: 'START' });
    for (let attempt = 0; attempt < 3; attempt++) {
      actor.send(transient);
      const delay = retryDelay(attempt, { ...input.backoff, seed: input.taskId });
      if (delay > 0) {
        clock.increment(delay - 1);
        expect(actor.getSnapshot().value, `attempt ${attempt}`).toBe('retrying');
        clock.increment(1);
      } else {
        clock.increment(0);
      }
      expect(actor.getSnapshot().value, `attempt ${attempt}`).toBe('running');
      expect(ctx(actor.getSnapshot()).retry_count).toBe(attempt + 1);
    }
    actor.send(transient);
    clock.increment(0);
    expect(actor.getSnapshot().value).toBe('failed');
    expect(ctx(actor.getSnapshot()).last_error?.event).toBe('MAX_RETRIES_EXCEEDED');
  });

  it('takes the same backoff delays on every replay of the same task', () => {
    const run = (taskId: string) => {
      const clock = new SimulatedClock();
      const actor = startActor({ taskId, backoff: { baseMs: 10_000, capMs: 60_000 } }, clock);
      actor.send({ type: 'START' });
      actor.send(transient);
      let waited = 0;
      clock.increment(0);
      while (actor.getSnapshot().value === 'retrying') {
        clock.increment(1);
        waited++;
      }
      return waited;
    };
    expect(run('task-same')).toBe(run('task-same'));
    expect(run('task-same')).toBe(
      retryDelay(0, { baseMs: 10_000, capMs: 60_000, seed: 'task-same' }),
    );
  });
});

describe('retryDelay', () => {
  const backoff = { baseMs: 1_000, capMs: 60_000 };
  const seeds = Array.from({ length: 400 }, (_, i) => `task-${i}`);

  it('stays within 0 and min(cap, base * 2^attempt) as a whole number of milliseconds', () => {
    for (let attempt = 0; attempt <= 40; attempt++) {
      const ceiling = Math.min(backoff.capMs, backoff.baseMs * 2 ** attempt);
      expect(retryCeiling(attempt, backoff)).toBe(ceiling);
      for (const seed of seeds) {
        const delay = retryDelay(attempt, { ...backoff, seed });
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    expect(retryCeiling(5_000, backoff)).toBe(60_000);
  });

  it('doubles its ceiling per attempt until the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((a) => retryCeiling(a, backoff))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it('grows with the attempt on average and spreads over the whole range (full jitter)', () => {
    const mean = (attempt: number) =>
      seeds.reduce((sum, seed) => sum + retryDelay(attempt, { ...backoff, seed }), 0) /
      seeds.length;
    const means = [0, 1, 2, 3, 4, 5].map(mean);
    for (let i = 1; i < means.length; i++) expect(means[i]!).toBeGreaterThan(means[i - 1]!);
    for (const [attempt, m] of means.entries()) {
      const ceiling = retryCeiling(attempt, backoff);
      expect(m).toBeGreaterThan(ceiling * 0.4);
      expect(m).toBeLessThan(ceiling * 0.6);
    }
    const delays = seeds.map((seed) => retryDelay(5, { ...backoff, seed }));
    expect(Math.min(...delays)).toBeLessThan(32_000 * 0.05);
    expect(Math.max(...delays)).toBeGreaterThan(32_000 * 0.95);
  });

  it('is a pure function of attempt, bounds and seed', () => {
    expect(retryDelay(3, { ...backoff, seed: 'a' })).toBe(retryDelay(3, { ...backoff, seed: 'a' }));
    const perSeed = new Set(seeds.map((seed) => retryDelay(3, { ...backoff, seed })));
    expect(perSeed.size).toBeGreaterThan(300);
  });

  it('rejects a negative or fractional attempt', () => {
    expect(() => retryDelay(-1, { ...backoff, seed: 's' })).toThrow(RangeError);
    expect(() => retryDelay(1.5, { ...backoff, seed: 's' })).toThrow(RangeError);
  });
});

describe('task-lifecycle approval wait', () => {
  it('emits one reminder at half the wait without leaving paused, then times out to failed', () => {
    const clock = new SimulatedClock();
    const actor = startActor({ taskId: 'task-a', approvalTimeoutMs: 10_000 }, clock);
    const reminders: ApprovalReminder[] = [];
    actor.ref.on('APPROVAL_REMINDER', (e) => reminders.push(e));
    actor.send({ type: 'START' });
    actor.send(pause(50_000));
    const paused = actor.getSnapshot();
    clock.increment(4_999);
    expect(reminders).toHaveLength(0);
    clock.increment(1);
    expect(reminders).toEqual([
      {
        type: 'APPROVAL_REMINDER',
        taskId: 'task-a',
        reason: 'refund_approval',
        requestedAt: 50_000,
        deadline: 60_000,
      },
    ]);
    expect(actor.getSnapshot().value).toBe('paused');
    expect(actor.getSnapshot().context).toEqual(paused.context);
    clock.increment(4_999);
    expect(actor.getSnapshot().value).toBe('paused');
    clock.increment(1);
    expect(reminders).toHaveLength(1);
    expect(actor.getSnapshot().value).toBe('failed');
    expect(ctx(actor.getSnapshot())).toMatchObject({
      last_error: { event: 'TIMEOUT', message: 'approval_timeout' },
      approval: { status: 'timed_out', requested_at: 50_000, deadline: 60_000 },
    });
  });

  it('waits 30 minutes by default and reminds at 15', () => {
    const clock = new SimulatedClock();
    const actor = startActor({ taskId: 'task-30' }, clock);
    const reminders: ApprovalReminder[] = [];
    actor.ref.on('APPROVAL_REMINDER', (e) => reminders.push(e));
    actor.send({ type: 'START' });
    actor.send(pause());
    clock.increment(15 * 60_000 - 1);
    expect(reminders).toHaveLength(0);
    clock.increment(1);
    expect(reminders).toHaveLength(1);
    clock.increment(15 * 60_000 - 1);
    expect(actor.getSnapshot().value).toBe('paused');
    clock.increment(1);
    expect(actor.getSnapshot().value).toBe('failed');
  });

  it('cancels reminder and timeout when approval is granted in time', () => {
    const clock = new SimulatedClock();
    const actor = startActor({ taskId: 'task-g', approvalTimeoutMs: 10_000 }, clock);
    const reminders: ApprovalReminder[] = [];
    actor.ref.on('APPROVAL_REMINDER', (e) => reminders.push(e));
    actor.send({ type: 'START' });
    actor.send(pause());
    clock.increment(1_000);
    actor.send({ type: 'APPROVAL_GRANTED', approver: 'manager@example.com', comment: 'ok' });
    clock.increment(60_000);
    expect(reminders).toHaveLength(0);
    expect(actor.getSnapshot().value).toBe('running');
    expect(ctx(actor.getSnapshot()).approval).toMatchObject({
      status: 'granted',
      approver: 'manager@example.com',
      comment: 'ok',
    });
  });

  it('fails on APPROVAL_DENIED and records who denied', () => {
    const actor = startActor();
    actor.send({ type: 'START' });
    actor.send(pause());
    actor.send({ type: 'APPROVAL_DENIED', approver: 'manager@example.com' });
    expect(actor.getSnapshot().value).toBe('failed');
    expect(ctx(actor.getSnapshot())).toMatchObject({
      approval: { status: 'denied', approver: 'manager@example.com', comment: null },
      last_error: { event: 'APPROVAL_DENIED' },
    });
  });
});

describe('task-lifecycle checkpoints', () => {
  it('keeps the latest checkpoint in context through later transitions and into failed', () => {
    const actor = startActor();
    actor.send({ type: 'START' });
    actor.send({
      type: 'PAUSE_FOR_APPROVAL',
      reason: 'refund_approval',
      requestedAt: 1,
      checkpoint: { step: 'check_policy', data: { orderId: '12345', amount: 150 } },
    });
    actor.send({ type: 'APPROVAL_GRANTED', approver: 'm' });
    actor.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payment-gateway' });
    expect(ctx(actor.getSnapshot()).checkpoint).toEqual({
      step: 'check_policy',
      data: { orderId: '12345', amount: 150 },
    });
    expect(ctx(actor.getSnapshot()).blocked_on).toBe('payment-gateway');
    actor.send({ type: 'DEPENDENCY_RESOLVED' });
    actor.send({
      type: 'FATAL_ERROR',
      error: '403 forbidden',
      checkpoint: { step: 'issue_refund', data: ['validated', 'approved'] },
    });
    const context = ctx(actor.getSnapshot());
    expect(actor.getSnapshot().value).toBe('failed');
    expect(context.checkpoint).toEqual({ step: 'issue_refund', data: ['validated', 'approved'] });
    expect(JSON.parse(JSON.stringify(context))).toEqual(context);
  });

  it('stores the COMPLETE result', () => {
    const actor = startActor();
    actor.send({ type: 'START' });
    actor.send({ type: 'COMPLETE', result: { refundId: 'r-1' } });
    expect(actor.getSnapshot().value).toBe('done');
    expect(ctx(actor.getSnapshot()).result).toEqual({ refundId: 'r-1' });
  });
});

describe('task-lifecycle recovery policy (seed 001 §6)', () => {
  const decide = (snapshot: TaskSnapshot, now = 0) =>
    recovery({
      actorId: 'actor-1',
      state: stateLabel(snapshot.value),
      snapshot,
      updatedAt: 0,
      now,
    });
  const at = (input: TaskLifecycleInput, ...events: TaskLifecycleEvent[]) => {
    const actor = startActor(input);
    for (const e of events) actor.send(e);
    return actor.getSnapshot();
  };

  it('is the policy the chart declares', () => {
    expect(chart.recovery).toBe(recovery);
  });

  it('sends TRANSIENT_ERROR to a task found running', () => {
    const decision = decide(at({ taskId: 't' }, { type: 'START' }));
    expect(decision).toMatchObject({
      action: 'send',
      event: { type: 'TRANSIENT_ERROR', error: 'recovery_stale_running' },
    });
  });

  it('sends RETRY to a retrying task with retries left and MAX_RETRIES_EXCEEDED to an exhausted one', () => {
    const left = at({ taskId: 't', maxRetries: 1 }, { type: 'START' }, transient);
    expect(decide(left)).toMatchObject({ action: 'send', event: { type: 'RETRY' } });
    const exhausted = at(
      { taskId: 't', maxRetries: 1 },
      { type: 'START' },
      transient,
      { type: 'RETRY' },
      transient,
    );
    expect(decide(exhausted)).toMatchObject({
      action: 'send',
      event: { type: 'MAX_RETRIES_EXCEEDED' },
    });
  });

  it('sends TIMEOUT to a paused task only once now is past requested_at + approval timeout', () => {
    const paused = at({ taskId: 't', approvalTimeoutMs: 60_000 }, { type: 'START' }, pause(1_000));
    expect(decide(paused, 61_000)).toMatchObject({ action: 'resume' });
    expect(decide(paused, 61_001)).toMatchObject({ action: 'send', event: { type: 'TIMEOUT' } });
  });

  it('resumes blocked and planned tasks as they are', () => {
    const blocked = at(
      { taskId: 't' },
      { type: 'START' },
      { type: 'BLOCK_ON_DEPENDENCY', dependency: 'db' },
    );
    expect(decide(blocked, Number.MAX_SAFE_INTEGER)).toMatchObject({ action: 'resume' });
    expect(decide(at({ taskId: 't' }))).toMatchObject({ action: 'resume' });
  });

  it('only ever sends events that are valid and legal in the state it finds', () => {
    const graph = exploreMachine(machine, exploreOptions);
    let sends = 0;
    for (const snapshot of graph.states.values()) {
      if (snapshot.status !== 'active') continue;
      for (const now of [0, Number.MAX_SAFE_INTEGER]) {
        const decision = decide(snapshot, now);
        if (decision.action !== 'send') continue;
        sends++;
        expect(() => checkEvent(machine, snapshot, decision.event)).not.toThrow();
        const [next] = transition(machine, snapshot, decision.event as TaskLifecycleEvent);
        expect(stateLabel(next.value)).not.toBe(stateLabel(snapshot.value));
      }
    }
    expect(sends).toBeGreaterThan(10);
  });
});
