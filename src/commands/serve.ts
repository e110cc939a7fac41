import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { checkStoredVersions } from './stored-versions.ts';
import { CHARTS_FLAGS, chartsFor, type ChartsOption } from './charts-option.ts';
import { attachInspector } from '../inspect/inspector.ts';
import { createLogger } from '../observe/logging.ts';
import { loadKeysFile, type ApiKey } from '../server/auth.ts';
import { importOptional } from '../core/optional.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

/** The optional packages the server needs. */
export const SERVER_PACKAGES = ['hono', '@hono/node-server', 'prom-client'] as const;

interface ServeOptions extends StoreOptions {
  port: string;
  host: string;
  keys?: string;
  token?: string;
  tokenFile?: string;
  allowedHost?: string[];
  trustProxy?: boolean;
  dashboardApprovals: boolean;
  publicRead?: boolean;
  poll: string;
  timers: boolean;
  inspect?: string | boolean;
  corsOrigin?: string[];
}

function integer(option: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliOptionError(option, `expected an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * The read token: `--token-file`, `--token`, `$AGENTCHARTS_TOKEN`, or a random one
 * written (mode 0600) next to a SQLite store, and where it came from.
 */
function readToken(opts: ServeOptions, where: string): { token: string; from: string } {
  let token: string;
  let from: string;
  if (opts.tokenFile !== undefined) {
    try {
      token = readFileSync(opts.tokenFile, 'utf8').trim();
    } catch {
      throw new CliOptionError('--token-file', `cannot read ${opts.tokenFile}`);
    }
    from = `token in ${opts.tokenFile}`;
  } else if (opts.token !== undefined) {
    token = opts.token;
    from = 'token from --token';
  } else if (process.env['AGENTCHARTS_TOKEN'] !== undefined) {
    token = process.env['AGENTCHARTS_TOKEN'];
    from = 'token from $AGENTCHARTS_TOKEN';
  } else {
    token = randomBytes(24).toString('base64url');
    const file = where.startsWith('sqlite:') ? `${where.slice('sqlite:'.length)}.token` : undefined;
    if (file !== undefined && !file.includes(':memory:')) {
      writeFileSync(file, `${token}\n`, { mode: 0o600 });
      from = `token written to ${file}`;
    } else {
      from = 'random token: set $AGENTCHARTS_TOKEN or --token-file to know it';
    }
  }
  if (token.length < 16) throw new CliOptionError('--token', 'use at least 16 characters');
  return { token, from };
}

/** The `--cors-origin` values as origins (`https://app.example.com`), each checked. */
function corsOrigins(values: readonly string[]): string[] {
  return values.map((value) => {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== value.replace(/\/$/, '')) {
      throw new CliOptionError(
        '--cors-origin',
        `expected an origin like https://app.example.com, got "${value}"`,
      );
    }
    return url.origin;
  });
}

/** `agentcharts serve`: the HTTP API, approval webhook, SSE stream, metrics and dashboard. */
export function registerServe(program: Command): void {
  storeCommand(program, 'serve')
    .description(
      'Serve the store over HTTP: actors and trails, signed event and approval webhooks, an SSE stream, /metrics, /healthz and the live dashboard',
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', '7878')
    .option(
      '--host <address>',
      'address to bind (keep loopback unless behind a proxy)',
      '127.0.0.1',
    )
    .option(
      '--keys <file>',
      'JSON keys file: { "keys": [{ "id", "secret" | "secretEnv", "role": "agent" | "approver" | "leader" | "operator" | a role a chart names, "actors"? }] }',
    )
    .option(
      '--token-file <file>',
      'read the access token for reads and the dashboard from this file (default: $AGENTCHARTS_TOKEN, else a random one written to <db>.token)',
    )
    .option('--token <token>', 'the access token itself (it then sits in argv and shell history)')
    .option(
      '--allowed-host <name...>',
      'host names to answer for besides loopback (a leading . allows subdomains); others get 421',
    )
    .option(
      '--cors-origin <origin...>',
      'browser apps of these exact origins may read cross-origin (credentials: the cookie or a stream ticket)',
    )
    .option('--trust-proxy', 'behind a TLS proxy: trust X-Forwarded-Proto/Host (Secure cookies)')
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
    .option(...CHARTS_FLAGS)
    .action(async (opts: ServeOptions & ChartsOption): Promise<void> => {
      const charts = await chartsFor(opts);
      const port = integer('--port', opts.port, 0, 65_535);
      const pollMs = integer('--poll', opts.poll, 0, 3_600_000);
      const keys: ApiKey[] = opts.keys !== undefined ? loadKeysFile(opts.keys) : [];
      const { store, where } = openExistingStore(opts);
      const { token, from } = readToken(opts, where);
      let detachInspector: (() => void) | undefined;
      try {
        await checkStoredVersions(store, charts);
        const { createServer, listen } = await importOptional(
          () => import('../server/app.ts'),
          'agentcharts serve',
          SERVER_PACKAGES,
        );
        const server = createServer({
          store,
          charts,
          keys,
          // One JSON line per request on stderr at INFO (AGENTCHARTS_LOG_LEVEL to change), no credential in it.
          logger: createLogger(),
          accessToken: token,
          publicRead: opts.publicRead === true,
          allowedHosts: opts.allowedHost ?? [],
          trustProxy: opts.trustProxy === true,
          cors: { origins: corsOrigins(opts.corsOrigin ?? []) },
          dashboard: { approvals: opts.dashboardApprovals },
          pollMs,
          fireTimers: opts.timers,
        });
        if (opts.inspect !== undefined && opts.inspect !== false) {
          const { createWebSocketInspector } = await importOptional(
            () => import('@statelyai/inspect'),
            'agentcharts serve --inspect',
            ['@statelyai/inspect'],
          );
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
          // A one-time link, not the token: the token is in argv, the environment or a file,
          // and this line may end up in a terminal's scrollback or a service's journal.
          `dashboard: ${listening.url}${server.signInLink()} (a one-time sign-in link, 15 minutes)`,
          `read token: ${from}; ${listening.url}/?token=<token> opens a session too`,
          keys.length === 0
            ? 'no --keys given: every write is refused (401)'
            : `${keys.length} key(s): ${keys.map((k) => `${k.id} (${k.role})`).join(', ')}`,
          opts.dashboardApprovals && keys.some((k) => k.role === 'approver')
            ? 'dashboard approvals: an approver signs in with their own key id and secret; the token only reads'
            : 'dashboard is read-only',
          listening.inspectUrl !== undefined
            ? `inspector: ${listening.url}/inspector; XState apps send to ${listening.inspectUrl} (loopback, or with a read credential)`
            : 'inspector: the inspection socket is off (npm install @hono/node-ws to inspect XState apps)',
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
