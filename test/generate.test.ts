import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assign, setup } from 'xstate';
import * as z from 'zod';
import { catalog } from '../machines/index.ts';
import { describe, expect, test } from 'vitest';
import { runVitestFixture } from './support/vitest-fixture.ts';
import { eventSchema, type EventFromSchemas } from '../src/strict/events.ts';
import { TraversalLimitError } from '../src/testing/explore.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';
import { formatCoverage, formatPath, planTransitionTests } from '../src/testing/plan.ts';

// A user's own machine, defined here as a user would: nested states, a history
// state, a guarded retry bounded by input, a named delay computed from context,
// and a final state.
const events = {
  ASSIGN: eventSchema('ASSIGN', { assignee: z.string().min(1) }),
  BLOCK: eventSchema('BLOCK'),
  FAIL: eventSchema('FAIL', { reason: z.string().min(1) }),
  PAUSE: eventSchema('PAUSE'),
  RESUME: eventSchema('RESUME'),
  FINISH: eventSchema('FINISH'),
  CLOSE: eventSchema('CLOSE'),
};
type TicketEvent = EventFromSchemas<typeof events>;

const ticket = setup({
  types: {
    context: {} as { attempts: number; maxAttempts: number },
    events: {} as TicketEvent,
    input: {} as { maxAttempts: number },
  },
  schemas: { events },
  guards: {
    canRetry: ({ context }) => context.attempts + 1 < context.maxAttempts,
  },
  actions: {
    countAttempt: assign({ attempts: ({ context }) => context.attempts + 1 }),
  },
  delays: {
    cooldown: ({ context }) => 1_000 * 2 ** context.attempts,
  },
}).createMachine({
  id: 'ticket',
  context: ({ input }) => ({ attempts: 0, maxAttempts: input.maxAttempts }),
  initial: 'open',
  states: {
    open: { on: { ASSIGN: 'work', CLOSE: 'closed' } },
    work: {
      initial: 'doing',
      states: {
        doing: { on: { BLOCK: 'blocked' } },
        blocked: { after: { cooldown: 'doing' } },
        hist: { type: 'history' },
      },
      on: {
        FAIL: [
          { guard: 'canRetry', target: 'open', actions: 'countAttempt' },
          { target: 'closed' },
        ],
        PAUSE: 'paused',
        FINISH: 'closed',
      },
    },
    paused: { on: { RESUME: 'work.hist', CLOSE: 'closed' } },
    closed: { type: 'final' },
  },
});

const ticketEvents = {
  ASSIGN: [{ type: 'ASSIGN', assignee: 'ada' }],
  BLOCK: [{ type: 'BLOCK' }],
  FAIL: [{ type: 'FAIL', reason: 'flaky test' }],
  PAUSE: [{ type: 'PAUSE' }],
  RESUME: [{ type: 'RESUME' }],
  FINISH: [{ type: 'FINISH' }],
  CLOSE: [{ type: 'CLOSE' }],
} as const;

// The generated suite for the user's machine: this is the feature under test.
const plan = generateTransitionTests(ticket, {
  events: ticketEvents,
  input: { maxAttempts: 2 },
  describe: 'user ticket machine',
  expect: { states: 5, legal: 54, illegal: 105, paths: 22 },
});

describe('the transition test generator on a user machine', () => {
  test('plans a path to every state the retry bound allows', () => {
    expect(plan.states.map((s) => `${s.label}: ${formatPath(s.path)}`)).toContain('closed: CLOSE');
    const labels = new Set(plan.states.map((s) => s.label));
    expect([...labels].sort()).toEqual(['closed', 'open', 'paused', 'work.blocked', 'work.doing']);
    // After one failure the guard no longer allows a retry.
    const failedOnce = plan.states.find(
      (s) => s.label === 'open' && (s.snapshot.context as { attempts: number }).attempts === 1,
    );
    expect(failedOnce && formatPath(failedOnce.path)).toBe('ASSIGN → FAIL');
  });

  test('keeps paused states apart by the state their history resumes to', () => {
    const resumes = plan.transitions
      .filter((t) => t.fromLabel === 'paused' && t.step.label === 'RESUME')
      .map((t) => t.toLabel);
    expect(new Set(resumes)).toEqual(new Set(['work.doing', 'work.blocked']));
  });

  test('takes delayed transitions under the name of their delay', () => {
    const delayed = plan.transitions.filter((t) => t.step.delayed);
    expect(delayed.length).toBeGreaterThan(0);
    expect(new Set(delayed.map((t) => `${t.fromLabel} --${t.step.label}--> ${t.toLabel}`))).toEqual(
      new Set(['work.blocked --after:cooldown--> work.doing']),
    );
  });

  test('formats a one-line coverage summary', () => {
    expect(formatCoverage('ticket', plan.coverage)).toBe(
      `ticket: ${plan.coverage.states} states (5/5 declared state nodes reached), ` +
        `${plan.coverage.paths} paths, ${plan.coverage.legal} legal transitions, ` +
        `${plan.coverage.illegal} illegal pairs`,
    );
  });
});

// Machines with faults the static checks must catch.
const faulty = setup({
  types: { events: {} as { type: 'GO' } | { type: 'STOP' } },
}).createMachine({
  id: 'faulty',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'running' } },
    running: { on: { STOP: 'stuck' } },
    stuck: {},
    orphan: { on: { GO: 'idle' } },
    done: { type: 'final' },
  },
});

const counter = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'INC' } },
  actions: { inc: assign({ n: ({ context }) => context.n + 1 }) },
}).createMachine({
  id: 'counter',
  context: { n: 0 },
  initial: 'counting',
  states: { counting: { on: { INC: { actions: 'inc' } } } },
});

describe('the static checks of the transition test generator', () => {
  test('a declared state that no path reaches is reported', () => {
    const faultyPlan = planTransitionTests(faulty, {
      events: { GO: [{ type: 'GO' }], STOP: [{ type: 'STOP' }] },
    });
    expect(faultyPlan.unreachable).toEqual(['orphan', 'done']);
    expect(
      faultyPlan.problems.filter((p) => p.kind === 'unreachable').map((p) => p.subject),
    ).toEqual(['orphan', 'done']);
  });

  test('a non-final state with no way out is reported as a dead end', () => {
    const faultyPlan = planTransitionTests(faulty, {
      events: { GO: [{ type: 'GO' }], STOP: [{ type: 'STOP' }] },
    });
    expect(faultyPlan.problems.filter((p) => p.kind === 'dead-end').map((p) => p.subject)).toEqual([
      'stuck',
    ]);
  });

  test('dead ends and unreached states marked as intended are not reported', () => {
    const listed = planTransitionTests(faulty, {
      events: { GO: [{ type: 'GO' }], STOP: [{ type: 'STOP' }] },
      intentionalDeadEnds: ['stuck'],
      intentionalUnreachable: ['orphan', 'done'],
    });
    expect(listed.problems).toEqual([]);

    const withMeta = setup({ types: { events: {} as { type: 'STOP' } } }).createMachine({
      id: 'meta-marked',
      initial: 'running',
      states: {
        running: { on: { STOP: 'stuck' } },
        stuck: { meta: { deadEnd: true } },
        legacy: { meta: { unreachable: true } },
      },
    });
    expect(
      planTransitionTests(withMeta, { events: { STOP: [{ type: 'STOP' }] } }).problems,
    ).toEqual([]);
  });

  test('states passed through within one step count as reached', () => {
    // `approved` is final, so `reviewing` is done at once and moves on to `merged`;
    // `routing` is left by an eventless transition. Neither is ever a resting state.
    const review = setup({ types: { events: {} as { type: 'APPROVE' } } }).createMachine({
      id: 'review',
      initial: 'routing',
      states: {
        routing: { always: 'reviewing' },
        reviewing: {
          initial: 'open',
          states: { open: { on: { APPROVE: 'approved' } }, approved: { type: 'final' } },
          onDone: 'merged',
        },
        merged: { type: 'final' },
      },
    });
    const reviewPlan = planTransitionTests(review, { events: { APPROVE: [{ type: 'APPROVE' }] } });
    expect(reviewPlan.states.map((s) => s.label)).toEqual(['reviewing.open', 'merged']);
    expect(reviewPlan.problems).toEqual([]);
    expect(reviewPlan.coverage.stateNodes).toEqual({ declared: 4, reached: 4 });
  });

  test('an event type without a sample and an invalid sample are reported', () => {
    const missing = planTransitionTests(ticket, {
      events: {
        ...ticketEvents,
        CLOSE: [],
        ASSIGN: [{ type: 'ASSIGN', assignee: '' }],
      },
      input: { maxAttempts: 2 },
    });
    const sampleProblems = missing.problems.filter(
      (p) => p.kind === 'missing-sample' || p.kind === 'invalid-sample',
    );
    expect(sampleProblems.map((p) => `${p.kind} ${p.subject}`)).toEqual([
      'invalid-sample ASSIGN',
      'missing-sample ASSIGN',
      'missing-sample CLOSE',
    ]);
    // The invalid sample is left out of the traversal, so nothing is assigned.
    expect(missing.states.map((s) => s.label)).toEqual(['open']);
  });

  test('self-loops that only change context do not count as a way out', () => {
    const counting = planTransitionTests(counter, {
      events: { INC: [{ type: 'INC' }] },
      serializeState: (s) => `${JSON.stringify(s.value)}:${Math.min(s.context.n, 3)}`,
    });
    expect(counting.problems.map((p) => `${p.kind} ${p.subject}`)).toEqual(['dead-end counting']);
  });

  test('a traversal whose context grows without bound stops at its limit with a clear error', () => {
    expect(() =>
      planTransitionTests(counter, { events: { INC: [{ type: 'INC' }] }, limit: 50 }),
    ).toThrow(TraversalLimitError);
    expect(() =>
      planTransitionTests(counter, { events: { INC: [{ type: 'INC' }] }, limit: 50 }),
    ).toThrow(/exceeded its bound of 50 steps; pass serializeState/);
  });
});

describe('generated tests run by vitest', () => {
  const root = join(process.cwd(), 'test-artifacts', 'generate-fixture');
  const src = join(process.cwd(), 'src', 'testing', 'generate.ts');

  const runFixture = (body: string) =>
    runVitestFixture(
      root,
      'machine',
      `import { setup } from 'xstate';\nimport { generateTransitionTests } from ${JSON.stringify(src)};\n${body}`,
    );

  const machineSource = (stuckMeta: string) => `
const m = setup({ types: { events: {} as { type: 'GO' } | { type: 'STOP' } } }).createMachine({
  id: 'door',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'running' } },
    running: { on: { STOP: 'stuck' } },
    stuck: { ${stuckMeta} },
  },
});
generateTransitionTests(m, {
  events: { GO: [{ type: 'GO' }], STOP: [{ type: 'STOP' }] },
  expect: { states: 3, legal: 2, illegal: 4, paths: 3 },
});
`;

  test('fail when the machine has an unmarked dead end, and pass once it is marked', () => {
    const failing = runFixture(machineSource(''));
    expect(failing.status).not.toBe(0);
    expect(failing.output).toContain('no non-final state is a dead end');
    expect(failing.output).toMatch(/non-final state \\?"stuck\\?" has no way out/);
    expect(failing.output).toMatch(/Tests\s+1 failed \| 12 passed \(13\)/);

    const passing = runFixture(machineSource('meta: { deadEnd: true }'));
    expect(passing.output).toMatch(/Tests\s+13 passed \(13\)/);
    expect(passing.output).toContain(
      'door: 3 states (3/3 declared state nodes reached), 3 paths, 2 legal transitions, 4 illegal pairs',
    );
    expect(passing.status).toBe(0);
  });
});

describe('the generated suites of our machines', () => {
  test.each(Object.keys(catalog))('%s has a generated test file that pins its counts', (name) => {
    const file = join(process.cwd(), 'test', `generated-${name}.test.ts`);
    expect(existsSync(file), `test/generated-${name}.test.ts exists`).toBe(true);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(`resolveChart('${name}')`);
    expect(text).toMatch(/generateTransitionTests\(/);
    expect(text).toMatch(/expect: \{ states: \d+, legal: \d+, illegal: \d+, paths: \d+ \}/);
  });
});
