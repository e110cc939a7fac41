import type { Command } from 'commander';
import { TraversalLimitError } from '../testing/explore.ts';
import {
  formatCoverage,
  formatPath,
  planTransitionTests,
  type TransitionPlan,
} from '../testing/plan.ts';
import { loadConfig } from './config-file.ts';
import { resolveChart } from './resolve-chart.ts';
import { VERSION_FLAGS, parseVersionOption } from './chart-version.ts';

export { CliOptionError } from './cli-option-error.ts';
import { CliOptionError } from './cli-option-error.ts';

export function parseInputOption(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CliOptionError('--input', 'not valid JSON');
  }
}

export function parseLimitOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    throw new CliOptionError('--limit', 'expected a positive integer');
  return n;
}

/** The plan as JSON (snapshots left out): paths with full event payloads, transitions, illegal pairs. */
export function planToJson(name: string, plan: TransitionPlan): unknown {
  return {
    machine: name,
    machineId: plan.machineId,
    coverage: plan.coverage,
    eventTypes: plan.eventTypes,
    paths: plan.states.map((s) => ({
      state: s.label,
      final: s.final,
      events: s.path.map((p) => p.event),
    })),
    transitions: plan.transitions.map((t) => ({
      from: t.fromLabel,
      event: t.step.event,
      to: t.toLabel,
    })),
    illegal: plan.illegal.map((r) => ({ state: r.fromLabel, eventType: r.eventType })),
    problems: plan.problems,
  };
}

/** Text report: coverage line, then one line per path (state label, events). */
export function formatPlan(name: string, plan: TransitionPlan): string {
  const width = Math.max(...plan.states.map((s) => s.label.length), 5);
  const lines = [formatCoverage(name, plan.coverage), '', `Paths (${plan.states.length}):`];
  for (const s of plan.states) lines.push(`  ${s.label.padEnd(width)}  ${formatPath(s.path)}`);
  return `${lines.join('\n')}\n`;
}

/** `agentcharts paths <machine | module>`: the generated test paths and their coverage. */
export function registerPaths(program: Command): void {
  program
    .command('paths')
    .description(
      'Print the shortest path to every reachable state and the coverage of the generated transition tests',
    )
    .argument(
      '<machine>',
      'a catalog name (task-lifecycle), a machine id of agentcharts.config.ts, or a path to a module exporting a machine',
    )
    .option('--export <name>', 'the module export to use when it exports several machines')
    .option(...VERSION_FLAGS)
    .option('--input <json>', 'machine input as JSON (default: the chart default input)')
    .option('--limit <steps>', 'largest number of traversal steps before giving up (default 50000)')
    .option('--json', 'print the plan as JSON, with event payloads')
    .action(
      async (
        spec: string,
        opts: {
          export?: string;
          version?: string;
          input?: string;
          limit?: string;
          json?: boolean;
        },
      ): Promise<void> => {
        const input = parseInputOption(opts.input);
        const limit = parseLimitOption(opts.limit);
        const chart = await resolveChart(spec, {
          exportName: opts.export,
          configured: (await loadConfig())?.charts,
          version: parseVersionOption(opts.version),
        });
        let plan: TransitionPlan;
        try {
          plan = planTransitionTests(chart.machine, {
            events: chart.eventSamples,
            ...(input !== undefined || chart.input !== undefined
              ? { input: input ?? chart.input }
              : {}),
            ...(chart.serializeState ? { serializeState: chart.serializeState } : {}),
            ...(limit !== undefined ? { limit } : {}),
          });
        } catch (error) {
          if (error instanceof TraversalLimitError && chart.origin === 'module') {
            process.stderr.write(
              'hint: export `serializeState(snapshot): string` from the module to project context onto a finite set, or pass --limit\n',
            );
          }
          throw error;
        }
        process.stdout.write(
          opts.json
            ? `${JSON.stringify(planToJson(chart.name, plan), null, 2)}\n`
            : formatPlan(chart.name, plan),
        );
        if (chart.derivedSamples.length > 0) {
          process.stderr.write(
            `note: no event samples for ${chart.derivedSamples.join(', ')}; used { type } alone (export eventSamples to give payloads)\n`,
          );
        }
        if (plan.problems.length > 0) {
          for (const p of plan.problems)
            process.stderr.write(`problem (${p.kind}): ${p.message}\n`);
          process.exitCode = 1;
        }
      },
    );
}
