/**
 * Plain XState semantics hold for charts whose machines spawn or invoke child
 * machines: every shortest path of the chart's generated tests (one per reachable
 * state) is run on a plain `createActor` and on a durable actor, and both end in
 * the same state with the same context. The durable run's children are durable
 * actors created through spawn messages; the plain run's are in-memory actors.
 */
import { describe, expect, test } from 'vitest';
import { createActor } from 'xstate';
import { charts } from '../machines/index.ts';
import { childMachines } from '../src/durable/actor-kinds.ts';
import { createDurableActor, getRuntime, openStore } from '../src/index.ts';
import { planTransitionTests } from '../src/testing/plan.ts';

const spawning = charts.filter((chart) => childMachines(chart.machine).length > 0);

test('the catalog has a chart with child machines (the team workflow)', () => {
  expect(spawning.map((c) => c.machine.id)).toContain('team-workflow');
});

describe.each(spawning.map((chart) => [chart.machine.id, chart] as const))('%s', (_id, chart) => {
  test('every generated path ends in the same state and context, durable and plain', async () => {
    const plan = planTransitionTests(chart.machine, {
      events: chart.eventSamples,
      input: chart.defaultInput,
      ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
    });
    const store = openStore('memory:');
    getRuntime(store, { charts });
    let compared = 0;
    try {
      for (const [i, state] of plan.states.entries()) {
        // Delayed steps need a clock on both sides; the chart's timers live in its children.
        if (state.path.some((step) => step.delayed)) continue;
        const plain = createActor(chart.machine, { input: chart.defaultInput }).start();
        const durable = await createDurableActor(chart.machine, {
          id: `path-${i}`,
          store,
          input: chart.defaultInput as never,
        });
        for (const step of state.path) {
          plain.send(step.event);
          await durable.send(step.event);
        }
        await getRuntime(store).drain();
        const label = `${state.label} by ${state.path.map((s) => s.label).join(' → ')}`;
        expect(durable.getSnapshot().value, label).toEqual(plain.getSnapshot().value);
        expect(durable.getSnapshot().context, label).toEqual(plain.getSnapshot().context);
        plain.stop();
        compared++;
      }
    } finally {
      await getRuntime(store).close();
      await store.close();
    }
    expect(compared).toBe(plan.states.length);
  });
});
