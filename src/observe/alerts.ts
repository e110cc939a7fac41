/**
 * The six alert rules of “Agent State Machine Design” §7, as data, evaluated over
 * the store at a given time with configurable thresholds. Every rule is one or two
 * indexed store queries; none loads actors one by one.
 */
import type { Store } from '../store/types.ts';
import { classifyState } from '../core/meanings.ts';
import { EXPECTED, isStore, requireArg, requireOptions } from '../core/options.ts';

export type AlertSeverity = 'critical' | 'warning';

/** One reason an alert fires: an actor (rules 1–4) or the whole store (rules 5–6). */
export interface AlertInstance {
  rule: AlertRuleName;
  severity: AlertSeverity;
  /** Human-readable, ids and numbers only. */
  message: string;
  /** The measured value (ms in state, entries, a ratio, a count) and the threshold it passed. */
  value: number;
  threshold: number;
  actorId?: string;
  machineId?: string;
  state?: string;
  /** When the actor entered its state (time-in-state rules). */
  since?: number;
}

export interface AlertResult {
  rule: AlertRuleName;
  severity: AlertSeverity;
  firing: boolean;
  instances: AlertInstance[];
  /** More actors matched than `limit`; `instances` holds the first ones. */
  truncated: boolean;
}

/** Thresholds of each rule; the defaults are the document's numbers. */
export interface AlertThresholds {
  task_in_running_too_long: { maxMs: number; states: string[] };
  task_retry_flapping: {
    minRetries: number;
    windowMs: number;
    retryingStates: string[];
    runningStates: string[];
  };
  task_paused_abandoned: { maxMs: number; states: string[] };
  task_blocked_prolonged: { maxMs: number; states: string[] };
  too_many_failed_tasks: { maxFailedRatio: number; windowMs: number; minTasks: number };
  invalid_transition_spike: { maxPerWindow: number; windowMs: number };
}

export type AlertRuleName = keyof AlertThresholds;

export interface EvaluateContext {
  store: Store;
  now: number;
  /** Largest number of instances per rule. */
  limit: number;
}

export interface AlertRule<N extends AlertRuleName = AlertRuleName> {
  name: N;
  severity: AlertSeverity;
  /** The document's condition. */
  condition: string;
  /** The document's action. */
  action: string;
  /** The document's meaning. */
  meaning: string;
  defaults: AlertThresholds[N];
  evaluate(
    context: EvaluateContext,
    thresholds: AlertThresholds[N],
  ): Promise<{ instances: AlertInstance[]; truncated: boolean }>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function duration(ms: number): string {
  if (ms >= HOUR) return `${(ms / HOUR).toFixed(1)} h`;
  if (ms >= MINUTE) return `${(ms / MINUTE).toFixed(1)} min`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Rules 1, 3, 4: an actor has been in one of `states` for more than `maxMs`. */
function timeInStateRule<
  N extends 'task_in_running_too_long' | 'task_paused_abandoned' | 'task_blocked_prolonged',
>(
  name: N,
  severity: AlertSeverity,
  text: { condition: string; action: string; meaning: string },
  defaults: { maxMs: number; states: string[] },
): AlertRule<N> {
  return {
    name,
    severity,
    ...text,
    defaults: defaults,
    async evaluate({ store, now, limit }, t) {
      const found = await store.actorsInStates({
        states: t.states,
        // Strictly more than maxMs: entered before now − maxMs.
        enteredBefore: now - t.maxMs - 1,
        limit: limit + 1,
      });
      const instances = found
        .filter((d) => d.status === 'active')
        .slice(0, limit)
        .map((d): AlertInstance => ({
          rule: name,
          severity,
          actorId: d.actorId,
          machineId: d.machineId,
          state: d.state,
          since: d.stateSince,
          value: now - d.stateSince,
          threshold: t.maxMs,
          message: `${d.machineId} ${d.actorId}: ${d.state} for ${duration(now - d.stateSince)} (limit ${duration(t.maxMs)})`,
        }));
      return { instances, truncated: found.length > limit };
    },
  };
}

/** “Agent State Machine Design” §7, "Alerting Rules", in the document's order. */
export const ALERT_RULES: readonly [
  AlertRule<'task_in_running_too_long'>,
  AlertRule<'task_retry_flapping'>,
  AlertRule<'task_paused_abandoned'>,
  AlertRule<'task_blocked_prolonged'>,
  AlertRule<'too_many_failed_tasks'>,
  AlertRule<'invalid_transition_spike'>,
] = [
  timeInStateRule(
    'task_in_running_too_long',
    'critical',
    {
      condition: 'time_in_state(RUNNING) > 30min',
      action: 'page oncall with task_id and last checkpoint',
      meaning: 'Agent may be stuck (infinite loop, unresponsive tool call)',
    },
    { maxMs: 30 * MINUTE, states: ['running', 'Running'] },
  ),
  {
    name: 'task_retry_flapping',
    severity: 'critical',
    condition: 'retry_count >= 3 AND oscillating RETRYING ↔ RUNNING',
    action: 'escalate alert, human intervention',
    meaning: 'Backoff too short, or the dependency issue is not transient',
    defaults: {
      minRetries: 3,
      windowMs: HOUR,
      retryingStates: ['retrying'],
      runningStates: ['running', 'Running'],
    },
    async evaluate({ store, now, limit }, t) {
      const since = now - t.windowMs;
      // Entries into retrying, and returns to running in between: at least
      // minRetries − 1 of them, or the actor did not oscillate.
      const [intoRetrying, intoRunning] = await Promise.all([
        store.countStateEntries({
          toStates: t.retryingStates,
          since,
          minCount: t.minRetries,
          limit: 10_000,
        }),
        store.countStateEntries({
          toStates: t.runningStates,
          since,
          minCount: Math.max(1, t.minRetries - 1),
          limit: 10_000,
        }),
      ]);
      const returned = new Set(intoRunning.map((c) => c.actorId));
      const current = new Set([...t.retryingStates, ...t.runningStates]);
      const flapping = intoRetrying.filter(
        (c) => returned.has(c.actorId) && c.status === 'active' && current.has(c.state),
      );
      return {
        truncated: flapping.length > limit,
        instances: flapping.slice(0, limit).map((c) => ({
          rule: 'task_retry_flapping' as const,
          severity: 'critical' as const,
          actorId: c.actorId,
          machineId: c.machineId,
          state: c.state,
          value: c.count,
          threshold: t.minRetries,
          message: `${c.machineId} ${c.actorId}: ${c.count} retries in ${duration(t.windowMs)}, oscillating with running (now ${c.state})`,
        })),
      };
    },
  },
  timeInStateRule(
    'task_paused_abandoned',
    'warning',
    {
      condition: 'time_in_state(PAUSED) > 4h',
      action: 'notify approver + oncall',
      meaning: 'Approval may be forgotten — needs reminder or escalation',
    },
    { maxMs: 4 * HOUR, states: ['paused', 'Paused'] },
  ),
  timeInStateRule(
    'task_blocked_prolonged',
    'warning',
    {
      condition: 'time_in_state(BLOCKED) > 2h',
      action: 'notify oncall',
      meaning: 'Dependency service down for extended period, needs human intervention',
    },
    { maxMs: 2 * HOUR, states: ['blocked'] },
  ),
  {
    name: 'too_many_failed_tasks',
    severity: 'critical',
    condition: 'failed_count / total_tasks > 0.3 (sliding window)',
    action: 'critical alert',
    meaning: 'Systemic issue — possible dependency failure or configuration error',
    defaults: { maxFailedRatio: 0.3, windowMs: HOUR, minTasks: 10 },
    async evaluate({ store, now }, t) {
      // The window holds the actors with a transition in it (their last one is in it):
      // the ones that failed in it against every one that moved.
      const counts = await store.countActors({ updatedSince: now - t.windowMs });
      let total = 0;
      let failed = 0;
      for (const c of counts) {
        total += c.count;
        if (classifyState(c.machineId, c.state, c.status) === 'failed') failed += c.count;
      }
      const ratio = total === 0 ? 0 : failed / total;
      if (total < t.minTasks || ratio <= t.maxFailedRatio)
        return { instances: [], truncated: false };
      return {
        truncated: false,
        instances: [
          {
            rule: 'too_many_failed_tasks',
            severity: 'critical',
            value: ratio,
            threshold: t.maxFailedRatio,
            message: `${failed} of ${total} tasks active in the last ${duration(t.windowMs)} failed (${(ratio * 100).toFixed(1)}% > ${(t.maxFailedRatio * 100).toFixed(1)}%)`,
          },
        ],
      };
    },
  },
  {
    name: 'invalid_transition_spike',
    severity: 'warning',
    condition: 'invalid_transition_attempts > 10/min',
    action: 'notify oncall',
    meaning: 'Caller code bug or concurrency race causing event reordering',
    defaults: { maxPerWindow: 10, windowMs: MINUTE },
    async evaluate({ store, now }, t) {
      const count = await store.countRejections({
        since: now - t.windowMs,
        until: now + 1,
        reason: 'invalid_transition',
      });
      if (count <= t.maxPerWindow) return { instances: [], truncated: false };
      return {
        truncated: false,
        instances: [
          {
            rule: 'invalid_transition_spike',
            severity: 'warning',
            value: count,
            threshold: t.maxPerWindow,
            message: `${count} invalid transition attempts in the last ${duration(t.windowMs)} (limit ${t.maxPerWindow})`,
          },
        ],
      };
    },
  },
];

/** The document's thresholds, copied (safe to modify). */
export function defaultThresholds(): AlertThresholds {
  const out = {} as Record<AlertRuleName, unknown>;
  for (const rule of ALERT_RULES) out[rule.name] = structuredClone(rule.defaults);
  return out as AlertThresholds;
}

export type ThresholdOverrides = { [N in AlertRuleName]?: Partial<AlertThresholds[N]> };

export interface EvaluateOptions {
  /** The evaluation time (ms); default `Date.now()`. */
  now?: number | undefined;
  thresholds?: ThresholdOverrides | undefined;
  /** Only these rules (default all six). */
  rules?: readonly AlertRuleName[] | undefined;
  /** Largest number of instances per rule (default 100). */
  limit?: number | undefined;
  /** Called before each rule, for progress. */
  onRule?: ((rule: AlertRuleName, index: number, total: number) => void) | undefined;
}

/**
 * Evaluates the alert rules over the store at `now`.
 *
 * @example
 * const results = await evaluateAlerts(store, {
 *   thresholds: { task_paused_abandoned: { maxMs: 2 * 3_600_000 } },
 * });
 * for (const r of results) if (r.firing) notify(r);
 */
export async function evaluateAlerts(
  store: Store,
  options: EvaluateOptions = {},
): Promise<AlertResult[]> {
  requireArg('evaluateAlerts', 'store', isStore(store), EXPECTED.store);
  requireOptions('evaluateAlerts', options);
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 100;
  const selected = ALERT_RULES.filter(
    (r) => options.rules === undefined || options.rules.includes(r.name),
  );
  const results: AlertResult[] = [];
  for (const [index, rule] of selected.entries()) {
    options.onRule?.(rule.name, index, selected.length);
    const thresholds = { ...rule.defaults, ...(options.thresholds?.[rule.name] ?? {}) };
    const { instances, truncated } = await (rule as AlertRule).evaluate(
      { store, now, limit },
      thresholds,
    );
    results.push({
      rule: rule.name,
      severity: rule.severity,
      firing: instances.length > 0,
      instances,
      truncated,
    });
  }
  return results;
}

/**
 * Parses a `rule.key=value` override (the CLI's `--set`): durations for `…Ms`
 * keys accept `90s`, `30m`, `4h`, `1d` or plain ms; `…States` keys take a comma
 * list; the rest are numbers.
 *
 * @example
 * parseThreshold('task_paused_abandoned.maxMs=2h'); // ['task_paused_abandoned', 'maxMs', 7200000]
 */
export function parseThreshold(text: string): [AlertRuleName, string, number | string[]] {
  const match = /^([a-z_]+)\.([A-Za-z]+)=(.+)$/.exec(text);
  if (!match) throw new Error(`expected rule.key=value, e.g. task_paused_abandoned.maxMs=2h`);
  const [, ruleName = '', key = '', raw = ''] = match;
  const rule = ALERT_RULES.find((r) => r.name === ruleName);
  if (!rule) throw new Error(`unknown alert rule "${ruleName}"`);
  const current = (rule.defaults as Record<string, unknown>)[key];
  if (current === undefined) {
    throw new Error(
      `rule ${ruleName} has no threshold "${key}" (it has ${Object.keys(rule.defaults).join(', ')})`,
    );
  }
  if (Array.isArray(current)) {
    const list = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    if (list.length === 0) throw new Error(`${ruleName}.${key} needs at least one state`);
    return [rule.name, key, list];
  }
  const value = key.endsWith('Ms') ? parseDuration(raw) : Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(
      `${ruleName}.${key} must be a non-negative ${key.endsWith('Ms') ? 'duration' : 'number'}`,
    );
  }
  return [rule.name, key, value];
}

/** `250ms`, `90s`, `30m`, `4h`, `1d` or a plain number of ms; NaN when unreadable. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return Number.NaN;
  const unit = { ms: 1, s: 1000, m: MINUTE, h: HOUR, d: 24 * HOUR }[match[2] ?? 'ms'] ?? 1;
  return Math.round(Number(match[1]) * unit);
}
