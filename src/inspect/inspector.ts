/**
 * Durable actors in the Stately inspector. Durable actors do not run XState's
 * actor loop (the runtime calls the pure `transition()`), so nothing would reach
 * an inspector by itself. These functions replay what XState's own actor tells
 * an inspector — `@xstate.actor` when an actor appears (with its machine, from
 * which `@statelyai/inspect` sends the definition), then per transition
 * `@xstate.event` and `@xstate.snapshot` — from committed transitions only, so
 * the inspector never shows a state that was not persisted.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { ChartDefinition } from '../core/chart.ts';
import type { DurableActor } from '../durable/actor.ts';
import { getRuntime } from '../durable/open.ts';
import { type DurableRuntime } from '../durable/runtime.ts';
import { feedTransitions, noticesFromTrail } from '../observe/feed.ts';
import type { Store } from '../store/types.ts';

export {
  DurableInspection,
  inspectionSessionId,
  type InspectorLike,
} from '../durable/inspection.ts';
import { DurableInspection, type InspectorLike } from '../durable/inspection.ts';
import {
  EXPECTED,
  hasMethods,
  isActor,
  isMachine,
  isRuntime,
  isStore,
  requireArg,
} from '../core/options.ts';

/** Whether `v` has an `inspect` function or observer, as XState's inspectors do. */
function isInspectorLike(v: unknown): boolean {
  const inspect = (v as { inspect?: unknown } | null)?.inspect;
  return typeof inspect === 'function' || hasMethods(inspect, 'next');
}

/**
 * Shows every durable actor of a runtime (or one actor) in an inspector from now
 * on: each committed transition becomes `@xstate.event` + `@xstate.snapshot`,
 * and an actor appears (`@xstate.actor`, carrying its machine definition) on its
 * first transition — or at once when a single actor is attached. Returns a
 * function that detaches.
 *
 * @example
 * import { createWebSocketInspector } from '@statelyai/inspect';
 * const inspector = createWebSocketInspector({ url: 'ws://localhost:8080' });
 * const detach = attachInspector(getRuntime(store), inspector);
 * // or one actor: attachInspector(task, inspector)
 */
export function attachInspector(
  target: DurableRuntime | DurableActor<AnyStateMachine>,
  inspector: InspectorLike,
): () => void {
  requireArg(
    'attachInspector',
    'target',
    isRuntime(target) || isActor(target),
    'a durable runtime or durable actor',
  );
  requireArg(
    'attachInspector',
    'inspector',
    isInspectorLike(inspector),
    'an inspector ({ inspect }: createWebSocketInspector(…), createBrowserInspector(…))',
  );
  const inspection = new DurableInspection(inspector);
  if ('machine' in target) {
    const actor = target;
    inspection.register(actor.id, actor.machine, actor.getSnapshot() as AnyMachineSnapshot);
    const subscription = actor.subscribe((notice) => inspection.transition(notice, actor.machine));
    return () => subscription.unsubscribe();
  }
  const runtime = target;
  return runtime.observe({
    onTransition: (notice) => {
      const machine =
        runtime.liveActor(notice.actorId)?.machine ?? runtime.chartFor(notice.machineId)?.machine;
      if (machine) inspection.transition(notice, machine);
    },
  });
}

export interface InspectStoreOptions {
  /** The chart whose actors to show. */
  chart: ChartDefinition;
  inspector: InspectorLike;
  /** Only this actor. */
  actorId?: string | undefined;
  /** Most existing actors announced at start, most recently updated first. Default 50. */
  limit?: number | undefined;
  /** How often to look for new transitions (ms). Default 500. */
  pollMs?: number | undefined;
  onError?: ((error: unknown) => void) | undefined;
}

export interface StoreInspection {
  /** Resolves once the existing actors and their trails were sent. */
  ready: Promise<void>;
  /** Actor ids announced so far. */
  readonly actors: ReadonlySet<string>;
  /** Sends transitions found in the store since the last look, now. */
  poll(): Promise<void>;
  stop(): void;
}

/**
 * Shows the actors of one chart that live in a store — written by any process —
 * in an inspector: each existing actor (up to `limit`) is announced with its
 * whole trail replayed as XState would have reported it, then every new
 * transition follows as the store's feed reveals it. What
 * `agentcharts inspect <machine>` runs.
 *
 * @example
 * const inspection = inspectStore(store, { chart: catalog['task-lifecycle'], inspector });
 * await inspection.ready;
 */
export function inspectStore(store: Store, options: InspectStoreOptions): StoreInspection {
  requireArg('inspectStore', 'store', isStore(store), EXPECTED.store);
  requireArg(
    'inspectStore',
    'options.chart',
    isMachine((options as { chart?: { machine?: unknown } } | null)?.chart?.machine),
    'a chart (defineChart(machine))',
  );
  const { chart } = options;
  const runtime = getRuntime(store, { charts: [chart] });
  const inspection = new DurableInspection(options.inspector);
  /** Last version sent per actor. */
  const sent = new Map<string, number>();
  /** Per-actor chains, so an actor's transitions go out in order. */
  const chains = new Map<string, Promise<void>>();
  const fail = (error: unknown) => options.onError?.(error);

  const catchUp = (actorId: string): Promise<void> => {
    const work = async () => {
      const actor = await store.loadActor(actorId);
      if (!actor || actor.machineId !== chart.machine.id) return;
      const after = sent.get(actorId) ?? 0;
      if (actor.version <= after) return;
      const rows = await store.history(actorId);
      for (const notice of noticesFromTrail(chart, actor, rows, after)) {
        inspection.transition(notice, chart.machine);
        sent.set(actorId, notice.version);
      }
    };
    const next = (chains.get(actorId) ?? Promise.resolve()).then(work).catch(fail);
    chains.set(actorId, next);
    return next;
  };

  const feed = feedTransitions(runtime, {
    machineId: chart.machine.id,
    pollMs: options.pollMs ?? 500,
    onTransition: (t) => {
      if (options.actorId === undefined || t.actorId === options.actorId) void catchUp(t.actorId);
    },
    onError: fail,
  });

  const ready = (async () => {
    const limit = options.limit ?? 50;
    const rows =
      options.actorId !== undefined
        ? [await store.loadActor(options.actorId)].filter(
            (r): r is NonNullable<typeof r> => r !== undefined && r.machineId === chart.machine.id,
          )
        : [];
    if (options.actorId === undefined) {
      let afterId: string | undefined;
      for (;;) {
        const page = await store.listActors({ machineId: chart.machine.id, afterId, limit: 1000 });
        rows.push(...page);
        if (page.length < 1000) break;
        afterId = page[page.length - 1]?.id;
      }
    }
    rows.sort((a, b) => b.updatedAt - a.updatedAt || a.id.localeCompare(b.id));
    await Promise.all(rows.slice(0, limit).map((r) => catchUp(r.id)));
  })();

  return {
    ready,
    get actors() {
      return new Set(sent.keys());
    },
    async poll() {
      await feed.poll();
      await Promise.all([...chains.values()]);
    },
    stop() {
      feed.stop();
    },
  };
}
