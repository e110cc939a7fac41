import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { mermaidFence, toMermaid, type MermaidOptions } from '../inspect/mermaid.ts';
import { CliOptionError } from './paths.ts';
import { highlightPath, readPathEvents, replayPathEvents } from './counterexample-path.ts';
import { loadConfig } from './config-file.ts';
import { resolveChart } from './resolve-chart.ts';
import { VERSION_FLAGS, parseVersionOption } from './chart-version.ts';

const DIRECTIONS = ['TB', 'BT', 'LR', 'RL'] as const;

/**
 * `agentcharts diagram <machine | module>`: the chart as a Mermaid stateDiagram-v2,
 * or with `--svg` drawn to SVG (mermaid's ELK layout in headless Chromium, offline).
 */
export function registerDiagram(program: Command): void {
  program
    .command('diagram')
    .description('Print a machine as a Mermaid stateDiagram-v2, or draw it to SVG (--svg)')
    .argument(
      '<machine>',
      'a catalog name (task-lifecycle), a machine id of agentcharts.config.ts, or a path to a module exporting a machine',
    )
    .option('--export <name>', 'the module export to use when it exports several machines')
    .option(...VERSION_FLAGS)
    .option('--direction <dir>', 'layout direction: TB, BT, LR or RL')
    .option('--markdown', 'wrap the diagram in a ```mermaid fence')
    .option(
      '--no-timer-events',
      "label timer (after) edges with the delay only, not the chart's event names (RETRY (after retryBackoff))",
    )
    .option(
      '--svg',
      'draw the diagram to SVG, laid out by ELK (needs playwright-core, mermaid, @mermaid-js/layout-elk and Chromium)',
    )
    .option(
      '--path <file>',
      'highlight a path: a counterexample of agentcharts check --json (or a JSON array of events)',
    )
    .option('--out <file>', 'with --svg: write the SVG to this file instead of stdout')
    .option(
      '--browser <path>',
      'with --svg: the Chromium executable (default: $CHROMIUM_PATH, $PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH, /usr/bin/chromium, playwright’s own)',
    )
    .action(
      async (
        spec: string,
        opts: {
          export?: string;
          version?: string;
          direction?: string;
          markdown?: boolean;
          timerEvents?: boolean;
          svg?: boolean;
          path?: string;
          out?: string;
          browser?: string;
        },
      ): Promise<void> => {
        if (opts.svg === true && opts.markdown === true) {
          throw new CliOptionError('--markdown', 'not with --svg');
        }
        if (opts.svg !== true) {
          if (opts.out !== undefined) throw new CliOptionError('--out', 'only with --svg');
          if (opts.browser !== undefined) throw new CliOptionError('--browser', 'only with --svg');
        }
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
          version: parseVersionOption(opts.version),
        });
        let diagram = toMermaid(chart.machine, options);
        if (opts.path !== undefined) {
          const events = readPathEvents(opts.path, chart.machine.id);
          const path = replayPathEvents(chart.machine, chart.input, events);
          diagram = highlightPath(chart.machine, diagram, path);
        }
        if (opts.svg === true) {
          const { renderMermaidSvg } = await import('../inspect/render-svg.ts');
          const svg = await renderMermaidSvg(diagram, { browser: opts.browser });
          if (opts.out !== undefined) writeFileSync(opts.out, svg);
          else process.stdout.write(svg);
          return;
        }
        process.stdout.write(opts.markdown ? `${mermaidFence(diagram)}\n` : diagram);
      },
    );
}
