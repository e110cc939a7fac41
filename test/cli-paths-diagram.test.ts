import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { resolveChart } from '../src/commands/resolve-chart.ts';
import { toMermaid } from '../src/inspect/mermaid.ts';
import { formatCoverage, planTransitionTests } from '../src/testing/plan.ts';
import { expectCleanFailure, runCli, type CliResult } from './support/cli.ts';

const cli = (...args: string[]): Promise<CliResult> => runCli(args);

const root = process.cwd();
const fixtures = join(root, 'test-artifacts', 'cli-fixtures');

const USER_MACHINE = `
import { setup } from 'xstate';

export const machine = setup({
  types: {
    events: {} as { type: 'OPEN'; by: string } | { type: 'CLOSE' } | { type: 'LOCK' } | { type: 'UNLOCK' },
  },
}).createMachine({
  id: 'door',
  initial: 'closed',
  states: {
    closed: { on: { OPEN: 'opened', LOCK: 'locked' } },
    opened: { on: { CLOSE: 'closed' } },
    locked: { on: { UNLOCK: 'closed' } },
  },
});

export const eventSamples = {
  OPEN: [{ type: 'OPEN', by: 'ada' }],
  CLOSE: [{ type: 'CLOSE' }],
  LOCK: [{ type: 'LOCK' }],
  UNLOCK: [{ type: 'UNLOCK' }],
};
`;

const FILES: Record<string, string> = {
  'door.ts': USER_MACHINE,
  'no-machine.ts': 'export const answer = 42;\n',
  'two-machines.ts': `
import { createMachine } from 'xstate';
export const first = createMachine({ id: 'first', initial: 'a', states: { a: { on: { GO: 'b' } }, b: { type: 'final' } } });
export const second = createMachine({ id: 'second', initial: 'x', states: { x: { type: 'final' } } });
`,
  'throws.ts': "throw new Error('boom while loading');\n",
  'syntax-error.ts':
    'export const machine = { id: "broken", states: { a: { on: { GO: "b" }; } } };\n',
  'bad-target.ts': `
import { createMachine } from 'xstate';
export const machine = createMachine({ id: 'bt', initial: 'a', states: { a: { on: { GO: 'nowhere' } } } });
`,
  'counter.ts': `
import { assign, setup } from 'xstate';
export const machine = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'INC' } },
  actions: { inc: assign({ n: ({ context }) => context.n + 1 }) },
}).createMachine({ id: 'counter', context: { n: 0 }, initial: 'on', states: { on: { on: { INC: { actions: 'inc' } } } } });
`,
  'stuck.ts': `
import { createMachine } from 'xstate';
export default createMachine({ id: 'stuck', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });
`,
};

beforeAll(() => {
  mkdirSync(fixtures, { recursive: true });
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(fixtures, name), text);
});

const fixture = (name: string): string => `test-artifacts/cli-fixtures/${name}`;

describe.concurrent('agentcharts paths', () => {
  test('prints the coverage and a shortest path to every state of one of our machines', async () => {
    const chart = await resolveChart('task-lifecycle');
    const plan = planTransitionTests(chart.machine, {
      events: chart.eventSamples,
      input: chart.input,
      ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
    });
    const result = await cli('paths', 'task-lifecycle');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(formatCoverage('task-lifecycle', plan.coverage));
    expect(lines[2]).toBe(`Paths (${plan.coverage.paths}):`);
    expect(lines[3]).toMatch(/^ {2}planned +\(initial\)$/);
    expect(lines).toContain('  running   START');
    expect(lines.filter((l) => l.startsWith('  '))).toHaveLength(plan.coverage.paths);
  });

  test('prints the paths of a machine exported by a user module', async () => {
    const result = await cli('paths', fixture('door.ts'));
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(
      [
        'test-artifacts/cli-fixtures/door.ts#machine: 3 states (3/3 declared state nodes reached), 3 paths, 4 legal transitions, 8 illegal pairs',
        '',
        'Paths (3):',
        '  closed  (initial)',
        '  opened  OPEN',
        '  locked  LOCK',
        '',
      ].join('\n'),
    );
  });

  test('prints the plan as JSON with event payloads', async () => {
    const result = await cli('paths', fixture('door.ts'), '--json');
    expect(result.code).toBe(0);
    const plan = JSON.parse(result.stdout) as {
      coverage: { states: number };
      paths: Array<{ state: string; events: unknown[] }>;
      illegal: unknown[];
    };
    expect(plan.coverage.states).toBe(3);
    expect(plan.paths).toContainEqual({
      state: 'opened',
      final: false,
      events: [{ type: 'OPEN', by: 'ada' }],
    });
    expect(plan.illegal).toContainEqual({ state: 'opened', eventType: 'LOCK' });
  });

  test('chooses one of several exported machines with --export', async () => {
    const result = await cli('paths', fixture('two-machines.ts'), '--export', 'first');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('two-machines.ts#first: 2 states');
    // `GO` had no sample: a bare { type } stands in, and the user is told.
    expect(result.stderr).toContain('note: no event samples for GO');
  });

  test('reports a dead end as a problem with a non-zero exit', async () => {
    const result = await cli('paths', fixture('stuck.ts'));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('stuck.ts#default: 2 states');
    expect(result.stderr).toContain('problem (dead-end): non-final state "b" has no way out');
  });

  test('fails clearly for a machine name that does not exist', async () => {
    const result = await cli('paths', 'no-such-machine');
    expectCleanFailure(
      result,
      /Unknown machine "no-such-machine"; known machines: agent-lifecycle, /,
    );
  });

  test('fails clearly for a module that exports no machine', async () => {
    const result = await cli('paths', fixture('no-machine.ts'));
    expectCleanFailure(
      result,
      /NoMachineError: Module ".*no-machine.ts" exports no XState machine/,
    );
  });

  test('fails clearly for a module that exports several machines and no choice', async () => {
    const result = await cli('paths', fixture('two-machines.ts'));
    expectCleanFailure(
      result,
      /exports several machines \(first, second\); choose one with --export/,
    );
  });

  test('fails clearly for a missing module and for one that throws while loading', async () => {
    expectCleanFailure(
      await cli('paths', fixture('missing.ts')),
      /ModuleLoadError: .*no such file/,
    );
    expectCleanFailure(
      await cli('paths', fixture('throws.ts')),
      /ModuleLoadError: Cannot load module ".*throws.ts": boom while loading/,
    );
  });

  test('a load failure keeps its reason: where a syntax error is, which target does not exist', async () => {
    expectCleanFailure(
      await cli('diagram', fixture('syntax-error.ts')),
      /ModuleLoadError: Cannot load module ".*syntax-error.ts": Transform failed with 1 error: .*syntax-error.ts:1:\d+: ERROR: Expected "}" but found ";"/,
    );
    expectCleanFailure(
      await cli('paths', fixture('bad-target.ts')),
      /Invalid transition definition for state node 'bt.a': .*nowhere/,
    );
  });

  test('fails clearly when the traversal exceeds its bound', async () => {
    const result = await cli('paths', fixture('counter.ts'), '--limit', '100');
    expectCleanFailure(
      result,
      /TraversalLimitError: Traversal of machine "counter" exceeded its bound of 100 steps/,
    );
    expect(result.stderr).toContain('hint: export `serializeState(snapshot): string`');
  });

  test('fails clearly for a bad --limit or --input', async () => {
    expectCleanFailure(
      await cli('paths', 'task-lifecycle', '--limit', 'lots'),
      /--limit: expected a positive integer/,
    );
    expectCleanFailure(
      await cli('paths', 'task-lifecycle', '--input', '{nope'),
      /--input: not valid JSON/,
    );
  });
});

describe.concurrent('agentcharts diagram', () => {
  test('prints the Mermaid diagram of one of our machines', async () => {
    const result = await cli('diagram', 'agent-lifecycle');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(toMermaid(catalog['agent-lifecycle'].machine));
  });

  test('prints the diagram of a user module, fenced with --markdown', async () => {
    const result = await cli('diagram', fixture('door.ts'), '--markdown', '--direction', 'lr');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        '```mermaid',
        'stateDiagram-v2',
        '  direction LR',
        '  closed',
        '  opened',
        '  locked',
        '  [*] --> closed',
        '  closed --> opened : OPEN',
        '  closed --> locked : LOCK',
        '  opened --> closed : CLOSE',
        '  locked --> closed : UNLOCK',
        '```',
        '',
      ].join('\n'),
    );
  });

  test('fails clearly for an unknown machine, a module without one and a bad direction', async () => {
    expectCleanFailure(await cli('diagram', 'nope'), /Unknown machine "nope"/);
    expectCleanFailure(await cli('diagram', fixture('no-machine.ts')), /exports no XState machine/);
    expectCleanFailure(
      await cli('diagram', 'task-lifecycle', '--direction', 'up'),
      /--direction: expected one of TB, BT, LR, RL/,
    );
  });
});
