import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runVitestFixture } from './support/vitest-fixture.ts';

describe('generateTransitionTests proves the chart’s properties, one test each', () => {
  const root = join(process.cwd(), 'test-artifacts', 'generate-properties-fixture');
  const src = (file: string) => JSON.stringify(join(process.cwd(), 'src', file));

  const runFixture = (body: string) =>
    runVitestFixture(
      root,
      'chart',
      `import { setup } from 'xstate';
import { generateTransitionTests } from ${src('testing/generate.ts')};
import { defineChart } from ${src('core/chart.ts')};
import { only, reachable } from ${src('core/properties.ts')};
${body}`,
    );

  /** A door; `bypass` adds an edge from locked straight to opened. */
  const chartSource = (bypass: boolean) => `
const machine = setup({ types: { events: {} as { type: 'OPEN' } | { type: 'LOCK' } | { type: 'UNLOCK' } } }).createMachine({
  id: 'door',
  initial: 'closed',
  states: {
    closed: { on: { OPEN: 'opened', LOCK: 'locked' } },
    opened: { meta: { deadEnd: true } },
    locked: { on: { UNLOCK: 'closed'${bypass ? ", OPEN: 'opened'" : ''} } },
  },
});
const chart = defineChart(machine, {
  eventSamples: { OPEN: [{ type: 'OPEN' }], LOCK: [{ type: 'LOCK' }], UNLOCK: [{ type: 'UNLOCK' }] },
  properties: [reachable('opened'), only('locked', 'opened', { via: ['UNLOCK'] })],
});
generateTransitionTests(chart);
`;

  test('a refuted property fails its test with the counterexample; proven ones pass', () => {
    const failing = runFixture(chartSource(true));
    expect(failing.status).not.toBe(0);
    expect(failing.output).toContain(
      'proves every property of the chart > only(locked → opened via UNLOCK)',
    );
    expect(failing.output).toContain(
      'PropertyRefutedError: Property only(locked → opened via UNLOCK) of chart "door" is refuted: "opened" is entered from "locked" by OPEN, not by UNLOCK',
    );
    expect(failing.output).toContain('LOCK → OPEN');
    expect(failing.output).toMatch(/Tests\s+1 failed \| \d+ passed/);

    const passing = runFixture(chartSource(false));
    expect(passing.output).toMatch(/Tests\s+\d+ passed/);
    expect(passing.status).toBe(0);
  });
});
