/**
 * How a state reads, one format everywhere: a parallel state keeps its regions,
 * a class said on a compound or parallel state holds inside it, and a stored
 * label maps back to its state value.
 */
import { setup } from 'xstate';
import { describe, expect, test } from 'vitest';
import {
  chartMeta,
  classifyState,
  labelsFor,
  stateColor,
  stateName,
  toStreamMessages,
} from '../src/index.ts';
import { labelValue } from '../src/core/state.ts';
import { chart } from '../examples/your-own-chart/doc-review.ts';

const WAITING = 'reviewing.legal.ok,reviewing.editorial.pending';

describe('display names', () => {
  test('a parallel state keeps its regions; a compound state reads as its leaf', () => {
    const meta = chartMeta(chart.machine);
    expect(meta.stateName(WAITING)).toBe('reviewing(legal: ok, editorial: pending)');
    expect(meta.stateName('drafting.checking')).toBe('checking');
    expect(stateName('doc-review', WAITING)).toBe('reviewing(legal: ok, editorial: pending)');
  });

  test('a parallel root reads as its regions; document names are used', () => {
    const machine = setup({}).createMachine({
      id: 'two-lights',
      type: 'parallel',
      states: {
        north: { initial: 'red', states: { red: { meta: { name: 'stop' } }, green: {} } },
        south: { initial: 'green', states: { red: {}, green: {} } },
      },
    });
    expect(chartMeta(machine).stateName('north.red,south.green')).toBe('north: stop, south: green');
  });

  test("the stream's status is the same display name", () => {
    const [status] = toStreamMessages({
      actorId: 'doc-1',
      machineId: 'doc-review',
      from: 'drafting.checking',
      to: WAITING,
      event: { type: 'xstate.done.actor.count' },
      at: 0,
    });
    expect(status).toMatchObject({
      type: 'status_update',
      status: 'reviewing(legal: ok, editorial: pending)',
    });
  });
});

describe('classes on compound and parallel states', () => {
  test('a class said on a parallel state holds for every state inside it', () => {
    expect(classifyState('doc-review', WAITING)).toBe('paused');
    expect(classifyState('doc-review', 'reviewing.legal.ok,reviewing.editorial.ok')).toBe('paused');
    expect(stateColor('doc-review', WAITING)).toBe('#9ca3af');
  });

  test('a class said on a compound state holds inside it, unless a state says its own', () => {
    const machine = setup({}).createMachine({
      id: 'nested-classes',
      initial: 'busy',
      states: {
        busy: {
          meta: { class: 'waiting' },
          initial: 'a',
          states: { a: {}, b: { meta: { class: 'retrying' } } },
        },
      },
    });
    const meta = chartMeta(machine);
    expect(meta.classify('busy.a')).toBe('waiting');
    expect(meta.classify('busy.b')).toBe('retrying');
  });
});

describe('labels of a parallel state', () => {
  test('a parallel state or one of its regions names every combination stored', () => {
    expect(labelsFor('doc-review', 'reviewing')).toHaveLength(4 + 1);
    expect(labelsFor('doc-review', 'reviewing')).toContain(WAITING);
    expect(labelsFor('doc-review', 'reviewing.legal.ok')).toEqual([
      'reviewing.legal.ok',
      'reviewing.legal.ok,reviewing.editorial.pending',
      'reviewing.legal.ok,reviewing.editorial.ok',
    ]);
  });

  test('a stored label is its state value again', () => {
    expect(labelValue(WAITING)).toEqual({ reviewing: { legal: 'ok', editorial: 'pending' } });
    expect(labelValue('drafting.writing')).toEqual({ drafting: 'writing' });
    expect(labelValue('published')).toBe('published');
    expect(
      chart.machine.resolveState({ value: labelValue(WAITING), context: {} as never }).matches({
        reviewing: { legal: 'ok' },
      }),
    ).toBe(true);
  });
});
