/**
 * A machine rebuilt from the definition an inspector sends. `@statelyai/inspect`
 * announces each actor with `definition`: its machine config as JSON, where
 * every function (an action, a guard, an inline actor) was replaced by
 * `{ type: <function name> }`. That is enough to rebuild the machine's states
 * and transitions — what a diagram needs — though not to run it.
 */
import { createMachine, type AnyStateMachine } from 'xstate';
import { AgentchartsError } from '../core/errors.ts';

/** Why a sent definition could not be turned into a machine. */
export type DefinitionProblem = 'not_json' | 'not_a_machine_config' | 'rejected_by_xstate';

/** The definition an inspector sent is not a machine config XState accepts. */
export class InvalidDefinitionError extends AgentchartsError {
  override name = 'InvalidDefinitionError';
  readonly problem: DefinitionProblem;
  constructor(problem: DefinitionProblem, options?: { cause?: unknown }) {
    super('INVALID_DEFINITION', `the machine definition cannot be drawn (${problem})`, options);
    this.problem = problem;
  }
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** JSON.parse without prototype-touching keys (they are dropped). */
function parseClean(text: string): unknown {
  return JSON.parse(text, (key, value: unknown) => (FORBIDDEN_KEYS.has(key) ? undefined : value));
}

/**
 * The machine a definition describes, for drawing only (its actions, guards and
 * actors are the placeholders the inspector sent). Throws
 * {@link InvalidDefinitionError} for text that is not JSON, not a config with
 * states, or a config XState refuses.
 *
 * @example
 * const machine = machineFromDefinition(message.definition);
 * console.log(toMermaid(machine));
 */
export function machineFromDefinition(definition: string): AnyStateMachine {
  let config: unknown;
  try {
    config = parseClean(definition);
  } catch (error) {
    throw new InvalidDefinitionError('not_json', { cause: error });
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new InvalidDefinitionError('not_a_machine_config');
  }
  const record = config as Record<string, unknown>;
  const states = record['states'];
  if (typeof states !== 'object' || states === null || Array.isArray(states)) {
    throw new InvalidDefinitionError('not_a_machine_config');
  }
  try {
    // `createMachine` resolves states and transitions only: nothing runs.
    const machine = createMachine(record as never) as AnyStateMachine;
    // Resolve every transition now, so a bad target fails here, not while drawing.
    const visit = (node: AnyStateMachine['root']): void => {
      void node.transitions;
      void node.always;
      if (node.type === 'compound') void node.initial;
      for (const child of Object.values(node.states)) visit(child);
    };
    visit(machine.root);
    return machine;
  } catch (error) {
    throw new InvalidDefinitionError('rejected_by_xstate', { cause: error });
  }
}
