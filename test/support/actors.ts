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
