/**
 * One definition carries the chart: every API that takes a machine also takes
 * the `defineChart` result and uses all of it, and a machine with a defined chart
 * is validated with the chart's events wherever it is passed alone.
 */
import { setup } from 'xstate';
import * as z from 'zod';
import { afterEach, describe, expect, test } from 'vitest';
import {
  InvalidEventError,
  NoEventSchemasWarning,
  createDurableActor,
  createStrictActor,
  defineChart,
  eventSchema,
  exploreMachine,
  getRuntime,
  legalEvents,
  openDurableActor,
  openStore,
  planTransitionTests,
  toMermaid,
  toolsFor,
  transitionTable,
  validateEvent,
  type Store,
} from '../src/index.ts';
import { chart, machine } from '../examples/your-own-chart/doc-review.ts';

const BAD_SUBMIT = { type: 'SUBMIT', title: '', author: 'bo', extra: 1 };

let store: Store | undefined;
const memory = (): Store => (store = openStore('memory:'));
afterEach(async () => {
  if (store) {
    await getRuntime(store).close();
    await store.close();
    store = undefined;
  }
});

/** Process warnings emitted while `fn` runs. */
async function warningsDuring(fn: () => Promise<unknown>): Promise<Error[]> {
  const seen: Error[] = [];
  const listen = (warning: Error) => seen.push(warning);
  process.on('warning', listen);
  try {
    await fn();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
  }
  return seen;
}

describe('a machine with a defined chart is validated with its events wherever it is passed', () => {
  test('createDurableActor(machine) refuses what the chart refuses, and writes nothing', async () => {
    const s = memory();
    const doc = await createDurableActor(machine, { id: 'doc-1', store: s });
    await expect(doc.send(BAD_SUBMIT as never)).rejects.toBeInstanceOf(InvalidEventError);
    const extra = { type: 'SUBMIT', title: 'Report', author: 'bo', extra: 1 };
    await expect(doc.send(extra as never)).rejects.toMatchObject({
      reason: 'unexpected_field',
      field: 'extra',
    });
    expect(await s.history('doc-1')).toHaveLength(1);
    await doc.send({ type: 'SUBMIT', title: 'Report', author: 'bo' });
    expect(doc.state).toBe('drafting.checking');
  });

  test('openDurableActor with { chart } and with { charts } refuse it alike', async () => {
    const s = memory();
    await createDurableActor(chart, { id: 'doc-2', store: s });
    const typed = await openDurableActor(s, 'doc-2', { chart });
    await expect(typed.send(BAD_SUBMIT as never)).rejects.toBeInstanceOf(InvalidEventError);
    const listed = await openDurableActor(s, 'doc-2', { charts: [chart] });
    expect(listed).toBe(typed);
  });

  test('validateEvent, the strict actor and the agent tools use the chart behind the machine', () => {
    expect(() => validateEvent(machine, BAD_SUBMIT)).toThrow(InvalidEventError);
    const strict = createStrictActor(machine).start();
    expect(() => strict.send(BAD_SUBMIT as never)).toThrow(InvalidEventError);
    strict.stop();
    const fromChart = createStrictActor(chart).start();
    expect(() => fromChart.send({ ...BAD_SUBMIT, extra: undefined, title: '' } as never)).toThrow(
      expect.objectContaining({ reason: 'invalid_field', field: 'title' }) as Error,
    );
    // The tools describe the chart's payloads without being handed its schemas.
    const submit = legalEvents(fromChart).find((e) => e.type === 'SUBMIT');
    expect(submit?.schema).toMatchObject({ required: ['type', 'title', 'author'] });
    const tool = toolsFor(fromChart).find((t) => t.name === 'SUBMIT');
    expect(tool?.inputSchema).toMatchObject({ required: ['title', 'author'] });
    fromChart.stop();
  });
});

describe('every API that takes a machine takes its chart and uses all of it', () => {
  const v1 = defineChart(
    setup({ types: { events: {} as { type: 'GO' } } }).createMachine({
      id: 'versioned',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: {} },
    }),
    { events: { GO: eventSchema('GO') }, eventSamples: { GO: [{ type: 'GO' }] } },
  );
  const v2 = defineChart(
    setup({ types: { events: {} as { type: 'GO' } } }).createMachine({
      id: 'versioned',
      initial: 'a',
      states: { a: { on: { GO: 'c' } }, c: {} },
    }),
    {
      version: 2,
      migrations: { 1: (s) => ({ ...s, value: s['value'] === 'b' ? 'c' : s['value'] }) },
      events: { GO: eventSchema('GO') },
      eventSamples: { GO: [{ type: 'GO' }] },
    },
  );

  test("createDurableActor(chart) takes the chart's version and migrations", async () => {
    const s = memory();
    const old = await createDurableActor(v1, { id: 'v-1', store: s });
    await old.send({ type: 'GO' });
    expect((await s.loadActor('v-1'))?.chartVersion).toBe(1);
    await getRuntime(s).close();
    const next = await createDurableActor(v2, { id: 'v-1', store: s });
    expect(next.getSnapshot().value).toBe('c');
    expect((await s.loadActor('v-1'))?.chartVersion).toBe(2);
    expect((await next.history()).map((r) => r.eventType)).toContain('agentcharts.migrated');
  });

  test('a chart brings its default input', async () => {
    const withInput = defineChart(
      setup({
        types: { input: {} as { owner: string }, context: {} as { owner: string } },
        schemas: { events: {} },
      }).createMachine({
        id: 'owned',
        context: ({ input }) => ({ owner: input.owner }),
        initial: 'idle',
        states: { idle: {} },
      }),
      { defaultInput: { owner: 'ana' } },
    );
    const durable = await createDurableActor(withInput, { id: 'o-1', store: memory() });
    expect(durable.getSnapshot().context.owner).toBe('ana');
    const strict = createStrictActor(withInput).start();
    expect(strict.getSnapshot().context.owner).toBe('ana');
    strict.stop();
  });

  test('exploration, planning, tables and diagrams take the chart and its samples', () => {
    expect(exploreMachine(chart).states.size).toBeGreaterThan(5);
    const plan = planTransitionTests(chart);
    expect(plan.problems).toEqual([]);
    expect(plan.coverage.stateNodes).toEqual({ declared: 9, reached: 9 });
    expect(transitionTable(v2)).toEqual(['a --GO--> c']);
    expect(toMermaid(chart)).toBe(toMermaid(machine));
  });
});

describe('a durable actor without event schemas says so once', () => {
  const bare = () =>
    setup({ types: { events: {} as { type: 'GO'; n: number } } }).createMachine({
      id: `bare-${Math.random().toString(36).slice(2)}`,
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: {} },
    });

  test('a NoEventSchemasWarning, once per machine id, naming the machine', async () => {
    const s = memory();
    const m = bare();
    const warnings = await warningsDuring(async () => {
      await createDurableActor(m, { id: 'b-1', store: s });
      await createDurableActor(m, { id: 'b-2', store: s });
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toBeInstanceOf(NoEventSchemasWarning);
    expect(warnings[0]).toMatchObject({ code: 'AGENTCHARTS_NO_EVENT_SCHEMAS', machineId: m.id });
  });

  test('schemas: false means it (no warning, events checked by type alone); schemas given are used', async () => {
    const s = memory();
    const quiet = bare();
    const warnings = await warningsDuring(async () => {
      const actor = await createDurableActor(quiet, { id: 'q-1', store: s, schemas: false });
      await actor.send({ type: 'GO', n: 1 });
      const checked = await createDurableActor(bare(), {
        id: 'q-2',
        store: s,
        schemas: { GO: eventSchema('GO', { n: z.number() }) },
      });
      await expect(checked.send({ type: 'GO', n: 'x' } as never)).rejects.toBeInstanceOf(
        InvalidEventError,
      );
    });
    expect(warnings).toEqual([]);
  });
});
