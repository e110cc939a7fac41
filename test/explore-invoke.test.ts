import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assign, createActor, fromPromise, setup, waitFor } from 'xstate';
import * as z from 'zod';
import { describe, expect, test } from 'vitest';
import { defineChart } from '../src/core/chart.ts';
import { durablePromise, type DurablePromiseArgs } from '../src/core/durable-promise.ts';
import { ExplorationError, exploreMachine } from '../src/testing/explore.ts';
import { planTransitionTests } from '../src/testing/plan.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';
import { expectCleanFailure, runCli } from './support/cli.ts';

const countWords = durablePromise(
  ({ input }: DurablePromiseArgs<{ text: string }>) =>
    Promise.resolve({ words: input.text.split(/\s+/).filter(Boolean).length }),
  { output: z.object({ words: z.number().int().nonnegative() }) },
);

/** A document whose words an invoked promise counts; its onDone reads the output. */
function docCheck(actor = countWords) {
  return setup({
    types: {
      context: {} as { text: string; words: number },
      events: {} as { type: 'SUBMIT'; text: string } | { type: 'RETRY' },
    },
    actors: { countWords: actor },
    guards: {
      tooLong: ({ event }) =>
        (event as unknown as { output: { words: number } }).output.words > 100,
    },
  }).createMachine({
    id: 'doc-check',
    context: { text: '', words: 0 },
    initial: 'draft',
    states: {
      draft: {
        on: {
          SUBMIT: { target: 'checking', actions: assign({ text: ({ event }) => event.text }) },
        },
      },
      checking: {
        invoke: {
          id: 'count',
          src: 'countWords',
          input: ({ context }) => ({ text: context.text }),
          onDone: [
            { guard: 'tooLong', target: 'tooLong' },
            { target: 'ready', actions: assign({ words: ({ event }) => event.output.words }) },
          ],
          onError: 'failed',
        },
      },
      tooLong: { on: { RETRY: 'draft' } },
      failed: { on: { RETRY: 'draft' } },
      ready: { type: 'final' },
    },
  });
}

const sent = {
  SUBMIT: [{ type: 'SUBMIT', text: 'two words' }],
  RETRY: [{ type: 'RETRY' }],
} as const;

const outcomes = {
  ...sent,
  'xstate.done.actor.count': [
    { type: 'xstate.done.actor.count', output: { words: 2 } },
    { type: 'xstate.done.actor.count', output: { words: 500 } },
  ],
  'xstate.error.actor.count': [
    { type: 'xstate.error.actor.count', error: { name: 'Error', message: 'quota' } },
  ],
} as const;

const pathOf = (plan: ReturnType<typeof planTransitionTests>, label: string) =>
  plan.states.find((s) => s.label === label)?.path.map((s) => s.label);

describe('exploration of an invoked actor', () => {
  test('takes the samples given for xstate.done.actor.<id> and xstate.error.actor.<id>', () => {
    const plan = planTransitionTests(docCheck(), { events: outcomes });
    expect(plan.problems).toEqual([]);
    expect(pathOf(plan, 'ready')).toEqual(['SUBMIT', 'xstate.done.actor.count']);
    expect(pathOf(plan, 'tooLong')).toEqual(['SUBMIT', 'xstate.done.actor.count']);
    expect(pathOf(plan, 'failed')).toEqual(['SUBMIT', 'xstate.error.actor.count']);
    const ready = plan.states.find((s) => s.label === 'ready');
    expect(ready?.snapshot.context).toEqual({ text: 'two words', words: 2 });
    // Outcomes are delivered by the runtime, never sent: no illegal pair names them.
    expect(plan.eventTypes).toEqual(['RETRY', 'SUBMIT']);
    expect(plan.illegal.map((r) => r.eventType)).not.toContain('xstate.done.actor.count');
  });

  test("without samples, a done event carries an output made from the invoke's declared output schema", () => {
    const graph = exploreMachine(docCheck(), { events: sent });
    const done = graph.edges.find((e) => e.event.type === 'xstate.done.actor.count');
    expect(done?.event).toEqual({
      type: 'xstate.done.actor.count',
      output: { words: 0 },
      actorId: 'count',
    });
    const plan = planTransitionTests(docCheck(), { events: sent });
    expect(pathOf(plan, 'ready')).toEqual(['SUBMIT', 'xstate.done.actor.count']);
    expect(pathOf(plan, 'failed')).toEqual(['SUBMIT', 'xstate.error.actor.count']);
    // One default output reaches one branch; the other needs a sample, and the plan says so.
    expect(plan.unreachable).toEqual(['tooLong']);
  });

  test('a transition that throws is reported with its state, its event and the path to it', () => {
    const bare = docCheck(
      fromPromise(() => Promise.resolve({ words: 1 })) as unknown as typeof countWords,
    );
    let thrown: unknown;
    try {
      planTransitionTests(bare, { events: sent });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ExplorationError);
    expect(thrown).toMatchObject({
      code: 'EXPLORATION',
      machineId: 'doc-check',
      state: 'checking',
      eventType: 'xstate.done.actor.count',
      path: ['SUBMIT'],
    });
    const message = (thrown as Error).message;
    expect(message).toContain(
      'Exploring machine "doc-check": event "xstate.done.actor.count" in state "checking" (reached by SUBMIT) threw:',
    );
    expect(message).toContain("reading 'words'");
    expect(message).toContain('give samples of "xstate.done.actor.count"');
    expect((thrown as Error).cause).toBeInstanceOf(Error);
  });

  test('a throwing action on a sent event is blamed on that event, deeper in the chart', () => {
    const machine = setup({
      types: { context: {} as { n: number }, events: {} as { type: 'GO' } | { type: 'BOOM' } },
      actions: {
        explode: assign(() => {
          throw new Error('kaboom');
        }),
      },
    }).createMachine({
      id: 'mine',
      context: { n: 0 },
      initial: 'a',
      states: {
        a: { on: { GO: 'b' } },
        b: { on: { GO: 'c' } },
        c: { on: { BOOM: { actions: 'explode' } } },
      },
    });
    expect(() =>
      exploreMachine(machine, { events: { GO: [{ type: 'GO' }], BOOM: [{ type: 'BOOM' }] } }),
    ).toThrow(
      expect.objectContaining({ state: 'c', eventType: 'BOOM', path: ['GO', 'GO'] }) as Error,
    );
  });

  test('an outcome sample whose output breaks the declared schema, or whose type no state handles, is an invalid sample', () => {
    const plan = planTransitionTests(docCheck(), {
      events: {
        ...sent,
        'xstate.done.actor.count': [{ type: 'xstate.done.actor.count', output: { words: -1 } }],
        'xstate.done.actor.nobody': [{ type: 'xstate.done.actor.nobody', output: 1 }],
      },
    });
    const invalid = plan.problems.filter((p) => p.kind === 'invalid-sample');
    expect(invalid.map((p) => p.message)).toEqual([
      'sample #1 of "xstate.done.actor.count" is not a valid event: its output does not match the invoke\'s declared output schema at field "words"',
      'sample #1 of "xstate.done.actor.nobody" is not a valid event: no state of the machine handles it',
    ]);
  });

  test('a declared output schema that gives no sample asks for one', () => {
    const coded = durablePromise(() => Promise.resolve({ code: 'AB-12' }), {
      output: z.object({ code: z.string().regex(/^[A-Z]{2}-\d{2}$/) }),
    });
    const machine = setup({ actors: { coded } }).createMachine({
      id: 'coded',
      initial: 'busy',
      states: {
        busy: { invoke: { id: 'c', src: 'coded', onDone: 'done' } },
        done: { type: 'final' },
      },
    });
    expect(planTransitionTests(machine, { events: {} }).problems).toEqual([
      expect.objectContaining({ kind: 'missing-sample', subject: 'xstate.done.actor.c' }),
    ]);
    const given = planTransitionTests(machine, {
      events: {
        'xstate.done.actor.c': [{ type: 'xstate.done.actor.c', output: { code: 'AB-12' } }],
      },
    });
    expect(given.problems).toEqual([]);
  });

  test('a durable promise whose output breaks its declared schema fails as an invoke error', async () => {
    const liar = durablePromise<{ words: number }, { text: string }>(
      () => Promise.resolve({ words: 'many' } as unknown as { words: number }),
      {
        output: z.object({ words: z.number() }),
      },
    );
    const actor = createActor(docCheck(liar)).start();
    actor.send({ type: 'SUBMIT', text: 'x' });
    const snapshot = await waitFor(actor, (s) => s.matches('failed'));
    expect(snapshot.value).toBe('failed');
    actor.stop();
  });
});

describe('agentcharts paths on a chart with an invoke', () => {
  const dir = join(process.cwd(), 'test-artifacts', 'explore-invoke');
  const src = join(process.cwd(), 'src');
  const chartModule = (actor: string) => `
import { assign, fromPromise, setup } from 'xstate';
import * as z from 'zod';
import { defineChart } from '${src}/core/chart.ts';
import { durablePromise } from '${src}/core/durable-promise.ts';
const declared = durablePromise(async () => ({ words: 3 }), { output: z.object({ words: z.number() }) });
const bare = fromPromise(async () => ({ words: 3 }));
export const machine = setup({
  types: { context: {} as { words: number } },
  actors: { count: ${actor} },
}).createMachine({
  id: 'counting',
  context: { words: 0 },
  initial: 'idle',
  states: {
    idle: { on: { GO: 'counting' } },
    counting: {
      invoke: { id: 'count', src: 'count', onDone: { target: 'done', actions: assign({ words: ({ event }) => event.output.words }) } },
    },
    done: { type: 'final' },
  },
});
export const chart = defineChart(machine, { eventSamples: { GO: [{ type: 'GO' }] } });
`;

  test('prints the path through the invoke, and a throwing one as one line naming state, event and path', async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'declared.ts'), chartModule('declared'));
    writeFileSync(join(dir, 'bare.ts'), chartModule('bare'));
    const ok = await runCli(['paths', join(dir, 'declared.ts')]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/done\s+GO → xstate\.done\.actor\.count/);
    const bad = await runCli(['paths', join(dir, 'bare.ts')]);
    expectCleanFailure(
      bad,
      /ExplorationError: Exploring machine "counting": event "xstate\.done\.actor\.count" in state "counting" \(reached by GO\) threw: .*reading 'words'/,
    );
  });
});

// The generated suite of a chart with an invoke: its samples replayed on a strict actor.
generateTransitionTests(defineChart(docCheck(), { eventSamples: outcomes }), {
  expect: { states: 5, legal: 7, illegal: 8, paths: 6 },
});
