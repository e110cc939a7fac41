import { afterEach, describe, expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { LOG_LEVELS, createLogger, type LogLevelSetting } from '../src/observe/logging.ts';
import { openStore } from '../src/store/open.ts';
import type { ActorWrite, Store } from '../src/store/types.ts';
import { StoreError } from '../src/core/errors.ts';

interface Line {
  level: string;
  time: string;
  name: string;
  msg: string;
  [field: string]: unknown;
}

const opened: Store[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) {
    await getRuntime(s).close();
    await s.close();
  }
});

/** A store (optionally failing its commits) whose runtime logs into `lines`. */
function setup(level: LogLevelSetting = 'info') {
  const inner = openStore('sqlite::memory:');
  const store = Object.create(inner) as Store & { fail: boolean };
  store.fail = false;
  store.commit = (writes: readonly ActorWrite[]) =>
    store.fail
      ? Promise.reject(
          new StoreError({ operation: 'commit', kind: 'io', actorId: writes[0]?.actorId }),
        )
      : inner.commit(writes);
  opened.push(store);
  const text: string[] = [];
  const logger = createLogger({ level, destination: { write: (s: string) => text.push(s) } });
  const clock = new ManualClock(Date.parse('2026-03-01T09:00:00Z'));
  getRuntime(store, { clock, logger });
  const lines = () => text.map((t) => JSON.parse(t) as Line);
  const create = (id: string) =>
    createDurableActor(taskLifecycle.machine, { id, store, input: { taskId: id }, clock });
  return { store, lines, text, create };
}

describe('structured logs at the levels of seed 001', () => {
  test('write one INFO line per committed transition, with ids, states and event type', async () => {
    const { lines, create } = setup();
    const t = await create('task-1');
    await t.send({ type: 'START' });
    await t.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payments-api' });
    await t.send({ type: 'DEPENDENCY_RESOLVED' });
    const info = lines().filter((l) => l.level === LOG_LEVELS.transition);
    expect(info.map((l) => [l.msg, l.from, l.to, l.eventType])).toEqual([
      ['transition', null, 'planned', 'xstate.init'],
      ['transition', 'planned', 'running', 'START'],
      ['transition', 'running', 'blocked', 'BLOCK_ON_DEPENDENCY'],
      ['transition', 'blocked', 'running', 'DEPENDENCY_RESOLVED'],
    ]);
    for (const l of info) {
      expect(l).toMatchObject({
        actorId: 'task-1',
        machineId: 'task-lifecycle',
        name: 'agentcharts',
      });
      expect(l.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(lines().filter((l) => l.level !== 'info')).toEqual([]);
  });

  test('write one WARN line per rejected transition, naming state and event but no payload', async () => {
    const { lines, text, create } = setup();
    const t = await create('task-2');
    await expect(t.send({ type: 'COMPLETE', result: { card: '4111-secret' } })).rejects.toThrow();
    await expect(
      t.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'x', requestedAt: 'soon' } as never),
    ).rejects.toThrow();
    const warn = lines().filter((l) => l.level === LOG_LEVELS.rejection);
    expect(warn).toHaveLength(2);
    expect(warn[0]).toMatchObject({
      msg: 'event rejected',
      actorId: 'task-2',
      machineId: 'task-lifecycle',
      state: 'planned',
      eventType: 'COMPLETE',
      reason: 'invalid_transition',
    });
    expect(warn[1]).toMatchObject({ eventType: 'PAUSE_FOR_APPROVAL', state: 'planned' });
    // Only the creation was a transition.
    expect(
      lines()
        .filter((l) => l.level === 'info')
        .map((l) => l.eventType),
    ).toEqual(['xstate.init']);
    expect(text.join('')).not.toContain('4111-secret');
  });

  test('write an ERROR line when the transition cannot be persisted, and the state stays', async () => {
    const { store, lines, create } = setup();
    const t = await create('task-3');
    store.fail = true;
    await expect(t.send({ type: 'START' })).rejects.toBeInstanceOf(StoreError);
    const error = lines().filter((l) => l.level === LOG_LEVELS.writeFailure);
    expect(error).toHaveLength(1);
    expect(error[0]).toMatchObject({
      actorId: 'task-3',
      machineId: 'task-lifecycle',
      state: 'planned',
      eventType: 'START',
      err: { type: 'StoreError' },
    });
    expect(t.getSnapshot().value).toBe('planned');
    const infoTypes = () =>
      lines()
        .filter((l) => l.level === 'info')
        .map((l) => l.eventType);
    expect(infoTypes()).toEqual(['xstate.init']);
    store.fail = false;
    await t.send({ type: 'START' });
    expect(infoTypes()).toEqual(['xstate.init', 'START']);
  });

  test('honour the configured level: at warn, transitions are not written', async () => {
    const { lines, create } = setup('warn');
    const t = await create('task-4');
    await t.send({ type: 'START' });
    await expect(t.send({ type: 'START' })).rejects.toThrow();
    expect(lines().map((l) => l.level)).toEqual(['warn']);
  });
});
