/**
 * Durable and strict actors have the `subscribe`/`getSnapshot` shape `@xstate/react`'s
 * `useSelector` takes. The type checks are compiled by `tsc` (npm test type-checks
 * test/); the runtime part shows an observer is called on each commit.
 */
import { useSelector } from '@xstate/react';
import { describe, expect, expectTypeOf, test } from 'vitest';
import type { SnapshotFrom, StateValue } from 'xstate';
import { catalog } from '../machines/index.ts';
import { createStrictActor, getRuntime } from '../src/index.ts';
import type { DurableActor } from '../src/durable/actor.ts';
import type { StrictActor } from '../src/strict/strict-actor.ts';
import { openStore } from '../src/store/open.ts';
import { taskActor } from './support/actors.ts';

const task = catalog['task-lifecycle'];
type TaskMachine = typeof task.machine;
type TaskValue = SnapshotFrom<TaskMachine>['value'];

/** Never called: what matters is that it type-checks. */
export function bindings(durable: DurableActor<TaskMachine>, strict: StrictActor<TaskMachine>) {
  const durableValue = useSelector(durable, (s) => s.value);
  const strictValue = useSelector(strict, (s) => s.value);
  const retries = useSelector(durable, (s) => s.context.retry_count);
  expectTypeOf(durableValue).toEqualTypeOf<TaskValue>();
  expectTypeOf(strictValue).toEqualTypeOf<TaskValue>();
  expectTypeOf(retries).toEqualTypeOf<number>();
  return [durableValue, strictValue, retries] as const;
}

describe('durable and strict actors are Subscribable', () => {
  test('useSelector accepts them (type test, compiled by tsc)', () => {
    expectTypeOf(bindings).returns.toEqualTypeOf<readonly [TaskValue, TaskValue, number]>();
  });

  test('an observer passed to subscribe is told of each commit, and getSnapshot has the new state', async () => {
    const store = openStore('memory:');
    const actor = await taskActor(store, 'bind-1');
    const seen: StateValue[] = [];
    const subscription = actor.subscribe({ next: () => seen.push(actor.getSnapshot().value) });
    await actor.send({ type: 'START' });
    await actor.send({ type: 'COMPLETE' });
    subscription.unsubscribe();
    expect(seen).toEqual(['running', 'done']);

    const strict = createStrictActor(task.machine, {
      input: { taskId: 's-1' },
      schemas: task.events,
    });
    const states: StateValue[] = [];
    strict.subscribe({ next: (s) => states.push(s.value) });
    strict.start();
    strict.send({ type: 'START' });
    expect(states).toContain('running');
    await getRuntime(store).close();
    await store.close();
  });
});
