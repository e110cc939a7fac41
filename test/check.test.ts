import { assign, fromPromise, setup } from 'xstate';
import { ExplorationError } from '../src/testing/explore.ts';
import { machine as counter } from './fixtures/counter-chart.ts';
import * as z from 'zod';
import { eventSchema } from '../src/strict/events.ts';
import { describe, expect, test } from 'vitest';
import { defineChart } from '../src/core/chart.ts';
import {
  before,
  bounded,
  noDeadEnd,
  only,
  PropertyDefinitionError,
  propertyTitle,
  reachable,
  terminates,
  waitsHaveTimeout,
  type ChartProperty,
} from '../src/core/properties.ts';
import { checkChart, type ChartCheck, type PropertyResult } from '../src/check/check-chart.ts';
import { assertProven, PropertyRefutedError, PropertyUnprovenError } from '../src/check/assert.ts';
import { InvalidOptionsError } from '../src/core/options.ts';

/** An expense: submitted, reviewed by a person (with a deadline), paid or rejected, with retries. */
const machine = setup({
  types: {
    context: {} as { attempts: number; maxAttempts: number },
    events: {} as
      | { type: 'SUBMIT'; amount: number }
      | { type: 'APPROVE'; approver: string }
      | { type: 'REJECT' }
      | { type: 'PAY_FAILED' }
      | { type: 'PAID' },
  },
  guards: { canRetry: ({ context }) => context.attempts < context.maxAttempts },
  actions: { countAttempt: assign({ attempts: ({ context }) => context.attempts + 1 }) },
  delays: { reviewDeadline: 60_000 },
}).createMachine({
  id: 'expense',
  context: { attempts: 0, maxAttempts: 2 },
  initial: 'draft',
  states: {
    draft: { on: { SUBMIT: 'review' } },
    review: {
      meta: { class: 'paused' },
      after: { reviewDeadline: 'rejected' },
      on: { APPROVE: 'paying', REJECT: 'rejected' },
    },
    paying: {
      on: {
        PAID: 'paid',
        PAY_FAILED: [
          { guard: 'canRetry', target: 'paying', reenter: true, actions: 'countAttempt' },
          { target: 'rejected' },
        ],
      },
    },
    paid: { type: 'final' },
    rejected: { type: 'final', meta: { class: 'failed' } },
  },
});

const eventSamples = {
  SUBMIT: [{ type: 'SUBMIT' as const, amount: 42 }],
  APPROVE: [
    { type: 'APPROVE' as const, approver: 'ana' },
    { type: 'APPROVE' as const, approver: 'bob' },
  ],
  REJECT: [{ type: 'REJECT' as const }],
  PAY_FAILED: [{ type: 'PAY_FAILED' as const }],
  PAID: [{ type: 'PAID' as const }],
};

const chart = defineChart(machine, { eventSamples });

function verdict(property: ChartProperty, of = chart): ChartCheck['properties'][number] {
  const result = checkChart(of, { properties: [property] }).properties[0];
  if (!result) throw new Error('no result');
  return result;
}

const labels = (r: ChartCheck['properties'][number]) =>
  (r.counterexample ?? r.witness)?.steps.map((s) => s.label);

describe('checkChart proves and refutes each kind of property', () => {
  test('reachable: proven with a shortest witness, refuted when no path reaches the state', () => {
    const paid = verdict(reachable('paid'));
    expect(paid.status).toBe('proven');
    expect(labels(paid)).toEqual(['SUBMIT', 'APPROVE', 'PAID']);
    const noApprove = defineChart(machine, {
      eventSamples: { ...eventSamples, APPROVE: [] },
    });
    const unreached = verdict(reachable('paid'), noApprove);
    expect(unreached.status).toBe('refuted');
    expect(unreached.detail).toContain('no path reaches "paid"');
    expect(unreached.counterexample).toBeUndefined();
  });

  test('noDeadEnd: a state without a way out is found, with the path to it', () => {
    expect(verdict(noDeadEnd()).status).toBe('proven');
    const noPaid = defineChart(machine, {
      eventSamples: { ...eventSamples, REJECT: [], PAY_FAILED: [], PAID: [] },
    });
    const dead = verdict(noDeadEnd(), noPaid);
    expect(dead.status).toBe('refuted');
    expect(labels(dead)).toEqual(['SUBMIT', 'APPROVE']);
    expect(dead.counterexample?.states.at(-1)).toBe('paying');
    expect(verdict(noDeadEnd({ except: ['paying'] }), noPaid).status).toBe('proven');
  });

  test('terminates: refuted where no finished state can be reached any more', () => {
    expect(verdict(terminates()).status).toBe('proven');
    const noPaid = defineChart(machine, {
      eventSamples: { ...eventSamples, REJECT: [], PAY_FAILED: [], PAID: [] },
    });
    const stuck = verdict(terminates(), noPaid);
    expect(stuck.status).toBe('refuted');
    expect(stuck.detail).toContain('from "paying" no finished state can be reached');
  });

  test('only: every transition from one state into another is by the events named', () => {
    expect(verdict(only('review', 'paying', { via: ['APPROVE'] })).status).toBe('proven');
    const wrong = verdict(only('review', 'rejected', { via: ['REJECT'] }));
    expect(wrong.status).toBe('refuted');
    // The deadline is a timer: after:reviewDeadline enters rejected.
    expect(labels(wrong)).toEqual(['SUBMIT', 'after:reviewDeadline']);
    expect(
      verdict(only('review', 'rejected', { via: ['REJECT', 'after:reviewDeadline'] })).status,
    ).toBe('proven');
    expect(
      verdict(only('*', 'paying', { via: [{ type: 'APPROVE', approver: 'ana' }, 'PAY_FAILED'] }))
        .status,
    ).toBe('refuted');
  });

  test('before: no path takes the second event before the first', () => {
    expect(verdict(before('APPROVE', 'PAID')).status).toBe('proven');
    const r = verdict(before('PAY_FAILED', 'PAID'));
    expect(r.status).toBe('refuted');
    expect(labels(r)).toEqual(['SUBMIT', 'APPROVE', 'PAID']);
  });

  test('bounded: a number or a context field; refuted by the shortest path over the bound', () => {
    expect(verdict(bounded('PAY_FAILED', 3)).status).toBe('proven');
    expect(verdict(bounded('PAY_FAILED', { context: 'maxAttempts' })).status).toBe('refuted');
    const over = verdict(bounded('PAY_FAILED', 1));
    expect(labels(over)).toEqual(['SUBMIT', 'APPROVE', 'PAY_FAILED', 'PAY_FAILED']);
    expect(over.detail).toBe('PAY_FAILED is taken 2 times, more than 1');
  });

  test('waitsHaveTimeout: a waiting state a timer leaves, and one nothing but an event leaves', () => {
    expect(verdict(waitsHaveTimeout(['review'])).status).toBe('proven');
    const r = verdict(waitsHaveTimeout(['paying']));
    expect(r.status).toBe('refuted');
    expect(labels(r)).toEqual(['SUBMIT', 'APPROVE']);
  });
});

describe('a state space over the bound', () => {
  const unbounded = defineChart(counter, {
    eventSamples: { INC: [{ type: 'INC' }], STOP: [{ type: 'STOP' }] },
  });

  test('is unproven up to N states, never proven, and names the growing context field', () => {
    const report = checkChart(unbounded, {
      limit: 50,
      properties: [terminates(), bounded('STOP', 1), reachable('off'), bounded('INC', 3)],
    });
    expect(report.complete).toBe(false);
    expect(report.states).toBe(50);
    expect(report.properties.map((p) => p.status)).toEqual([
      'unproven',
      'unproven',
      'proven',
      'refuted',
    ]);
    expect(report.properties[0]?.detail).toMatch(/^unproven up to 50 states/);
    expect(report.notes.join('\n')).toMatch(/serializeState .*n \(\d+ values\)/);
  });

  test('assertProven throws a typed error naming the property and what keeps the space growing', () => {
    const report = checkChart(unbounded, {
      limit: 30,
      properties: [terminates(), bounded('INC', 2)],
    });
    const [unproven, refutedOne] = report.properties as [PropertyResult, PropertyResult];
    expect(() => assertProven(report, unproven)).toThrow(PropertyUnprovenError);
    expect(() => assertProven(report, unproven)).toThrow(
      /Property terminates\(\) of chart "counter" is unproven up to 30 states: the state space has more than 30 states: give the chart a serializeState/,
    );
    expect(() => assertProven(report, refutedOne)).toThrow(PropertyRefutedError);
    expect(() => assertProven(report, refutedOne)).toThrow(/counterexample:\n {2}INC → INC → INC/);
  });

  test('a chart that declares no properties is not explored at all, however large its space (control: one property explores to the bound)', () => {
    const report = checkChart(unbounded);
    expect(report.properties).toEqual([]);
    expect(report.states).toBe(0);
    expect(report.notes.join('\n')).toMatch(
      /no properties declared: its state space was not explored/,
    );
    const one = checkChart(unbounded, { limit: 40, properties: [terminates()] });
    expect(one.states).toBe(40);
  });

  test('a projection makes it finite, and the same properties proven', () => {
    const projected = defineChart(counter, {
      eventSamples: unbounded.eventSamples,
      serializeState: (s) => JSON.stringify([s.value, Math.min(s.context.n, 1)]),
    });
    const report = checkChart(projected, { properties: [terminates(), bounded('STOP', 1)] });
    expect(report.complete).toBe(true);
    expect(report.properties.map((p) => p.status)).toEqual(['proven', 'proven']);
  });
});

describe('an event the chart gives no sample of', () => {
  // new --OPEN--> open --CLOSE--> closed (final); new --CLOSE--> closed. OPEN carries a
  // title; the chart lists no samples, so the check must find one or say it could not.
  const ticket = (title: z.ZodType) => {
    const events = {
      OPEN: eventSchema('OPEN', { title }),
      CLOSE: eventSchema('CLOSE'),
    };
    return defineChart(
      setup({
        types: { events: {} as { type: 'OPEN'; title: string } | { type: 'CLOSE' } },
      }).createMachine({
        id: 'ticket',
        initial: 'new',
        states: {
          new: { on: { OPEN: 'open', CLOSE: 'closed' } },
          open: { on: { CLOSE: 'closed' } },
          closed: { type: 'final' },
        },
      }),
      { events },
    );
  };
  const properties = [
    bounded('OPEN', 0),
    only('new', 'open', { via: ['CLOSE'] }),
    reachable('open'),
    reachable('closed'),
    noDeadEnd(),
    terminates(),
  ];

  test('one made from its schema stands in: OPEN is explored and refutes what it breaks', () => {
    const report = checkChart(ticket(z.string()), { properties });
    expect(report.complete).toBe(true);
    expect(report.properties.map((p) => p.status)).toEqual([
      'refuted',
      'refuted',
      'proven',
      'proven',
      'proven',
      'proven',
    ]);
    expect(report.notes.join('\n')).toContain('made from its schema, stands in');
  });

  test('none to be made: never a pass, only what its paths show is decided', () => {
    // A title no generated string has: OPEN is not explored. Before, bounded(OPEN, 0)
    // was "proven" (exit 0) and reachable('open') "refuted".
    const report = checkChart(ticket(z.string().startsWith('T-')), { properties });
    expect(report.complete).toBe(false);
    expect(report.properties.map((p) => [p.title, p.status])).toEqual([
      ['bounded(OPEN ≤ 0)', 'unproven'],
      ['only(new → open via CLOSE)', 'unproven'],
      ['reachable(open)', 'unproven'],
      // Its witness path (CLOSE) is real whatever OPEN does.
      ['reachable(closed)', 'proven'],
      ['noDeadEnd()', 'unproven'],
      ['terminates()', 'unproven'],
    ]);
    expect(report.properties[0]?.detail).toMatch(/OPEN was not explored/);
    expect(report.notes.join('\n')).toMatch(/no valid sample of OPEN/);
  });

  test('control: a refutation its path shows stands when another event is unexplored', () => {
    const report = checkChart(ticket(z.string().startsWith('T-')), {
      properties: [bounded('CLOSE', 0), only('new', 'closed', { via: ['OPEN'] })],
    });
    expect(report.properties.map((p) => p.status)).toEqual(['refuted', 'refuted']);
  });
});

describe('invoked actors and failures while checking', () => {
  const fetcher = setup({
    actors: { fetchRefund: fromPromise(() => Promise.resolve({ ok: true })) },
    guards: {
      accepted: ({ event }) => (event as { output?: { ok?: boolean } }).output?.ok === true,
    },
  }).createMachine({
    id: 'fetcher',
    initial: 'loading',
    states: {
      loading: {
        invoke: {
          id: 'fetch',
          src: 'fetchRefund',
          onDone: [{ guard: 'accepted', target: 'done' }, { target: 'refused' }],
          onError: 'failed',
        },
      },
      done: { type: 'final' },
      refused: { type: 'final' },
      failed: { type: 'final' },
    },
  });

  test('an invoke’s outcomes are delivered where it runs, with the chart’s output samples', () => {
    const chart = defineChart(fetcher, {
      eventSamples: {
        'xstate.done.actor.fetch': [
          { type: 'xstate.done.actor.fetch', output: { ok: true } },
          { type: 'xstate.done.actor.fetch', output: { ok: false } },
        ],
      },
    });
    const report = checkChart(chart, {
      properties: [
        reachable('done'),
        reachable('refused'),
        reachable('failed'),
        only('loading', 'failed', { via: ['xstate.error.actor.fetch'] }),
        terminates(),
      ],
    });
    expect(report.properties.map((p) => p.status)).toEqual([
      'proven',
      'proven',
      'proven',
      'proven',
      'proven',
    ]);
    expect(report.properties[1]?.witness?.steps[0]?.event).toMatchObject({
      type: 'xstate.done.actor.fetch',
      output: { ok: false },
    });
  });

  test("a chart's typed properties may name an invoke's done and error events", () => {
    // A type error before: only the machine's own event types and after:<delay> were names.
    const typed = setup({
      types: { events: {} as { type: 'CANCEL' } },
      actors: { fetchRefund: fromPromise(() => Promise.resolve({ ok: true })) },
    }).createMachine({
      id: 'typed-fetcher',
      initial: 'loading',
      states: {
        loading: {
          invoke: { id: 'fetch', src: 'fetchRefund', onDone: 'done', onError: 'failed' },
          on: { CANCEL: 'failed' },
        },
        done: { type: 'final' },
        failed: { type: 'final' },
      },
    });
    const chart = defineChart(typed, {
      eventSamples: {
        'xstate.done.actor.fetch': [{ type: 'xstate.done.actor.fetch', output: { ok: true } }],
      },
      properties: [
        only('loading', 'done', { via: ['xstate.done.actor.fetch'] }),
        only('loading', 'failed', { via: ['xstate.error.actor.fetch', 'CANCEL'] }),
      ],
    });
    expect(checkChart(chart).properties.map((p) => p.status)).toEqual(['proven', 'proven']);
  });

  test('a guard that throws is an ExplorationError naming the state, the event and the path', () => {
    const throwing = defineChart(
      machine.provide({
        guards: {
          canRetry: () => {
            throw new Error('no budget table');
          },
        },
      }),
      { eventSamples },
    );
    expect(() => checkChart(throwing, { properties: [terminates()] })).toThrow(ExplorationError);
    expect(() => checkChart(throwing, { properties: [terminates()] })).toThrow(
      /event "PAY_FAILED" in state "paying" \(reached by SUBMIT → APPROVE\) threw: .*no budget table/,
    );
  });
});

describe('a projection that merges states whose futures differ', () => {
  test('its counterexample is replayed on the machine and marked as possibly not real', () => {
    const m = setup({
      types: {
        context: {} as { x: number },
        events: {} as { type: 'GO' } | { type: 'SKIP' } | { type: 'FINISH' },
      },
      guards: { armed: ({ context }) => context.x === 1 },
    }).createMachine({
      id: 'merged',
      context: { x: 0 },
      initial: 'a',
      states: {
        a: { on: { GO: { target: 'b', actions: assign({ x: 1 }) }, SKIP: 'b' } },
        b: { on: { FINISH: { guard: 'armed', target: 'c' } } },
        c: { type: 'final' },
      },
    });
    const projected = defineChart(m, {
      eventSamples: {
        GO: [{ type: 'GO' }],
        SKIP: [{ type: 'SKIP' }],
        FINISH: [{ type: 'FINISH' }],
      },
      // Drops x, which the guard reads: b after GO and b after SKIP become one state.
      serializeState: (s) => JSON.stringify(s.value),
    });
    const [r] = checkChart(projected, { properties: [before('GO', 'FINISH')] }).properties;
    expect(r?.status).toBe('refuted');
    expect(labels(r as never)).toEqual(['SKIP', 'FINISH']);
    expect(r?.detail).toContain(
      'replayed on the machine itself, this path leaves the space after 1 event: serializeState merges states whose futures differ',
    );
    // Without the projection the property is proven.
    const exact = defineChart(m, { eventSamples: projected.eventSamples });
    expect(checkChart(exact, { properties: [before('GO', 'FINISH')] }).properties[0]?.status).toBe(
      'proven',
    );
  });
});

describe('properties naming what the chart does not have', () => {
  const define = (properties: readonly ChartProperty[]) =>
    defineChart(machine, { eventSamples, properties: properties as never });

  test.each([
    ['reachable(payed)', reachable('payed'), 'no state "payed"'],
    [
      'only(review → paying via APROVE)',
      only('review', 'paying', { via: ['APROVE'] }),
      'no event "APROVE"',
    ],
    [
      'waitsHaveTimeout()',
      { kind: 'waitsHaveTimeout', states: [] },
      'states must be a non-empty array',
    ],
    [
      'bounded(PAY_FAILED ≤ -1)',
      { kind: 'bounded', event: 'PAY_FAILED', max: -1 },
      'max must be a non-negative integer',
    ],
    [
      '#1',
      { kind: 'eventually', state: 'paid' } as unknown as ChartProperty,
      'unknown kind "eventually"',
    ],
  ] as const)(
    '%s is a PropertyDefinitionError where the chart is defined',
    (title, property, problem) => {
      expect(() => define([property])).toThrow(PropertyDefinitionError);
      expect(() => define([property])).toThrow(`Property ${title} of chart "expense": ${problem}`);
    },
  );

  test('a payload field the event schema does not declare is named', () => {
    const events = { GO: eventSchema('GO', { speed: z.number() }) };
    const go = setup({
      types: { events: {} as { type: 'GO'; speed: number } },
      schemas: { events },
    }).createMachine({ id: 'go', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });
    expect(() =>
      defineChart(go, {
        properties: [only('a', 'b', { via: [{ type: 'GO', speeed: 1 }] })] as never,
      }),
    ).toThrow(
      'Property only(a → b via GO[speeed=1]) of chart "go": event "GO" has no field "speeed"',
    );
    expect(() =>
      defineChart(go, { properties: [only('a', 'b', { via: [{ type: 'GO', speed: 1 }] })] }),
    ).not.toThrow();
  });

  test('an ambiguous state key names the candidates', () => {
    const nested = setup({}).createMachine({
      id: 'nested',
      initial: 'a',
      states: { a: { initial: 'x', states: { x: {} } }, b: { initial: 'x', states: { x: {} } } },
    });
    expect(() => defineChart(nested, { properties: [reachable('x')] as never })).toThrow(
      'Property reachable(x) of chart "nested": state "x" is ambiguous: a.x, b.x',
    );
  });

  test('a context field that is not a number is named when the check reads the initial context', () => {
    expect(() =>
      checkChart(chart, {
        properties: [bounded('PAY_FAILED', { context: 'nope' as 'maxAttempts' })],
      }),
    ).toThrow(
      'Property bounded(PAY_FAILED ≤ context.nope) of chart "expense": the initial context has no non-negative integer field "nope"',
    );
  });

  test('the constructors refuse arguments of the wrong kind with a typed error naming them', () => {
    expect(() => waitsHaveTimeout([])).toThrow(
      'waitsHaveTimeout: states must be a state or a non-empty array of states',
    );
    expect(() => bounded('PAY_FAILED', -1)).toThrow('bounded: max must be a non-negative integer');
    expect(() => only('review', 'paying', { via: [] })).toThrow(
      'only: options.via must be a non-empty array',
    );
    expect(() => reachable(42 as never)).toThrow(InvalidOptionsError);
  });

  test('titles read as the property', () => {
    expect(
      propertyTitle(only(['a', 'b'], '*', { via: [{ type: 'VOTE', decision: 'approve' }] })),
    ).toBe('only(a | b → * via VOTE[decision=approve])');
  });
});
