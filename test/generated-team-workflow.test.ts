import { catalog } from '../machines/index.ts';
import { resolveChart } from '../src/commands/resolve-chart.ts';
import type { ChartDefinition } from '../src/core/chart.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';

// The same chart, samples, input and state projection `agentcharts paths team-workflow` uses,
// so the pinned counts below are the ones the CLI prints. A chart change that
// alters them fails the pinned-counts test: review the change, then update them.
const chart = await resolveChart('team-workflow');

// The catalog chart brings its properties (one test each) and its children's charts.
generateTransitionTests(catalog['team-workflow'] as ChartDefinition, {
  events: chart.eventSamples,
  input: chart.input,
  ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
  describe: 'team-workflow',
  expect: { states: 11, legal: 3590, illegal: 3420, paths: 390 },
});
