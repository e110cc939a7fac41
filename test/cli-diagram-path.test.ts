import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { expectCleanFailure, runCli } from './support/cli.ts';

const dir = join(process.cwd(), 'test-artifacts', 'diagram-path');
const at = (name: string) => join(dir, name);

/** A chart whose approval can be skipped: CANCEL in review goes straight to paid. */
const EXPENSE = `
import { setup } from 'xstate';
import { defineChart, only } from '../../src/index.ts';

export const machine = setup({
  types: { events: {} as { type: 'SUBMIT'; amount: number } | { type: 'APPROVE' } | { type: 'CANCEL' } },
}).createMachine({
  id: 'expense',
  initial: 'draft',
  states: {
    draft: { on: { SUBMIT: 'review' } },
    review: { on: { APPROVE: 'paid', CANCEL: 'paid' } },
    paid: { type: 'final' },
  },
});

export const chart = defineChart(machine, {
  eventSamples: { SUBMIT: [{ type: 'SUBMIT', amount: 42 }], APPROVE: [{ type: 'APPROVE' }], CANCEL: [{ type: 'CANCEL' }] },
  properties: [only('review', 'paid', { via: ['APPROVE'] })],
});
`;

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(at('expense.ts'), EXPENSE);
  const check = await runCli(['check', at('expense.ts'), '--json']);
  expect(check.code).toBe(1);
  writeFileSync(at('check.json'), check.stdout);
  writeFileSync(at('events.json'), JSON.stringify([{ type: 'SUBMIT', amount: 42 }]));
  writeFileSync(at('illegal.json'), JSON.stringify([{ type: 'APPROVE' }]));
  writeFileSync(at('garbage.json'), '{ "nothing": true }');
});

describe('agentcharts diagram --path', () => {
  test('draws the counterexample of agentcharts check --json on the chart', async () => {
    const r = await runCli(['diagram', at('expense.ts'), '--path', at('check.json')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('review --> paid : CANCEL');
    expect(r.stdout).toContain('  class draft,review pathPassed');
    expect(r.stdout).toContain('  class paid pathEnd');
    expect(r.stdout).toContain('  note right of paid\n    path: SUBMIT → CANCEL\n  end note');
  });

  test('takes a plain array of events too, and keeps --direction and --markdown', async () => {
    const r = await runCli([
      'diagram',
      at('expense.ts'),
      '--path',
      at('events.json'),
      '--direction',
      'LR',
      '--markdown',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith('```mermaid\nstateDiagram-v2\n  direction LR\n')).toBe(true);
    expect(r.stdout).toContain('  class draft pathPassed');
    expect(r.stdout).toContain('  class review pathEnd');
  });

  test('a built-in chart, with a path through a timer', async () => {
    writeFileSync(
      at('task.json'),
      JSON.stringify([
        { type: 'START' },
        { type: 'TRANSIENT_ERROR', error: 'rate_limit' },
        { type: 'xstate.after.retryBackoff.task-lifecycle.retrying' },
      ]),
    );
    const r = await runCli(['diagram', 'task-lifecycle', '--path', at('task.json')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  class planned,retrying pathPassed');
    expect(r.stdout).toContain('  class running pathEnd');
    expect(r.stdout).toContain('path: START → TRANSIENT_ERROR → after:retryBackoff');
  });

  test('a path the chart does not accept, a missing file and a file without a path are refused in one line', async () => {
    expectCleanFailure(
      await runCli(['diagram', at('expense.ts'), '--path', at('illegal.json')]),
      /Option --path: event #1 \(APPROVE\) is not accepted in state "draft" of machine "expense"/,
    );
    expectCleanFailure(
      await runCli(['diagram', 'task-lifecycle', '--path', at('missing.json')]),
      /Option --path: .*missing\.json: no such file/,
    );
    expectCleanFailure(
      await runCli(['diagram', 'task-lifecycle', '--path', at('garbage.json')]),
      /Option --path: .*garbage\.json holds no path/,
    );
    expectCleanFailure(
      await runCli(['diagram', 'task-lifecycle', '--path', at('check.json')]),
      /Option --path: .*check\.json has no counterexample for machine "task-lifecycle"/,
    );
  });
});
