/**
 * Mutants of a chart for the property checks: the same machine with one state's
 * config edited (a bypass edge added, a timer dropped), or with a guard that always
 * passes (a guard removed), and the same chart around it.
 */
import { createMachine, type AnyStateMachine } from 'xstate';
import { defineChart, type ChartDefinition } from '../../src/core/chart.ts';

type StateConfig = Record<string, unknown> & { states?: Record<string, StateConfig> };

/** The machine with the state at `path` (`active.planning`) replaced by `edit(config)`. */
export function editState(
  machine: AnyStateMachine,
  path: string,
  edit: (state: StateConfig) => StateConfig,
): AnyStateMachine {
  const replace = (node: StateConfig, keys: string[]): StateConfig => {
    const [key, ...rest] = keys;
    if (key === undefined) return edit(node);
    const child = node.states?.[key];
    if (!child) throw new Error(`no state "${key}" on the path ${path}`);
    return { ...node, states: { ...node.states, [key]: replace(child, rest) } };
  };
  const config = replace(machine.config as unknown as StateConfig, path.split('.'));
  return createMachine(config as never, machine.implementations as never);
}

/** The state's `on` with one more transition. */
export function withEdge(event: string, target: string) {
  return (state: StateConfig): StateConfig => ({
    ...state,
    on: { ...(state.on as object | undefined), [event]: { target } },
  });
}

/** The state without the `after` timer of `delay`. */
export function withoutTimer(delay: string) {
  return (state: StateConfig): StateConfig => {
    const after = { ...(state.after as Record<string, unknown>) };
    delete after[delay];
    return { ...state, after };
  };
}

/** The machine with guard `name` always passing, as if it were not written. */
export function withoutGuard(machine: AnyStateMachine, name: string): AnyStateMachine {
  return machine.provide({ guards: { [name]: () => true } });
}

/** The chart around another machine (same samples, input, projection and properties). */
export function mutant(chart: ChartDefinition, machine: AnyStateMachine): ChartDefinition {
  return defineChart({ ...chart, machine } as ChartDefinition);
}
