import { describe, expect, test } from 'vitest';
import { setup } from 'xstate';
import { ChartMetadataError, defineChart, metaTypes } from '../src/index.ts';

// XState's own meta typing: a chart's metadata typed by NodeMeta and TransitionMeta.
const typed = setup({ types: { events: {} as { type: 'GO' }, ...metaTypes } });

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
        a: { meta: { class: 'idle' }, on: { GO: 'b' } },
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
