import { catalog, charts } from '../../machines/index.ts';
import { createDurableActor, type DurableActor } from '../../src/index.ts';
import type { Store } from '../../src/store/types.ts';

/** One actor of every built-in chart, `<prefix>-<chart name>`, from its default input. */
export async function oneActorPerChart(store: Store, prefix: string): Promise<void> {
  for (const chart of charts) {
    await createDurableActor(chart.machine, {
      id: `${prefix}-${chart.name}`,
      store,
      input: chart.defaultInput as never,
      schemas: chart.events,
    });
  }
}

/** A task-lifecycle actor `id` (its task id too), its events checked by the chart's schemas. */
export function taskActor(
  store: Store,
  id: string,
): Promise<DurableActor<(typeof catalog)['task-lifecycle']['machine']>> {
  const task = catalog['task-lifecycle'];
  return createDurableActor(task.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: task.events,
  });
}

/** Task-lifecycle actors `ids`, started and paused on an approval. */
export async function pausedTasks(store: Store, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const task = await taskActor(store, id);
    await task.send({ type: 'START' });
    await task.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'r', requestedAt: 0 });
  }
}
