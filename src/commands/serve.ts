import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { charts } from '../../machines/index.ts';
import { attachInspector } from '../inspect/inspector.ts';
import { loadKeysFile, type ApiKey } from '../server/auth.ts';
import { createServer, listen } from '../server/app.ts';
import { DEFAULT_SQLITE_FILE } from '../store/open.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, type StoreOptions } from './verify.ts';

interface ServeOptions extends StoreOptions {
  port: string;
  host: string;
  keys?: string;
  token?: string;
  dashboardApprovals: boolean;
  publicRead?: boolean;
  poll: string;
  timers: boolean;
  inspect?: string | boolean;
}

function integer(option: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliOptionError(option, `expected an integer from ${min} to ${max}`);
  }
  return n;
}

/** `agentcharts serve`: the HTTP API, approval webhook, SSE stream, metrics and dashboard. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve the store over HTTP: actors and trails, signed event and approval webhooks, an SSE stream, /metrics, /healthz and the live dashboard',
    )
    .option('--store <url>', `the store URL (default sqlite:${DEFAULT_SQLITE_FILE})`)
    .option('--db <file>', 'a SQLite file instead of --store')
    .option('--port <n>', 'port to listen on (0 = any free port)', '7878')
    .option(
      '--host <address>',
      'address to bind (keep loopback unless behind a proxy)',
      '127.0.0.1',
    )
    .option(
      '--keys <file>',
      'JSON keys file: { "keys": [{ "id", "secret" | "secretEnv", "role": "approver" | "agent", "actors"? }] }',
    )
    .option(
      '--token <token>',
      'access token for reads and the dashboard (default: $AGENTCHARTS_TOKEN, else a random one)',
    )
    .option(
      '--no-dashboard-approvals',
      'do not let approvers sign in to the dashboard to approve or deny (read-only dashboard)',
    )
    .option('--public-read', 'serve reads without a token (only behind an authenticating proxy)')
    .option('--poll <ms>', 'how often to look for transitions other processes wrote', '1000')
    .option('--no-timers', 'do not fire due durable timers from this process')
    .option(
      '--inspect [url]',
      'also send every transition to a Stately inspector WebSocket (default ws://localhost:8080)',
    )
    .action(async (opts: ServeOptions): Promise<void> => {
      const port = integer('--port', opts.port, 0, 65_535);
      const pollMs = integer('--poll', opts.poll, 0, 3_600_000);
      const keys: ApiKey[] = opts.keys !== undefined ? loadKeysFile(opts.keys) : [];
      const token =
        opts.token ?? process.env['AGENTCHARTS_TOKEN'] ?? randomBytes(24).toString('base64url');
      if (token.length < 16) throw new CliOptionError('--token', 'use at least 16 characters');
      const { store, where } = openExistingStore(opts);
      let detachInspector: (() => void) | undefined;
      try {
        const server = createServer({
          store,
          charts,
          keys,
          accessToken: token,
          publicRead: opts.publicRead === true,
          dashboard: { approvals: opts.dashboardApprovals },
          pollMs,
          fireTimers: opts.timers,
        });
        if (opts.inspect !== undefined && opts.inspect !== false) {
          const { createWebSocketInspector } = await import('@statelyai/inspect');
          const url = typeof opts.inspect === 'string' ? opts.inspect : 'ws://localhost:8080';
          const inspector = createWebSocketInspector({ url });
          const detach = attachInspector(server.runtime, inspector);
          detachInspector = () => {
            detach();
            inspector.stop();
          };
        }
        const listening = await listen(server, { port, hostname: opts.host });
        const lines = [
          `agentcharts serve: ${listening.url} (store ${where})`,
          `dashboard: ${listening.url}/?token=${encodeURIComponent(token)}`,
          keys.length === 0
            ? 'no --keys given: every write is refused (401)'
            : `${keys.length} key(s): ${keys.map((k) => `${k.id} (${k.role})`).join(', ')}`,
          opts.dashboardApprovals && keys.some((k) => k.role === 'approver')
            ? 'dashboard approvals: an approver signs in with their own key id and secret; the token only reads'
            : 'dashboard is read-only',
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await listening.close();
        await server.runtime.close();
      } finally {
        detachInspector?.();
        await store.close();
      }
    });
}
