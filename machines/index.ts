/**
 * The six agentcharts lifecycles. Each is a namespace with `machine`, `events`
 * (zod schemas), its types and `chart` (its catalog entry); `catalog` maps the
 * kebab-case name to the chart.
 *
 * @example
 * import { taskLifecycle, catalog } from 'agentcharts/machines';
 * const chart = catalog['task-lifecycle'];
 *
 * @module agentcharts/machines
 */
import type { ChartDefinition } from '../src/core/chart.ts';
import { chart as agentLifecycleChart } from './agent-lifecycle/index.ts';
import { chart as taskLifecycleChart } from './task-lifecycle/index.ts';
import { chart as agentRuntimeChart } from './agent-runtime/index.ts';
import { chart as agentStatusChart } from './agent-status/index.ts';
import { chart as planWorkflowChart } from './plan-workflow/index.ts';
import { chart as teamWorkflowChart } from './team-workflow/index.ts';

export * as agentLifecycle from './agent-lifecycle/index.ts';
export * as taskLifecycle from './task-lifecycle/index.ts';
export * as agentRuntime from './agent-runtime/index.ts';
export * as agentStatus from './agent-status/index.ts';
export * as planWorkflow from './plan-workflow/index.ts';
export * as teamWorkflow from './team-workflow/index.ts';

/** Catalog name → chart: machine, event samples, recovery policy, version. */
export const catalog = {
  'agent-lifecycle': agentLifecycleChart,
  'task-lifecycle': taskLifecycleChart,
  'agent-runtime': agentRuntimeChart,
  'agent-status': agentStatusChart,
  'plan-workflow': planWorkflowChart,
  'team-workflow': teamWorkflowChart,
} as const satisfies Record<string, ChartDefinition>;

export type ChartName = keyof typeof catalog;

/** Every chart, for `recover({ charts })` and `verify(store, { charts })`. */
export const charts: readonly ChartDefinition[] = Object.values(catalog) as ChartDefinition[];
