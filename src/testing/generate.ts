/**
 * `agentcharts/testing`: a chart's exhaustive transition tests as a vitest
 * suite (`vitest` is an optional peer dependency).
 *
 * @module agentcharts/testing
 */
import {
  SimulatedClock,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
} from 'xstate';
import { afterAll, describe, expect, test } from 'vitest';
import { InvalidTransitionError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import { createStrictActor, type StrictActor } from '../strict/strict-actor.ts';
import {
  formatCoverage,
  formatPath,
  planTransitionTests,
  serializeWithHistory,
  type PlannedStep,
  type PlanOptions,
  type TransitionPlan,
} from './plan.ts';
import { applyStep, replayPath } from './replay.ts';
import { checkMigrationCase, planMigrationCases } from './migrations.ts';
import { chartAndMachine, defineChart, type ChartDefinition } from '../core/chart.ts';
import type { ChartProperty } from '../core/properties.ts';
import { assertProven } from '../check/assert.ts';
import { checkChart } from '../check/check-chart.ts';
import { allChecks } from '../check/format.ts';
import { traversalArgs } from './traversal-args.ts';

/** Coverage counts a test pins, so that a chart change that alters them is seen. */
export interface PinnedCoverage {
  states: number;
  legal: number;
  illegal: number;
  paths: number;
}

export interface GenerateOptions<TLogic extends AnyStateMachine> extends PlanOptions<TLogic> {
  /** Name of the generated `describe` block. Default: the machine id. */
  describe?: string;
  /** Pinned counts; a test fails when the plan's coverage differs. */
  expect?: PinnedCoverage;
  /**
   * The chart this machine belongs to (its version and migrations) and its earlier
   * versions: every state they reach, and the contexts their transitions produce,
   * must migrate to a snapshot this version restores and continues from.
   */
  versions?: { chart: ChartDefinition; previous: readonly ChartDefinition[] } | undefined;
  /**
   * Properties to prove, one test each (default: the chart's own `properties`,
   * and its children's); see `checkChart`.
   */
  properties?: readonly ChartProperty[] | undefined;
}

/**
 * One test per item, named by `nameOf`; a repeated name gets ` (#2)`, ` (#3)` …
 * so each test has its own.
 */
function testEach<T>(
  items: readonly T[],
  nameOf: (item: T) => string,
  body: (item: T) => void,
): void {
  const seen = new Map<string, number>();
  for (const item of items) {
    const name = nameOf(item);
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    test(n === 1 ? name : `${name} (#${n})`, () => {
      body(item);
    });
  }
}

/**
 * One test per property of the chart (and of its children's charts), passing
 * when `checkChart` proves it; a refuted one fails with its counterexample.
 */
function provePropertiesOf<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic> | undefined,
  machine: TLogic,
  options: GenerateOptions<TLogic>,
): void {
  const own = options.properties ?? chart?.properties;
  if (!own?.length && !chart?.children?.length) return;
  // The chart as the options explore it: their samples, input and projection win.
  const checked = defineChart({
    ...(chart ?? defineChart(machine)),
    eventSamples: options.events,
    defaultInput: options.input,
    ...(options.serializeState ? { serializeState: options.serializeState } : {}),
    properties: own ?? [],
  } as unknown as ChartDefinition);
  const limit = options.limit === undefined ? {} : { limit: options.limit };
  const checks = allChecks([checkChart(checked, limit)]);
  describe('proves every property of the chart', () => {
    for (const check of checks) {
      const prefix = check === checks[0] ? '' : `${check.chart}: `;
      testEach(
        check.properties,
        (p) => `${prefix}${p.title}`,
        (p) => {
          assertProven(check, p);
        },
      );
    }
  });
}

/** Runs `check` on a started actor, then stops the actor whatever happened. */
function stopAfter<A extends { stop(): unknown }>(actor: A, check: (actor: A) => void): void {
  try {
    check(actor);
  } finally {
    actor.stop();
  }
}

/**
 * Registers vitest tests that exercise a machine exhaustively with sample events:
 * a shortest path to every reachable state; every legal (state, event) transition
 * taken, its target asserted; every illegal (state, event type) pair rejected by
 * the strict actor with `InvalidTransitionError` and the snapshot unchanged; and
 * static checks (every declared state reached, no unmarked non-final dead end,
 * every event type with a valid sample). Paths are replayed on a strict actor
 * with a simulated clock; delayed events must be armed by the state before they
 * are delivered. Call it at the top level of a test file. Returns the plan.
 *
 * Mark intended exceptions on the chart itself: `meta: { deadEnd: true }` on a
 * state that may stop the machine without being final, `meta: { unreachable: true }`
 * on a state no path is expected to reach (or pass `intentionalDeadEnds` /
 * `intentionalUnreachable`).
 *
 * @example
 * import { generateTransitionTests } from 'agentcharts/testing';
 * generateTransitionTests(machine, {
 *   events: { START: [{ type: 'START' }], STOP: [{ type: 'STOP' }] },
 *   expect: { states: 2, legal: 2, illegal: 2, paths: 2 },
 * });
 */
export function generateTransitionTests<TLogic extends AnyStateMachine>(
  chart: ChartDefinition<TLogic>,
  options?: Partial<GenerateOptions<TLogic>>,
): TransitionPlan;
export function generateTransitionTests<TLogic extends AnyStateMachine>(
  machine: TLogic,
  options: GenerateOptions<TLogic>,
): TransitionPlan;
export function generateTransitionTests<TLogic extends AnyStateMachine>(
  chartOrMachine: TLogic | ChartDefinition<TLogic>,
  given?: Partial<GenerateOptions<TLogic>>,
): TransitionPlan {
  const { machine, options } = traversalArgs<TLogic, GenerateOptions<TLogic>>(
    'generateTransitionTests',
    chartOrMachine,
    given,
  );
  const { chart } = chartAndMachine(chartOrMachine);
  const plan = planTransitionTests(machine, options);
  const name = options.describe ?? machine.id;
  const serialize =
    (options.serializeState as ((s: AnyMachineSnapshot) => string) | undefined) ??
    serializeWithHistory;
  const input = options.input;
  const byKey = new Map(plan.states.map((s) => [s.key, s]));
  /** Runs `check` on an actor replayed along `path`, stopping it after. */
  const along = (path: readonly PlannedStep[], check: (actor: StrictActor<TLogic>) => void) =>
    stopAfter(replayPath(machine, path, { input }), check);
  /** The snapshot is the planned one: its state's label and its exact serialised form. */
  const expectPlanned = (snapshot: AnyMachineSnapshot, label: string, key: string) => {
    expect(stateLabel(snapshot.value)).toBe(label);
    expect(serialize(snapshot)).toBe(key);
  };
  const problemsOf = (...kinds: string[]) =>
    plan.problems.filter((p) => kinds.includes(p.kind)).map((p) => p.message);

  describe(`${name} transitions`, () => {
    afterAll(() => {
      console.log(formatCoverage(name, plan.coverage));
    });

    test('every declared state is reached by some path', () => {
      expect(problemsOf('unreachable')).toEqual([]);
    });

    test('no non-final state is a dead end', () => {
      expect(problemsOf('dead-end')).toEqual([]);
    });

    test('every event type the machine accepts has a valid sample', () => {
      expect(problemsOf('missing-sample', 'invalid-sample')).toEqual([]);
    });

    if (options.expect) {
      const pinned = options.expect;
      test('the coverage counts match the pinned counts', () => {
        const { states, legal, illegal, paths } = plan.coverage;
        expect({ states, legal, illegal, paths }).toEqual(pinned);
      });
    }

    provePropertiesOf(chart, machine, options);

    if (options.versions) {
      const { chart, previous } = options.versions;
      describe('migrates what earlier versions stored', () => {
        testEach(
          planMigrationCases(chart, previous),
          (c) => `version ${c.from} ${c.label} migrates to ${c.to} and continues`,
          (c) => {
            expect(checkMigrationCase(chart, c, options.events)).toBeUndefined();
          },
        );
      });
    }

    describe('reaches every state by a shortest path', () => {
      testEach(
        plan.states,
        (s) => `reaches ${s.label} by ${formatPath(s.path)}`,
        (state) => {
          along(state.path, (actor) => {
            expectPlanned(actor.getSnapshot() as AnyMachineSnapshot, state.label, state.key);
          });
        },
      );
    });

    if (plan.transitions.length > 0) {
      describe('takes every legal transition', () => {
        testEach(
          plan.transitions,
          (t) => `${t.fromLabel} goes to ${t.toLabel} on ${t.step.label}`,
          (transition) => {
            const from = byKey.get(transition.from);
            expect(from, 'the source state has a path').toBeDefined();
            along(from?.path ?? [], (actor) => {
              expectPlanned(applyStep(actor, transition.step), transition.toLabel, transition.to);
            });
          },
        );
      });
    }

    if (plan.illegal.length > 0) {
      describe('rejects every illegal event', () => {
        testEach(
          plan.illegal,
          (r) => `${r.fromLabel} rejects ${r.eventType}`,
          (rejection) => {
            const from = byKey.get(rejection.from);
            expect(from, 'the source state was explored').toBeDefined();
            if (!from) return;
            const actor = createStrictActor(machine, {
              snapshot: machine.getPersistedSnapshot(from.snapshot),
              ...(input !== undefined ? { input } : {}),
              clock: new SimulatedClock(),
            }).start();
            stopAfter(actor, () => {
              expect(stateLabel((actor.getSnapshot() as AnyMachineSnapshot).value)).toBe(
                rejection.fromLabel,
              );
              for (const sample of rejection.samples) {
                const before = JSON.stringify(actor.getPersistedSnapshot());
                let thrown: unknown;
                try {
                  actor.send(sample as EventFromLogic<TLogic>);
                } catch (error) {
                  thrown = error;
                }
                expect(thrown).toBeInstanceOf(InvalidTransitionError);
                expect(thrown).toMatchObject({
                  machineId: machine.id,
                  state: rejection.fromLabel,
                  eventType: rejection.eventType,
                });
                expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
              }
            });
          },
        );
      });
    }
  });

  return plan;
}
