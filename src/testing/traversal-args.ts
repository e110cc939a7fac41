/**
 * What every traversal (`exploreMachine`, `planTransitionTests`,
 * `transitionTable`, `generateTransitionTests`) takes: a machine or its chart, and
 * options whose sample events, input and state identity default to the chart's.
 */
import type { AnyStateMachine } from 'xstate';
import { chartAndMachine, isChartDefinition, type ChartDefinition } from '../core/chart.ts';
import { EXPECTED, isMachine, isOptionsBag, requireArg } from '../core/options.ts';

/** The options a chart can fill in. */
interface ChartFilled {
  events?: unknown;
  input?: unknown;
  serializeState?: ((snapshot: never) => string) | undefined;
}

/** The arguments every traversal takes: a machine and sample events by type. */
export function checkTraversalArgs(fn: string, machine: unknown, options: unknown): void {
  requireArg(fn, 'machine', isMachine(machine), EXPECTED.machine);
  const events = (options as { events?: unknown } | null | undefined)?.events;
  requireArg(
    fn,
    'options.events',
    typeof events === 'object' && events !== null,
    "sample events by type ({ START: [{ type: 'START' }] })",
  );
}

/**
 * The machine of `target` (a machine, or a chart) and the options: those given,
 * over the chart's samples, default input and `serializeState` (a bare machine's
 * chart is the one it was defined with, if any).
 */
export function traversalArgs<TLogic extends AnyStateMachine, TOptions extends ChartFilled>(
  fn: string,
  target: TLogic | ChartDefinition<TLogic>,
  given: Partial<TOptions> | undefined,
): { machine: TLogic; options: TOptions } {
  requireArg(
    fn,
    'machine',
    isMachine(target) || isChartDefinition(target),
    EXPECTED.machineOrChart,
  );
  requireArg(fn, 'options', isOptionsBag(given), EXPECTED.options);
  const { machine, chart } = chartAndMachine(target);
  const fromChart: ChartFilled = chart
    ? {
        events: chart.eventSamples,
        ...(chart.defaultInput !== undefined ? { input: chart.defaultInput } : {}),
        ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
      }
    : {};
  const options = { ...fromChart, ...given } as TOptions;
  checkTraversalArgs(fn, machine, options);
  return { machine, options };
}
