/**
 * How the dashboard and the API show a state: the chart's document name, class
 * and colour (chart metadata, through core/meanings), and the dashboard group of
 * the class. No table of state names lives here.
 */
import { classifyState, stateColor, stateName, type StateClass } from '../core/meanings.ts';

/**
 * Dashboard groups. `paused` (waiting for a person, by design) and `blocked`
 * (waiting on a dependency or another agent) are kept apart, as seed 001 asks:
 * "display paused and blocked separately, not lumped together as not running".
 */
export type StateCategory =
  'idle' | 'working' | 'paused' | 'blocked' | 'succeeded' | 'failed' | 'cancelled';

export const CATEGORIES: readonly StateCategory[] = [
  'idle',
  'working',
  'paused',
  'blocked',
  'succeeded',
  'failed',
  'cancelled',
];

const CATEGORY_OF: Readonly<Record<StateClass, StateCategory>> = {
  idle: 'idle',
  working: 'working',
  retrying: 'working',
  waiting: 'blocked',
  paused: 'paused',
  completed: 'succeeded',
  failed: 'failed',
  terminated: 'cancelled',
};

export interface Badge {
  /** The document's name of the state (`executing` for `active.executing`). */
  name: string;
  class: StateClass;
  category: StateCategory;
  color: string;
}

/**
 * The badge of a stored state label of machine `machineId`.
 *
 * @example
 * badge('task-lifecycle', 'paused'); // { name: 'paused', class: 'paused', category: 'paused', color: '#9ca3af' }
 */
export function badge(machineId: string, label: string, status = 'active'): Badge {
  const cls = classifyState(machineId, label, status);
  return {
    name: stateName(machineId, label),
    class: cls,
    category: CATEGORY_OF[cls],
    color: stateColor(machineId, label, status),
  };
}
