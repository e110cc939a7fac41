import type { Command } from 'commander';
import { catalog } from '../../machines/index.ts';
import { CHARTS_FLAGS, chartsFor, type ChartsOption } from './charts-option.ts';
import { getRuntime } from '../durable/open.ts';
import { importOptional } from '../core/optional.ts';
import { inspectStore } from '../inspect/inspector.ts';
import { DEFAULT_SQLITE_FILE } from '../store/open.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, type StoreOptions } from './verify.ts';

interface InspectOptions extends StoreOptions {
  port: string;
  open: boolean;
  connect?: string;
  actor?: string;
  limit: string;
  poll: string;
  ui?: string;
}

function integer(option: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliOptionError(option, `expected an integer from ${min} to ${max}`);
  }
  return n;
}

/** `agentcharts inspect <machine>`: the store's actors of one chart, live in the Stately inspector. */
export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description(
      "Show a chart's durable actors (from any process writing the store) live in the Stately inspector, through @statelyai/inspect's WebSocket server",
    )
    .argument('<machine>', `a catalog name or machine id (${Object.keys(catalog).join(', ')})`)
    .option('--store <url>', `the store URL (default sqlite:${DEFAULT_SQLITE_FILE})`)
    .option('--db <file>', 'a SQLite file instead of --store')
    .option('--port <n>', 'port of the local inspector server', '8080')
    .option('--no-open', 'do not open the inspector in a browser')
    .option('--ui <url>', 'URL of the inspector UI the bridge page embeds (default stately.ai)')
    .option(
      '--connect <ws-url>',
      'send to an inspector WebSocket server already running instead of starting one',
    )
    .option('--actor <id>', 'only this actor')
    .option('--limit <n>', 'most existing actors to announce, most recent first', '50')
    .option('--poll <ms>', 'how often to look for new transitions', '500')
    .option(...CHARTS_FLAGS)
    .action(async (machine: string, opts: InspectOptions & ChartsOption): Promise<void> => {
      const charts = await chartsFor(opts);
      const chart =
        (Object.hasOwn(catalog, machine) ? catalog[machine as keyof typeof catalog] : undefined) ??
        charts.find((c) => c.name === machine || c.machine.id === machine);
      if (!chart) {
        throw new CliOptionError(
          '<machine>',
          `unknown machine "${machine}"; known: ${Object.keys(catalog).join(', ')}`,
        );
      }
      const port = integer('--port', opts.port, 1, 65_535);
      const limit = integer('--limit', opts.limit, 1, 10_000);
      const pollMs = integer('--poll', opts.poll, 10, 3_600_000);
      const { store, where } = openExistingStore(opts);
      const { createWebSocketInspector } = await importOptional(
        () => import('@statelyai/inspect'),
        'agentcharts inspect',
        ['@statelyai/inspect'],
      );
      let stopServer: (() => void) | undefined;
      let url = opts.connect;
      if (url === undefined) {
        const { createInspectorServer } = await importOptional(
          () => import('@statelyai/inspect/server'),
          'agentcharts inspect',
          ['@statelyai/inspect'],
        );
        const server = createInspectorServer({
          port,
          autoOpen: opts.open,
          ...(opts.ui !== undefined ? { url: opts.ui } : {}),
        });
        stopServer = () => server.stop();
        url = `ws://localhost:${port}`;
      }
      // Deferred events wait for the socket to open; keep every announced trail.
      const inspector = createWebSocketInspector({ url, maxDeferredEvents: 100_000 });
      const inspection = inspectStore(store, {
        chart,
        inspector,
        actorId: opts.actor,
        limit,
        pollMs,
        onError: (error) =>
          process.stderr.write(
            `agentcharts inspect: ${error instanceof Error ? error.message : String(error)}\n`,
          ),
      });
      try {
        await inspection.ready;
        process.stdout.write(
          [
            `agentcharts inspect ${chart.name}: ${inspection.actors.size} actor(s) from ${where}`,
            stopServer
              ? `inspector: http://localhost:${port} (WebSocket ${url})`
              : `sending to ${url}`,
            'following new transitions; Ctrl-C to stop',
          ].join('\n') + '\n',
        );
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
      } finally {
        inspection.stop();
        inspector.stop();
        stopServer?.();
        await getRuntime(store).close();
        await store.close();
      }
    });
}
