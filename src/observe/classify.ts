/**
 * What a state label means to a monitor, for any chart: seed 003's statistics
 * (active, completed, failed), seed 000's "active agents" and seed 001's metrics
 * (retrying, time to recover) need to know which states are working, waiting or
 * finished, while every chart names its states its own way (`running`,
 * `Running`, `active.executing`, `AWAITING_PLAN_APPROVAL`, `COMPLETE`).
 */
import type { ActorStatus } from '../store/types.ts';

/**
 * - `idle`: created or reset, no work yet (seed 000 `idle`, seed 001 `planned`);
 * - `working`: doing the work (running, thinking, executing, planning…);
 * - `waiting`: blocked on a dependency, an input, another agent or an approval;
 * - `paused`: paused by a person (seed 000 leaves it out of the active agents);
 * - `retrying`: backing off after a transient error;
 * - `completed`, `failed`, `terminated`: finished, whether or not the chart's state is final.
 */
export type StateClass =
  'idle' | 'working' | 'waiting' | 'paused' | 'retrying' | 'completed' | 'failed' | 'terminated';

export const STATE_CLASSES: readonly StateClass[] = [
  'idle',
  'working',
  'waiting',
  'paused',
  'retrying',
  'completed',
  'failed',
  'terminated',
];

const BY_NAME: Readonly<Record<string, StateClass>> = {
  idle: 'idle',
  planned: 'idle',
  paused: 'paused',
  blocked: 'waiting',
  waiting_input: 'waiting',
  waiting_agent: 'waiting',
  retrying: 'retrying',
  completed: 'completed',
  complete: 'completed',
  done: 'completed',
  succeeded: 'completed',
  failed: 'failed',
  error: 'failed',
  terminated: 'terminated',
  cancelled: 'terminated',
  canceled: 'terminated',
};

/** The last segment of a label (`active.waiting_input` → `waiting_input`), lower-cased. */
export function leafName(state: string): string {
  const parts = state.split(/[.,]/);
  return (parts[parts.length - 1] ?? state).toLowerCase();
}

/**
 * Classifies a state label by its leaf name; an actor whose snapshot status is
 * not `active` (an XState final state, an error, a stop) is finished whatever
 * its state is called.
 *
 * @example
 * classifyState('active.waiting_input'); // 'waiting'
 * classifyState('COMPLETE', 'done');     // 'completed'
 * classifyState('Processing.brain');     // 'working'
 */
export function classifyState(state: string, status: ActorStatus = 'active'): StateClass {
  const leaf = leafName(state);
  const named = BY_NAME[leaf] ?? (leaf.startsWith('awaiting_') ? 'waiting' : 'working');
  if (status === 'active' || isFinished(named)) return named;
  if (status === 'error') return 'failed';
  if (status === 'stopped') return 'terminated';
  return 'completed';
}

/** Completed, failed or terminated. */
export function isFinished(cls: StateClass): boolean {
  return cls === 'completed' || cls === 'failed' || cls === 'terminated';
}

/**
 * Working, waiting or retrying: seed 000's active agents (`initializing` …
 * `waiting_agent`, not idle, paused or terminal) and seed 003's `is_active()`.
 */
export function isActiveClass(cls: StateClass): boolean {
  return cls === 'working' || cls === 'waiting' || cls === 'retrying';
}

/** Paused, waiting or retrying: the states seed 001 measures the time to recover from. */
export function isDisrupted(cls: StateClass): boolean {
  return cls === 'paused' || cls === 'waiting' || cls === 'retrying';
}
