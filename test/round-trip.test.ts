import { describe, expect, test } from 'vitest';
import { assign, setup } from 'xstate';
import { exploreMachine, roundTripDifferences } from '../src/index.ts';

const events = [{ type: 'GO' }, { type: 'PAUSE' }, { type: 'RESUME' }] as const;

describe('the round-trip check', () => {
  test('finds nothing for a machine whose snapshots are plain JSON, history included', () => {
    const machine = setup({ types: { events: {} as (typeof events)[number] } }).createMachine({
      id: 'rt-ok',
      initial: 'work',
      states: {
        work: {
          initial: 'a',
          states: { a: { on: { GO: 'b' } }, b: {}, hist: { type: 'history' } },
          on: { PAUSE: 'paused' },
        },
        paused: { on: { RESUME: 'work.hist' } },
      },
    });
    const graph = exploreMachine(machine, {
      events: { GO: [events[0]], PAUSE: [events[1]], RESUME: [events[2]] },
    });
    // value × remembered history: more than the 3 state values
    expect(graph.states.size).toBeGreaterThan(3);
    expect([...graph.states.values()].some((s) => Object.keys(s.historyValue).length > 0)).toBe(
      true,
    );
    for (const snapshot of graph.states.values()) {
      expect(roundTripDifferences(machine, snapshot, [...events])).toEqual([]);
    }
  });

  test('reports context that does not survive JSON (a Date becomes a string)', () => {
    const machine = setup({
      types: { context: {} as { at: Date | null }, events: {} as { type: 'GO' } },
    }).createMachine({
      id: 'rt-date',
      context: { at: null },
      initial: 'a',
      states: {
        a: { on: { GO: { target: 'b', actions: assign({ at: () => new Date(0) }) } } },
        b: {},
      },
    });
    const [, after] = [
      ...exploreMachine(machine, { events: { GO: [{ type: 'GO' }] } }).states.values(),
    ];
    expect(after).toBeDefined();
    expect(roundTripDifferences(machine, after!, [{ type: 'GO' }])).toEqual([
      'b: context differs after the round trip',
    ]);
  });
});
