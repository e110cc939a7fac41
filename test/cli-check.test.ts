import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { ChartCheckJson } from '../src/check/format.ts';
import { expectCleanFailure, runCli, type CliResult } from './support/cli.ts';

const cli = (...args: string[]): Promise<CliResult> => runCli(args);
const fixtures = join(process.cwd(), 'test-artifacts', 'check-fixtures');

/** A door whose alarm can be bypassed: OPEN from locked skips UNLOCK. */
const DOOR = `
import { setup } from 'xstate';
import { defineChart, only, reachable, noDeadEnd, bounded } from '../../src/index.ts';

export const machine = setup({
  types: {
    context: {} as { opens: number },
    events: {} as { type: 'OPEN'; by: string } | { type: 'CLOSE' } | { type: 'LOCK' } | { type: 'UNLOCK'; code: number },
  },
}).createMachine({
  id: 'door',
  context: { opens: 0 },
  initial: 'closed',
  states: {
    closed: { on: { OPEN: 'opened', LOCK: 'locked' } },
    opened: { on: { CLOSE: 'closed' } },
    locked: { on: { UNLOCK: 'closed', OPEN: 'opened' } },
  },
});

export const chart = defineChart(machine, {
  eventSamples: {
    OPEN: [{ type: 'OPEN', by: 'ada' }],
    CLOSE: [{ type: 'CLOSE' }],
    LOCK: [{ type: 'LOCK' }],
    UNLOCK: [{ type: 'UNLOCK', code: 1234 }],
  },
  properties: [
    reachable('opened', { description: 'The door opens.' }),
    only('locked', 'opened', { via: ['UNLOCK'], description: 'A locked door opens only once unlocked.' }),
    noDeadEnd(),
    bounded('LOCK', 5),
  ],
});
`;

/** A property naming a state the chart does not have. */
const TYPO = `
import { setup } from 'xstate';
import { defineChart, reachable } from '../../src/index.ts';
const machine = setup({}).createMachine({ id: 'typo', initial: 'a', states: { a: {} } });
export const chart = defineChart(machine, { properties: [reachable('b' as never)] });
`;

beforeAll(() => {
  mkdirSync(fixtures, { recursive: true });
  writeFileSync(join(fixtures, 'door.ts'), DOOR);
  writeFileSync(join(fixtures, 'typo.ts'), TYPO);
});

describe('agentcharts check', () => {
  test('a built-in chart: every property proven, exit 0', async () => {
    const r = await cli('check', 'task-lifecycle');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^task-lifecycle: 8\/8 proven · 126 states, 221 transitions · \d+ ms$/m,
    );
    expect(r.stdout).toContain('proven    only(paused → running via APPROVAL_GRANTED)');
    expect(r.stdout).toContain('“Agent State Machine Design” §4');
    expect(r.stdout).toMatch(/1 chart, 8 properties: 8 proven, 0 refuted, 0 unproven/);
  });

  test('a refuted property: its shortest counterexample with payloads, exit 1', async () => {
    const r = await cli('check', 'test-artifacts/check-fixtures/door.ts');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('REFUTED   only(locked → opened via UNLOCK)');
    expect(r.stdout).toContain('"opened" is entered from "locked" by OPEN, not by UNLOCK');
    expect(r.stdout).toContain('counterexample (2 events):');
    expect(r.stdout).toContain('LOCK → OPEN');
    expect(r.stdout).toContain('2. {"type":"OPEN","by":"ada"}  → opened');
    expect(r.stdout).toContain('REFUTED   bounded(LOCK ≤ 5)');
    expect(r.stdout).toMatch(/4 properties: 2 proven, 2 refuted, 0 unproven/);
  });

  test('--json gives the counterexample machine-readably, as paths --json gives events', async () => {
    const r = await cli('check', 'test-artifacts/check-fixtures/door.ts', '--json');
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { charts: ChartCheckJson[]; totals: { refuted: number } };
    expect(out.totals.refuted).toBe(2);
    const only = out.charts[0]?.properties.find((p) => p.kind === 'only');
    expect(only).toMatchObject({
      status: 'refuted',
      title: 'only(locked → opened via UNLOCK)',
      description: 'A locked door opens only once unlocked.',
      property: { kind: 'only', from: 'locked', to: 'opened', via: ['UNLOCK'] },
      counterexample: {
        events: [{ type: 'LOCK' }, { type: 'OPEN', by: 'ada' }],
        labels: ['LOCK', 'OPEN'],
        states: ['closed', 'locked', 'opened'],
      },
    });
    expect(out.charts[0]?.properties.find((p) => p.kind === 'reachable')?.witness?.labels).toEqual([
      'OPEN',
    ]);
  });

  test('a state space over the bound: "unproven up to N states", exit 2, never a pass', async () => {
    const r = await cli('check', 'test/fixtures/counter-chart.ts', '--limit', '40');
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('unproven  terminates()');
    expect(r.stdout).toContain('unproven up to 40 states');
    expect(r.stdout).toMatch(
      /note: the state space has more than 40 states: give the chart a serializeState .*n \(\d+ values\)/,
    );
    expect(r.stdout).not.toMatch(/proven {4}terminates/);
  });

  test('--charts takes one module, repeatable: the chart named after it is an argument, not a module', async () => {
    const door = 'test-artifacts/check-fixtures/door.ts';
    // A variadic --charts took `door` for a second module ("no such file").
    const named = await cli('check', '--charts', door, 'door');
    expect(named.stderr).toBe('');
    expect(named.code).toBe(1);
    expect(named.stdout).toMatch(/1 chart, 4 properties: 2 proven, 2 refuted, 0 unproven/);
    // Repeated, both modules' charts are known; the argument picks one of them.
    const both = await cli(
      'check',
      '--charts',
      door,
      '--charts',
      'test/fixtures/counter-chart.ts',
      'door',
    );
    expect(both.code).toBe(1);
    expect(both.stdout).toMatch(/^door: 2\/4 proven/m);
    expect(both.stdout).toMatch(/1 chart, 4 properties/);
    // The control: a name no module gives is still unknown, and the list names both modules' charts.
    const unknown = await cli('check', '--charts', door, 'window');
    expectCleanFailure(unknown, /ChartNotFoundError: Unknown machine "window".*door/);
  });

  test('an unknown chart, a bad limit and a property naming a missing state are one clear line', async () => {
    expectCleanFailure(
      await cli('check', 'no-such-chart'),
      /ChartNotFoundError: Unknown machine "no-such-chart"/,
    );
    expectCleanFailure(
      await cli('check', 'task-lifecycle', '--limit', '0'),
      /--limit: expected a positive integer/,
    );
    expectCleanFailure(
      await cli('check', 'test-artifacts/check-fixtures/typo.ts'),
      /Property reachable\(b\) of chart "typo": no state "b"/,
    );
  });
});
