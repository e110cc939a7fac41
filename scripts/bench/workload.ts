/**
 * The task workload of the benchmarks: one actor per task, each task the life of
 * the refund in the task lifecycle document's demo — created, then START,
 * PAUSE_FOR_APPROVAL, APPROVAL_GRANTED, TRANSIENT_ERROR, RETRY, COMPLETE: seven
 * commits per task (the creation and six transitions).
 */
import type { EventObject } from 'xstate';
import { catalog } from '../../machines/index.ts';
import { createDurableActor, type DurableActor } from '../../src/index.ts';
import type { Store } from '../../src/store/types.ts';

export const chart = catalog['task-lifecycle'];
export type TaskActor = DurableActor<typeof chart.machine>;

/** The six transitions of a task, as the catalog samples their events. */
export const TASK_EVENTS: readonly EventObject[] = [
  { type: 'START' },
  chart.eventSamples.PAUSE_FOR_APPROVAL?.[0] as EventObject,
  chart.eventSamples.APPROVAL_GRANTED?.[0] as EventObject,
  chart.eventSamples.TRANSIENT_ERROR?.[0] as EventObject,
  { type: 'RETRY' },
  chart.eventSamples.COMPLETE?.[0] as EventObject,
];

/** Commits per task: its creation and its six transitions. */
export const COMMITS_PER_TASK = 1 + TASK_EVENTS.length;

export function createTask(store: Store, id: string): Promise<TaskActor> {
  return createDurableActor(chart.machine, {
    id,
    store,
    // A new task, as the document's create_task: no read of the store first.
    mode: 'create',
    // An hour of backoff: RETRY is sent by the workload, never by the timer.
    input: { taskId: id, backoff: { baseMs: 3_600_000, capMs: 3_600_000 } },
    schemas: chart.events,
  });
}

/** Creates task `id` and takes it to done, one awaited send after another. */
export async function runTask(store: Store, id: string): Promise<void> {
  const actor = await createTask(store, id);
  for (const event of TASK_EVENTS) await actor.send(event as never);
  actor.detach();
}
