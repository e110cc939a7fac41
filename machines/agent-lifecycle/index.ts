import type { AnyMachineSnapshot, SnapshotFrom, StateValue } from 'xstate';
import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { stateLabel } from '../../src/core/state.ts';
import { machine } from './agent-lifecycle.machine.ts';
import {
  AGENT_STATES,
  events,
  type AgentLifecycleInput,
  type AgentState,
} from './agent-lifecycle.types.ts';
import { properties } from './agent-lifecycle.properties.ts';

export { machine } from './agent-lifecycle.machine.ts';
export {
  events,
  inputSchema,
  AGENT_STATES,
  ACTIVE_STATES,
  TERMINAL_STATES,
  BLOCKED_STATES,
} from './agent-lifecycle.types.ts';
export type {
  ActiveState,
  AgentLifecycleContext,
  AgentLifecycleEmitted,
  AgentLifecycleEvent,
  AgentLifecycleEventType,
  AgentLifecycleInput,
  AgentLifecycleTag,
  AgentState,
  AgentStateChangedEvent,
  TerminalState,
} from './agent-lifecycle.types.ts';

const SEED_STATES: ReadonlySet<string> = new Set(AGENT_STATES);

/**
 * The state name of “Agent State Machine” (v1.0) for a snapshot or state value: the
 * last segment of its label (`active.executing` → `executing`).
 *
 * @example
 * agentState(actor.getSnapshot()); // 'executing'
 */
export function agentState(value: AnyMachineSnapshot | StateValue): AgentState {
  const label = stateLabel(value);
  const leaf = label.slice(label.lastIndexOf('.') + 1);
  if (!SEED_STATES.has(leaf)) {
    throw new Error(`State "${label}" is not a state of agent-lifecycle`);
  }
  return leaf as AgentState;
}

/**
 * A finite identity of a snapshot for exploration (`exploreMachine`'s
 * `serializeState`): the default, value + context, never ends because `iteration`
 * rises on every adapt loop, so it is capped at 1 here. `paused_from_state` keeps
 * each pause origin apart.
 *
 * @example
 * exploreMachine(machine, { events: chart.eventSamples, input, serializeState });
 */
export function serializeState(snapshot: SnapshotFrom<typeof machine>): string {
  const context = { ...snapshot.context, iteration: Math.min(snapshot.context.iteration, 1) };
  return JSON.stringify({ value: snapshot.value, context });
}

/** The working states: the agent itself is busy in them (no outside party to wait for). */
export type WorkingState = 'initializing' | 'planning' | 'executing' | 'evaluating' | 'adapting';

/**
 * How long a working state may go without a transition before recovery treats the
 * work as lost. About ten times the upper end of the document's "typical duration"
 * (initializing 1-5 s, planning 5-30 s, evaluating 2-10 s, adapting 5-15 s);
 * executing "varies" and gets half an hour.
 */
export const STALE_AFTER_MS: Readonly<Record<WorkingState, number>> = {
  initializing: 60_000,
  planning: 5 * 60_000,
  executing: 30 * 60_000,
  evaluating: 2 * 60_000,
  adapting: 3 * 60_000,
};

function isWorkingState(state: AgentState): state is WorkingState {
  return Object.hasOwn(STALE_AFTER_MS, state);
}

/**
 * The recovery policy of agent-lifecycle, with optional per-state budgets.
 *
 * - working states (initializing, planning, executing, evaluating, adapting):
 *   resumed while younger than their budget, so the worker that owns the step can
 *   still report it (the document's job reloads the state and carries on); older than
 *   that, the work is taken as lost and `TIMEOUT` (legal in every working state)
 *   moves the agent to `failed` with `duration_ms` = time since the last transition.
 * - waiting_input, waiting_agent, paused: resumed; the document lets them last indefinitely.
 * - idle and the terminal states: resumed; leaving them takes an explicit event.
 *
 * @example
 * const policy = createRecoveryPolicy({ executing: 10 * 60_000 });
 */
export function createRecoveryPolicy(
  staleAfterMs: Partial<Record<WorkingState, number>> = {},
): RecoveryPolicy {
  const budgets: Record<WorkingState, number> = { ...STALE_AFTER_MS, ...staleAfterMs };
  return ({ snapshot, updatedAt, now }) => {
    const state = agentState(snapshot.value);
    if (!isWorkingState(state)) {
      return { action: 'resume', reason: `${state} is safe to resume as persisted` };
    }
    const age = Math.max(0, Math.floor(now - updatedAt));
    const budget = budgets[state];
    if (age < budget) {
      return {
        action: 'resume',
        reason: `${state} for ${age} ms, within its ${budget} ms budget: the worker may still report`,
      };
    }
    return {
      action: 'send',
      event: { type: 'TIMEOUT', payload: { duration_ms: age } },
      reason: `${state} for ${age} ms, over its ${budget} ms budget: the work is taken as lost`,
    };
  };
}

/** The declared recovery policy with the default budgets ({@link STALE_AFTER_MS}). */
export const recovery: RecoveryPolicy = createRecoveryPolicy();

const defaultInput: AgentLifecycleInput = { agent_name: 'planner' };

export const chart = defineChart({
  name: 'agent-lifecycle',
  description:
    'The twelve-state agent lifecycle of “Agent State Machine” (v1.0), pause → resume to the exact state paused from.',
  machine,
  events,
  eventSamples: {
    START: [{ type: 'START', payload: { task_id: 'task-1' } }],
    INIT_COMPLETE: [{ type: 'INIT_COMPLETE', payload: { context_loaded: true } }],
    PLAN_COMPLETE: [{ type: 'PLAN_COMPLETE', payload: { plan_id: 'plan-1', steps: 3 } }],
    STEP_COMPLETE: [
      { type: 'STEP_COMPLETE', payload: { step_id: 'step-1', output: { summary: 'done' } } },
    ],
    STEP_FAILED: [{ type: 'STEP_FAILED', payload: { step_id: 'step-1', error: 'tool crashed' } }],
    EVALUATION_PASS: [{ type: 'EVALUATION_PASS', payload: { confidence: 0.9 } }],
    EVALUATION_FAIL: [
      { type: 'EVALUATION_FAIL', payload: { confidence: 0.4, reason: 'Below threshold' } },
    ],
    ADAPTATION_COMPLETE: [{ type: 'ADAPTATION_COMPLETE', payload: { new_plan_id: 'plan-2' } }],
    INPUT_RECEIVED: [
      { type: 'INPUT_RECEIVED', payload: { input_type: 'user', data: { answer: 'yes' } } },
    ],
    AGENT_COMPLETE: [
      { type: 'AGENT_COMPLETE', payload: { agent_id: 'researcher', output: ['finding'] } },
    ],
    TIMEOUT: [{ type: 'TIMEOUT', payload: { duration_ms: 30_000 } }],
    MAX_ITERATIONS: [{ type: 'MAX_ITERATIONS', payload: { iterations: 10 } }],
    PAUSE: [{ type: 'PAUSE', payload: { reason: 'operator pause' } }],
    RESUME: [{ type: 'RESUME', payload: {} }],
    CANCEL: [{ type: 'CANCEL', payload: { reason: 'operator cancel' } }],
    WAIT_FOR_INPUT: [{ type: 'WAIT_FOR_INPUT', payload: { waiting_for: 'user approval' } }],
    WAIT_FOR_AGENT: [{ type: 'WAIT_FOR_AGENT', payload: { agent_id: 'researcher' } }],
    NEXT_STEP: [{ type: 'NEXT_STEP', payload: { confidence: 0.8 } }],
    CLEANUP: [{ type: 'CLEANUP', payload: {} }],
  },
  defaultInput,
  recovery,
  version: 1,
  migrations: {},
  properties,
  serializeState,
});
