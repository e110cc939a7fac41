import type { Command } from 'commander';
import { mermaidFence, toMermaid, type MermaidOptions } from '../inspect/mermaid.ts';
import { CliOptionError } from './paths.ts';
import { loadConfig } from './config-file.ts';
import { resolveChart } from './resolve-chart.ts';

const DIRECTIONS = ['TB', 'BT', 'LR', 'RL'] as const;

/** `agentcharts diagram <machine | module>`: the chart as a Mermaid stateDiagram-v2. */
export function registerDiagram(program: Command): void {
  program
    .command('diagram')
    .description('Print a machine as a Mermaid stateDiagram-v2')
    .argument(
      '<machine>',
      'a catalog name (task-lifecycle), a machine id of agentcharts.config.ts, or a path to a module exporting a machine',
    )
    .option('--export <name>', 'the module export to use when it exports several machines')
    .option('--direction <dir>', 'layout direction: TB, BT, LR or RL')
    .option('--markdown', 'wrap the diagram in a ```mermaid fence')
    .option(
      '--no-timer-events',
      "label timer (after) edges with the delay only, not the chart's event names (RETRY (after retryBackoff))",
    )
    .action(
      async (
        spec: string,
        opts: { export?: string; direction?: string; markdown?: boolean; timerEvents?: boolean },
      ): Promise<void> => {
        const options: MermaidOptions = { timerEvents: opts.timerEvents !== false };
        if (opts.direction !== undefined) {
          const dir = opts.direction.toUpperCase();
          if (!(DIRECTIONS as readonly string[]).includes(dir)) {
            throw new CliOptionError('--direction', `expected one of ${DIRECTIONS.join(', ')}`);
          }
          options.direction = dir as MermaidOptions['direction'] & string;
        }
        const chart = await resolveChart(spec, {
          exportName: opts.export,
          configured: (await loadConfig())?.charts,
        });
        const diagram = toMermaid(chart.machine, options);
        process.stdout.write(opts.markdown ? `${mermaidFence(diagram)}\n` : diagram);
      },
    );
}
