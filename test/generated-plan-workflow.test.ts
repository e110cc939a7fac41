import { catalog } from '../machines/index.ts';
import { resolveChart } from '../src/commands/resolve-chart.ts';
import type { ChartDefinition } from '../src/core/chart.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';

// The same chart, samples, input and state projection `agentcharts paths plan-workflow` uses,
// so the pinned counts below are the ones the CLI prints. A chart change that
// alters them fails the pinned-counts test: review the change, then update them.
const chart = await resolveChart('plan-workflow');

// The catalog chart brings its properties (one test each) and its children's charts.
generateTransitionTests(catalog['plan-workflow'] as ChartDefinition, {
  events: chart.eventSamples,
  input: chart.input,
  ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
  describe: 'plan-workflow',
  expect: { states: 8, legal: 850, illegal: 750, paths: 110 },
});
