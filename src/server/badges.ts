/**
 * How the dashboard and the API show a state: the chart's document name, class
 * and colour (chart metadata, through core/meanings), and the dashboard group of
 * the class. No table of state names lives here.
 */
import { classifyState, stateColor, stateName, type StateClass } from '../core/meanings.ts';
import { knownChartMeta } from '../core/meta.ts';

/**
 * Dashboard groups. `paused` (waiting for a person, by design) and `blocked`
 * (waiting on a dependency or another agent) are kept apart, as “Agent State Machine Design” asks:
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

/** What a card shows besides the state: the actor's name and task, when the chart names their fields. */
export interface CardLabels {
  name: string | null;
  task: string | null;
}

function textOf(value: unknown): string | null {
  return typeof value === 'string' || typeof value === 'number'
    ? String(value).slice(0, 200)
    : null;
}

/**
 * The name and task of an actor from its stored snapshot, through the chart's
 * `meta.display` (agent-lifecycle: `agent_name`, `task_id`); nulls otherwise.
 */
export function cardLabels(machineId: string, snapshotJson: string): CardLabels {
  const display = knownChartMeta(machineId)?.display;
  if (display?.name === undefined && display?.task === undefined) return { name: null, task: null };
  let context: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(snapshotJson) as { context?: unknown };
    if (parsed.context !== null && typeof parsed.context === 'object') {
      context = parsed.context as Record<string, unknown>;
    }
  } catch {
    // A corrupt row shows no labels; loading it reports the corruption.
  }
  return {
    name: display.name === undefined ? null : textOf(context[display.name]),
    task: display.task === undefined ? null : textOf(context[display.task]),
  };
}
