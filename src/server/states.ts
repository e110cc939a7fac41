/**
 * Badge colours and dashboard categories of state labels. The palette is seed
 * 000's `STATE_COLORS` (Tailwind's 500/400/600 shades, written as hex so the page
 * needs no CSS framework); states of the other charts borrow the colour of the
 * seed 000 state they correspond to.
 */

/** Seed 000 §"State Visualization": `STATE_COLORS`, Tailwind class → hex. */
export const SEED_STATE_COLORS: Readonly<Record<string, string>> = {
  idle: '#6b7280', // bg-gray-500
  initializing: '#3b82f6', // bg-blue-500
  planning: '#a855f7', // bg-purple-500
  executing: '#eab308', // bg-yellow-500
  evaluating: '#f97316', // bg-orange-500
  adapting: '#ec4899', // bg-pink-500
  waiting_input: '#06b6d4', // bg-cyan-500
  waiting_agent: '#6366f1', // bg-indigo-500
  succeeded: '#22c55e', // bg-green-500
  failed: '#ef4444', // bg-red-500
  paused: '#9ca3af', // bg-gray-400
  cancelled: '#4b5563', // bg-gray-600
};

/**
 * States of seeds 001–004 → the seed 000 state whose colour they take. Keys are
 * lower-case state keys; a dotted label is looked up from its leaf outwards.
 */
const ALIASES: Readonly<Record<string, string>> = {
  // seed 001 task lifecycle
  planned: 'idle',
  running: 'executing',
  retrying: 'adapting',
  blocked: 'waiting_agent',
  done: 'succeeded',
  // seeds 002/003 runtime and status
  starting: 'initializing',
  thinking: 'planning',
  processing: 'executing',
  brain: 'planning',
  tools: 'executing',
  completed: 'succeeded',
  terminated: 'cancelled',
  // seed 004 workflows
  awaiting_plan_approval: 'paused',
  awaiting_tasks_approval: 'paused',
  team_review: 'paused',
  creating_tasks: 'planning',
  task_creation: 'planning',
  architect_drafts: 'planning',
  architect_decomposes: 'planning',
  execution: 'executing',
  dispatch: 'executing',
  parallel_work: 'executing',
  verification: 'evaluating',
  qa_review: 'evaluating',
  cross_review: 'evaluating',
  complete: 'succeeded',
  all_complete: 'succeeded',
  approved: 'succeeded',
  verified: 'succeeded',
};

/**
 * Dashboard groups. `paused` (waiting for a human, by design) and `blocked`
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

const FALLBACK_COLOR = SEED_STATE_COLORS['idle'] as string;

/** The seed 000 state a single region's dotted label corresponds to, if any. */
function canonical(regionLabel: string): string | undefined {
  const segments = regionLabel.split('.').reverse();
  for (const segment of segments) {
    const key = segment.toLowerCase();
    if (key in SEED_STATE_COLORS) return key;
    const alias = ALIASES[key];
    if (alias) return alias;
  }
  return undefined;
}

function categoryOf(seedState: string | undefined): StateCategory {
  switch (seedState) {
    case 'paused':
      return 'paused';
    case 'waiting_agent':
    case 'waiting_input':
      return 'blocked';
    case 'succeeded':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    case 'idle':
    case undefined:
      return 'idle';
    default:
      return 'working';
  }
}

/**
 * Colour and category of a state label (`paused`, `active.executing`,
 * `EXECUTION.Blocked`, parallel `a,b`). For parallel labels a paused region wins,
 * then a blocked one, so a waiting actor is never shown as working.
 *
 * @example
 * stateStyle('paused'); // { color: '#9ca3af', category: 'paused' }
 */
export function stateStyle(label: string): { color: string; category: StateCategory } {
  const regions = label.split(',').map((r) => canonical(r.trim()));
  const pick =
    regions.find((r) => r === 'paused') ??
    regions.find((r) => r === 'waiting_agent' || r === 'waiting_input') ??
    regions[0];
  return {
    color: (pick !== undefined ? SEED_STATE_COLORS[pick] : undefined) ?? FALLBACK_COLOR,
    category: categoryOf(pick),
  };
}
