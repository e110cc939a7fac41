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
import { createStrictActor } from '../strict/strict-actor.ts';
import {
  formatCoverage,
  formatPath,
  planTransitionTests,
  serializeWithHistory,
  type PlanOptions,
  type TransitionPlan,
} from './plan.ts';
import { applyStep, replayPath } from './replay.ts';

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
}

/** Appends ` (#2)`, ` (#3)` … to repeated test names so each test has its own. */
function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((name) => {
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    return n === 1 ? name : `${name} (#${n})`;
  });
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
  machine: TLogic,
  options: GenerateOptions<TLogic>,
): TransitionPlan {
  const plan = planTransitionTests(machine, options);
  const name = options.describe ?? machine.id;
  const serialize =
    (options.serializeState as ((s: AnyMachineSnapshot) => string) | undefined) ??
    serializeWithHistory;
  const input = options.input;
  const byKey = new Map(plan.states.map((s) => [s.key, s]));
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

    describe('reaches every state by a shortest path', () => {
      const names = uniqueNames(
        plan.states.map((s) => `reaches ${s.label} by ${formatPath(s.path)}`),
      );
      plan.states.forEach((state, i) => {
        test(names[i] ?? state.label, () => {
          const actor = replayPath(machine, state.path, { input });
          try {
            const snapshot = actor.getSnapshot() as AnyMachineSnapshot;
            expect(stateLabel(snapshot.value)).toBe(state.label);
            expect(serialize(snapshot)).toBe(state.key);
          } finally {
            actor.stop();
          }
        });
      });
    });

    if (plan.transitions.length > 0) {
      describe('takes every legal transition', () => {
        const names = uniqueNames(
          plan.transitions.map((t) => `${t.fromLabel} goes to ${t.toLabel} on ${t.step.label}`),
        );
        plan.transitions.forEach((transition, i) => {
          test(names[i] ?? transition.step.label, () => {
            const from = byKey.get(transition.from);
            expect(from, 'the source state has a path').toBeDefined();
            const actor = replayPath(machine, from?.path ?? [], { input });
            try {
              const next = applyStep(actor, transition.step);
              expect(stateLabel(next.value)).toBe(transition.toLabel);
              expect(serialize(next)).toBe(transition.to);
            } finally {
              actor.stop();
            }
          });
        });
      });
    }

    if (plan.illegal.length > 0) {
      describe('rejects every illegal event', () => {
        const names = uniqueNames(plan.illegal.map((r) => `${r.fromLabel} rejects ${r.eventType}`));
        plan.illegal.forEach((rejection, i) => {
          test(names[i] ?? rejection.eventType, () => {
            const from = byKey.get(rejection.from);
            expect(from, 'the source state was explored').toBeDefined();
            if (!from) return;
            const actor = createStrictActor(machine, {
              snapshot: machine.getPersistedSnapshot(from.snapshot),
              ...(input !== undefined ? { input } : {}),
              clock: new SimulatedClock(),
            }).start();
            try {
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
            } finally {
              actor.stop();
            }
          });
        });
      });
    }
  });

  return plan;
}
