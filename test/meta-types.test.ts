import { describe, expect, test } from 'vitest';
import { fromPromise, setup } from 'xstate';
import * as z from 'zod';
import {
  ChartMetadataError,
  chartMeta,
  defineChart,
  eventSchema,
  metaTypes,
} from '../src/index.ts';

// XState's own meta typing: a chart's metadata typed by NodeMeta and TransitionMeta.
const typed = setup({
  types: { events: {} as { type: 'GO' }, ...metaTypes },
  actors: { fetching: fromPromise(() => Promise.resolve(1)) },
});

describe('chart metadata typed through setup({ types: { ...metaTypes } })', () => {
  test('a typo in a class, an event kind or a rerun is a type error, as it is an error at definition', () => {
    const good = typed.createMachine({
      id: 'meta-good',
      meta: {
        events: { GO: { kind: 'command', roles: ['agent', 'warehouse'] } },
        invokes: { fetch: { rerun: 'safe' } },
      },
      initial: 'a',
      states: {
        a: {
          meta: { class: 'idle' },
          invoke: { id: 'fetch', src: 'fetching' },
          on: { GO: 'b' },
        },
        b: { type: 'final', meta: { class: 'completed' } },
      },
    });
    expect(defineChart(good).machine.id).toBe('meta-good');

    const typos = [
      typed.createMachine({
        id: 'meta-rerun',
        // @ts-expect-error 'saef' is not a rerun
        meta: { invokes: { fetch: { rerun: 'saef' } } },
        initial: 'a',
        states: { a: {} },
      }),
      typed.createMachine({
        id: 'meta-class',
        initial: 'a',
        // @ts-expect-error 'idel' is not a state class
        states: { a: { meta: { class: 'idel' } } },
      }),
      typed.createMachine({
        id: 'meta-kind',
        // @ts-expect-error 'comand' is not an event kind
        meta: { events: { GO: { kind: 'comand' } } },
        initial: 'a',
        states: { a: { on: { GO: 'a' } } },
      }),
    ];
    // What tsc refuses, defineChart refuses too (for charts written without the types).
    for (const machine of typos) {
      expect(() => defineChart(machine)).toThrow(ChartMetadataError);
    }
  });
});

describe('names the root metadata uses must be the chart’s own', () => {
  const events = {
    APPROVE: eventSchema('APPROVE', { approver: z.string() }),
    EDIT: eventSchema('EDIT'),
  };
  const approving = (meta: Record<string, unknown>, editingMeta: Record<string, unknown> = {}) =>
    setup({
      types: { events: {} as { type: 'APPROVE'; approver: string } | { type: 'EDIT' } },
      actors: { scoring: fromPromise(() => Promise.resolve(1)) },
      delays: { deadline: 1_000 },
    }).createMachine({
      id: 'approving',
      meta,
      initial: 'editing',
      states: {
        editing: {
          meta: editingMeta,
          invoke: { id: 'score', src: 'scoring' },
          on: { EDIT: 'editing', APPROVE: 'done' },
          after: { deadline: 'done' },
        },
        done: { type: 'final' },
      },
    });
  const define = (meta: Record<string, unknown>, editingMeta?: Record<string, unknown>) =>
    defineChart(approving(meta, editingMeta), { events });

  test('a misspelled event key is refused: it would leave APPROVE a command an agent may send', () => {
    expect(() => define({ events: { APROVE: { kind: 'approval', signer: 'approver' } } })).toThrow(
      /events\.APROVE.*the chart has no event "APROVE"; its events: APPROVE, EDIT/,
    );
    // The control: spelled right, APPROVE is an approval no agent may send.
    const chart = define({ events: { APPROVE: { kind: 'approval', signer: 'approver' } } });
    const approve = chartMeta(chart.machine).events.find((e) => e.type === 'APPROVE');
    expect(approve).toMatchObject({ kind: 'approval' });
    expect(approve?.roles).not.toContain('agent');
  });

  test('a signer the event’s schema does not have, a delay or invoke the chart lacks, are refused', () => {
    expect(() => define({ events: { APPROVE: { kind: 'approval', signer: 'aprover' } } })).toThrow(
      /events\.APPROVE\.signer.*no field "aprover"; its fields: approver, type/,
    );
    expect(() => define({ delays: { dedline: 'TIMEOUT' } })).toThrow(
      /delays\.dedline.*no delay "dedline"; its delays: deadline/,
    );
    expect(() => define({ invokes: { socre: { rerun: 'safe' } } })).toThrow(
      /invokes\.socre.*invokes nothing as "socre"; its invokes: score/,
    );
    // The control: the right names are taken.
    const chart = define({
      delays: { deadline: 'TIMEOUT' },
      invokes: { score: { rerun: 'safe' } },
      events: { 'audit.*': { roles: ['operator'] } },
    });
    expect(chartMeta(chart.machine).invokeRerunSafe('score')).toBe(true);
  });

  test('root-only metadata on another state is refused: there it says nothing', () => {
    expect(() => define({}, { events: { EDIT: { kind: 'timer-only' } } })).toThrow(
      ChartMetadataError,
    );
    expect(() => define({}, { events: { EDIT: { kind: 'timer-only' } } })).toThrow(
      /state "editing".*`events` belongs on the root's meta/,
    );
    // The control: a state's own keys pass through.
    expect(define({}, { class: 'working', owner: 'team-a' }).machine.id).toBe('approving');
  });
});
