/**
 * A check as people and programs read it: text (a line per property, the
 * counterexample's events with their payloads as `agentcharts paths --json`
 * gives them) and JSON (`agentcharts check --json`, which `agentcharts diagram
 * --path` reads back).
 */
import type { EventObject } from 'xstate';
import { requireArg } from '../core/options.ts';
import type { ChartProperty } from '../core/properties.ts';
import { formatPath } from '../testing/plan.ts';
import type { ChartCheck, PropertyResult } from './check-chart.ts';
import type { CheckPath } from './paths.ts';
import type { PropertyStatus } from './verdict.ts';

/** A path as JSON: the events with payloads, their labels, the state after each. */
export interface PathJson {
  events: EventObject[];
  labels: string[];
  /** State labels: the initial state's, then the one after each event. */
  states: string[];
}

export interface PropertyJson {
  title: string;
  kind: ChartProperty['kind'];
  description: string | null;
  status: PropertyStatus;
  detail: string;
  property: ChartProperty;
  counterexample: PathJson | null;
  witness: PathJson | null;
}

/** A check as JSON: its fields as they are, its properties and children as JSON. */
export interface ChartCheckJson extends Omit<ChartCheck, 'properties' | 'children'> {
  properties: PropertyJson[];
  children: ChartCheckJson[];
}

/** How many properties of a check (children included) have each status. */
export interface CheckTotals {
  charts: number;
  properties: number;
  proven: number;
  refuted: number;
  unproven: number;
  states: number;
  transitions: number;
  ms: number;
}

export function pathJson(path: CheckPath): PathJson {
  return {
    events: path.steps.map((s) => s.event),
    labels: path.steps.map((s) => s.label),
    states: path.states,
  };
}

function propertyJson(p: PropertyResult): PropertyJson {
  return {
    title: p.title,
    kind: p.property.kind,
    description: p.description ?? null,
    status: p.status,
    detail: p.detail,
    property: p.property,
    counterexample: p.counterexample ? pathJson(p.counterexample) : null,
    witness: p.witness ? pathJson(p.witness) : null,
  };
}

const A_CHECK = 'a check (what checkChart returns)';

function isCheck(v: unknown): v is ChartCheck {
  const c = v as Partial<ChartCheck> | null;
  return (
    typeof c === 'object' && c !== null && Array.isArray(c.properties) && Array.isArray(c.children)
  );
}

export function checkToJson(check: ChartCheck): ChartCheckJson {
  requireArg('checkToJson', 'check', isCheck(check), A_CHECK);
  return {
    ...check,
    properties: check.properties.map(propertyJson),
    children: check.children.map(checkToJson),
  };
}

/** Every check of a list, children after their parent. */
export function allChecks(checks: readonly ChartCheck[]): ChartCheck[] {
  return checks.flatMap((c) => [c, ...allChecks(c.children)]);
}

export function checkTotals(checks: readonly ChartCheck[]): CheckTotals {
  const all = allChecks(checks);
  const results = all.flatMap((c) => c.properties);
  const count = (s: PropertyStatus) => results.filter((r) => r.status === s).length;
  return {
    charts: all.length,
    properties: results.length,
    proven: count('proven'),
    refuted: count('refuted'),
    unproven: count('unproven'),
    states: all.reduce((n, c) => n + c.states, 0),
    transitions: all.reduce((n, c) => n + c.transitions, 0),
    ms: all.reduce((n, c) => n + c.ms, 0),
  };
}

const STATUS_WORD: Record<PropertyStatus, string> = {
  proven: 'proven  ',
  refuted: 'REFUTED ',
  unproven: 'unproven',
};

/**
 * A counterexample (or witness) in lines: the events in one line as `paths`
 * prints a path, then each event with its payload and the state it leads to.
 */
export function formatCheckPath(path: CheckPath, indent = ''): string[] {
  const lines = [`${indent}${formatPath(path.steps)}`];
  lines.push(`${indent}  0. (initial)  → ${path.states[0] ?? ''}`);
  for (const [i, step] of path.steps.entries()) {
    const payload = step.delayed ? step.label : JSON.stringify(step.event);
    lines.push(`${indent}  ${i + 1}. ${payload}  → ${path.states[i + 1] ?? ''}`);
  }
  return lines;
}

/** One property: its status and title, what it promises, and why it failed. */
export function formatProperty(p: PropertyResult, indent = '  '): string[] {
  const pad = `${indent}          `;
  const lines = [`${indent}${STATUS_WORD[p.status]}  ${p.title}`];
  if (p.description) lines.push(`${pad}${p.description}`);
  if (p.status !== 'proven') lines.push(`${pad}${p.detail}`);
  if (p.counterexample) {
    const n = p.counterexample.steps.length;
    lines.push(`${pad}counterexample (${n} event${n === 1 ? '' : 's'}):`);
    lines.push(...formatCheckPath(p.counterexample, `${pad}  `));
  }
  return lines;
}

/** The check of one chart (and its children) as text. */
export function formatCheck(check: ChartCheck, prefix = ''): string {
  requireArg('formatCheck', 'check', isCheck(check), A_CHECK);
  requireArg('formatCheck', 'prefix', typeof prefix === 'string', 'a string');
  const name = prefix ? `${prefix} › ${check.chart}` : check.chart;
  const totals = checkTotals([{ ...check, children: [] }]);
  const verdict =
    totals.properties === 0
      ? 'no properties'
      : `${totals.proven}/${totals.properties} proven${totals.refuted ? `, ${totals.refuted} refuted` : ''}${
          totals.unproven ? `, ${totals.unproven} unproven` : ''
        }`;
  const space =
    totals.properties === 0 && check.states === 0
      ? 'not explored'
      : `${check.states} states, ${check.transitions} transitions${
          check.complete
            ? ''
            : check.states >= check.limit
              ? ` (stopped at the bound of ${check.limit})`
              : ' (some events not explored: see the notes)'
        }`;
  const lines = [`${name}: ${verdict} · ${space} · ${check.ms} ms`];
  for (const p of check.properties) lines.push(...formatProperty(p));
  for (const note of check.notes) lines.push(`  note: ${note}`);
  const children = check.children.map((c) => formatCheck(c, name));
  return [lines.join('\n'), ...children].join('\n');
}

/** The closing line of a check of several charts. */
export function formatTotals(totals: CheckTotals, wallMs: number): string {
  return (
    `${totals.charts} chart${totals.charts === 1 ? '' : 's'}, ${totals.properties} propert${totals.properties === 1 ? 'y' : 'ies'}: ` +
    `${totals.proven} proven, ${totals.refuted} refuted, ${totals.unproven} unproven · ` +
    `${totals.states} states, ${totals.transitions} transitions explored in ${wallMs} ms`
  );
}
