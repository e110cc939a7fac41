import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { platform } from 'node:os';
import type { Command } from 'commander';
import { catalog } from '../../machines/index.ts';
import type { ChartDefinition } from '../core/chart.ts';
import { CHARTS_FLAGS, chartsFor, moduleCharts, type ChartsOption } from './charts-option.ts';
import { looksLikePath } from './resolve-chart.ts';
import { getRuntime } from '../durable/open.ts';
import { importOptional } from '../core/optional.ts';
import { inspectStore, type InspectorLike, type StoreInspection } from '../inspect/inspector.ts';
import { DEFAULT_SQLITE_FILE, openStore } from '../store/open.ts';
import type { Store } from '../store/types.ts';
import { CliOptionError } from './paths.ts';
import { SERVER_PACKAGES } from './serve.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

interface InspectOptions extends StoreOptions {
  port: string;
  host: string;
  open: boolean;
  connect?: string;
  actor?: string;
  limit: string;
  poll: string;
  ui: string;
}

/** The Stately inspector UI `--ui stately` embeds. */
export const STATELY_UI = 'https://stately.ai/inspect';

function integer(option: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliOptionError(option, `expected an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * The chart named on the command line: a built-in or configured chart's name or
 * machine id, or a module that exports one (`./order.ts`, as other commands take).
 */
async function chartNamed(
  machine: string,
  charts: readonly ChartDefinition[],
): Promise<ChartDefinition> {
  if (looksLikePath(machine)) {
    const [first, ...more] = await moduleCharts(machine, process.cwd());
    if (first === undefined || more.length > 0) {
      throw new CliOptionError(
        '<machine>',
        `${machine} exports several charts (${[first, ...more].map((c) => c?.machine.id).join(', ')}); name one by its machine id, with the module in --charts`,
      );
    }
    return first;
  }
  const chart =
    (Object.hasOwn(catalog, machine) ? catalog[machine as keyof typeof catalog] : undefined) ??
    charts.find((c) => c.name === machine || c.machine.id === machine);
  if (!chart) {
    const known = [...new Set(charts.map((c) => c.machine.id))].join(', ');
    throw new CliOptionError('<machine>', `unknown machine "${machine}"; known: ${known}`);
  }
  return chart;
}

/** The local inspector's store: the one named, else the default file if it exists, else memory. */
function storeFor(opts: InspectOptions, needed: boolean): { store: Store; where: string } {
  if (needed || opts.db !== undefined || opts.store !== undefined) return openExistingStore(opts);
  if (existsSync(DEFAULT_SQLITE_FILE)) return openExistingStore(opts);
  return { store: openStore('memory:'), where: 'memory: (no store: XState apps only)' };
}

/** Refuses a taken port with one line before a server that would throw on it starts. */
async function ensurePortFree(port: number, host: string | undefined): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new CliOptionError(
          '--port',
          error.code === 'EADDRINUSE'
            ? `port ${port} is taken (another server listens there); choose another with --port`
            : `port ${port} cannot be used (${error.code ?? error.message})`,
        ),
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** Whether the inspector UI answers; a clear refusal naming it otherwise. */
async function ensureReachable(url: string): Promise<void> {
  try {
    await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(5_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const reason =
      (error as { name?: string }).name === 'TimeoutError'
        ? 'no answer in 5 s'
        : (cause ?? (error instanceof Error ? error.message : String(error)));
    throw new CliOptionError(
      '--ui',
      `the inspector UI at ${url} is unreachable (${reason}); the local inspector needs no network: drop --ui`,
    );
  }
}

function openBrowser(url: string): void {
  const command =
    platform() === 'darwin' ? 'open' : platform() === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(command, [url], { detached: true, stdio: 'ignore' });
  child.on('error', () => {
    process.stdout.write(`could not open a browser (${command}); open ${url} yourself\n`);
  });
  child.unref();
}

async function untilStopped(): Promise<void> {
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/**
 * `agentcharts inspect [machine]`: the local inspector (the dashboard's inspector
 * pages, fed by any XState app and by a chart's durable actors), or with
 * `--ui stately` the Stately inspector through `@statelyai/inspect`.
 */
export function registerInspect(program: Command): void {
  storeCommand(program, 'inspect')
    .description(
      "A local inspector for any XState app (it sends with @statelyai/inspect's createWebSocketInspector) and, given a chart, the store's durable actors of it; --ui stately uses the Stately inspector instead",
    )
    .argument(
      '[machine]',
      `also show this chart's durable actors from the store: a chart's name (${Object.keys(catalog).join(', ')}, or one of your config's) or a module exporting one (./order.ts)`,
    )
    .option('--port <n>', 'port of the inspector', '8080')
    .option('--host <address>', 'address of the local inspector (keep loopback)', '127.0.0.1')
    .option('--no-open', 'do not open the inspector in a browser')
    .option(
      '--ui <local|stately|url>',
      'local: the dashboard of this package, no network needed; stately: the Stately inspector UI (online); or the URL of a Stately-compatible UI',
      'local',
    )
    .option(
      '--connect <ws-url>',
      'with --ui stately: send to an inspector WebSocket server already running instead of starting one',
    )
    .option('--actor <id>', 'only this actor')
    .option('--limit <n>', 'most existing actors to announce, most recent first', '50')
    .option('--poll <ms>', 'how often to look for new transitions', '500')
    .option(...CHARTS_FLAGS)
    .action(
      async (machine: string | undefined, opts: InspectOptions & ChartsOption): Promise<void> => {
        const charts = await chartsFor(opts);
        const chart = machine === undefined ? undefined : await chartNamed(machine, charts);
        const port = integer('--port', opts.port, 1, 65_535);
        const limit = integer('--limit', opts.limit, 1, 10_000);
        const pollMs = integer('--poll', opts.poll, 10, 3_600_000);
        const ui = opts.ui === 'local' ? undefined : opts.ui === 'stately' ? STATELY_UI : opts.ui;
        if (ui !== undefined && !/^https?:\/\//.test(ui)) {
          throw new CliOptionError('--ui', 'expected local, stately or an http(s) URL');
        }
        if (ui === undefined && opts.connect !== undefined) {
          throw new CliOptionError('--connect', 'goes with --ui stately');
        }
        if (ui !== undefined) await ensureReachable(ui);
        if (ui !== undefined && opts.connect === undefined) await ensurePortFree(port, undefined);
        const { store, where } = storeFor(opts, chart !== undefined);
        let inspection: StoreInspection | undefined;
        const follow = (inspector: InspectorLike) => {
          if (!chart) return;
          inspection = inspectStore(store, {
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
        };
        const stops: Array<() => Promise<void> | void> = [];
        try {
          if (ui === undefined) {
            const [{ createServer, listen }, { localInspector }] = await importOptional(
              () =>
                Promise.all([
                  import('../server/app.ts'),
                  import('../server/inspection-local.ts'),
                  import('@hono/node-ws'),
                ]),
              'agentcharts inspect',
              [...SERVER_PACKAGES, '@hono/node-ws'],
            );
            const token = randomBytes(24).toString('base64url');
            const server = createServer({
              store,
              charts,
              keys: [],
              accessToken: token,
              pollMs: 0,
              requestLogs: false,
            });
            const listening = await listen(server, { port, hostname: opts.host });
            stops.push(() => listening.close());
            follow(localInspector(server.inspection));
            await inspection?.ready;
            // A fresh token for this run only: the link opens a reader session.
            const page = `${listening.url}/inspector?token=${token}`;
            process.stdout.write(
              [
                `agentcharts inspect: local inspector at ${listening.url}/inspector (no network needed)`,
                `open: ${page}`,
                `XState apps send to it: createWebSocketInspector({ url: '${listening.inspectUrl ?? ''}' })`,
                chart
                  ? `${chart.name}: ${inspection?.actors.size ?? 0} durable actor(s) from ${where}, following new transitions`
                  : `store: ${where}`,
                'Ctrl-C to stop',
              ].join('\n') + '\n',
            );
            if (opts.open) openBrowser(page);
          } else {
            const { createWebSocketInspector } = await importOptional(
              () => import('@statelyai/inspect'),
              'agentcharts inspect --ui stately',
              ['@statelyai/inspect'],
            );
            let url = opts.connect;
            if (url === undefined) {
              const { createInspectorServer } = await importOptional(
                () => import('@statelyai/inspect/server'),
                'agentcharts inspect --ui stately',
                ['@statelyai/inspect'],
              );
              const server = createInspectorServer({ port, autoOpen: opts.open, url: ui });
              stops.push(() => server.stop());
              url = `ws://localhost:${port}`;
            }
            // Deferred events wait for the socket to open; keep every announced trail.
            const inspector = createWebSocketInspector({ url, maxDeferredEvents: 100_000 });
            stops.push(() => inspector.stop());
            follow(inspector);
            await inspection?.ready;
            process.stdout.write(
              [
                `agentcharts inspect: the inspector UI at ${ui} (online)`,
                opts.connect === undefined
                  ? `inspector: http://localhost:${port} (WebSocket ${url})`
                  : `sending to ${url}`,
                chart
                  ? `${chart.name}: ${inspection?.actors.size ?? 0} durable actor(s) from ${where}, following new transitions`
                  : `XState apps send to it: createWebSocketInspector({ url: '${url}' })`,
                'Ctrl-C to stop',
              ].join('\n') + '\n',
            );
          }
          await untilStopped();
        } finally {
          inspection?.stop();
          for (const stop of stops.reverse()) await stop();
          await getRuntime(store).close();
          await store.close();
        }
      },
    );
}
