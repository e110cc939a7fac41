import { charts } from '../../machines/index.ts';
import { createDurableActor } from '../../src/index.ts';
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
