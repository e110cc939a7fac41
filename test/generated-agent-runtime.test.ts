import { catalog } from '../machines/index.ts';
import { resolveChart } from '../src/commands/resolve-chart.ts';
import type { ChartDefinition } from '../src/core/chart.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';

// The same chart, samples, input and state projection `agentcharts paths agent-runtime` uses,
// so the pinned counts below are the ones the CLI prints. A chart change that
// alters them fails the pinned-counts test: review the change, then update them.
const chart = await resolveChart('agent-runtime');

// The catalog chart brings its properties (one test each) and its children's charts.
generateTransitionTests(catalog['agent-runtime'] as ChartDefinition, {
  events: chart.eventSamples,
  input: chart.input,
  ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
  describe: 'agent-runtime',
  expect: { states: 8, legal: 92, illegal: 346, paths: 39 },
});
