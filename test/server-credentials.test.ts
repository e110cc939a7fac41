/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies: their shape is what the expectations check */
/**
 * Credentials never leave the server: every credential is exercised (the read
 * token as a bearer and in `/?token=`, a one-time sign-in link, stream tickets,
 * signed requests, an approver's sign-in, MCP bearer keys, session cookies),
 * right and wrong, and none of them shows in the server's log, in an error body
 * or in /metrics. Then the small ones of the read side: logout's Origin check,
 * CORS on a ticket's stream, `--trust-proxy` with every forwarding header, and
 * inspected machines' names drawn as text. Last, `agentcharts serve` itself:
 * request lines at INFO by default, and a one-time sign-in link in its banner.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { getRuntime } from '../src/index.ts';
import { createLogger } from '../src/observe/logging.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import type { ApiKey } from '../src/server/auth.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { pausedTasks, taskActor } from './support/actors.ts';
import { approverSession, signed } from './support/principals.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const TOKEN = 'creds-token-0123456789abcdef';
const APP = 'http://localhost:5173';
const MANAGER: ApiKey = { id: 'manager', secret: 'manager-secret-0123456789ab', role: 'approver' };
const BOT: ApiKey = {
  id: 'refund-bot',
  secret: 'refund-bot-secret-0123456789',
  role: 'agent',
  actors: ['refund-*'],
};
/** A key id with a dot: it authenticates to /mcp like any other. */
const LEAD: ApiKey = { id: 'team.lead', secret: 'team-lead-secret-0123456789', role: 'approver' };

const dir = suiteTempDir('agentcharts-creds-');
let store: Store;
let server: ReturnType<typeof createServer>;
let http: ListeningServer;
let url: string;
const logText: string[] = [];

beforeAll(async () => {
  store = openStore(`sqlite:${join(dir(), 'creds.db')}`);
  await pausedTasks(store, ['refund-1', 'refund-2']);
  server = createServer({
    store,
    charts,
    keys: [MANAGER, BOT, LEAD],
    accessToken: TOKEN,
    pollMs: 0,
    cors: { origins: [APP] },
    logger: createLogger({
      level: 'debug',
      destination: { write: (s: string) => logText.push(s) },
    }),
  });
  http = await listen(server);
  url = http.url;
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await store.close();
});

describe('credentials never leave the server', () => {
  test('no token, ticket, secret, signature or session id in a log line, an error body or /metrics', async () => {
    const credentials = new Set<string>([TOKEN, MANAGER.secret, BOT.secret, LEAD.secret]);
    const errorBodies: string[] = [];
    const call = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${url}${path}`, { redirect: 'manual', ...init });
      const cookie = /agentcharts_session=([^;]+)/.exec(response.headers.get('set-cookie') ?? '');
      if (cookie?.[1]) credentials.add(cookie[1]);
      const text = response.headers.get('content-type')?.includes('event-stream')
        ? (await response.body?.cancel(), '')
        : await response.text();
      if (response.status >= 400) errorBodies.push(text);
      return { status: response.status, text };
    };
    const bearer = { authorization: `Bearer ${TOKEN}` };
    // The read token, right and wrong, as a bearer and in the dashboard link.
    expect((await call('/api/actors', { headers: bearer })).status).toBe(200);
    expect(
      (await call('/api/actors', { headers: { authorization: 'Bearer wrong-token-00000000' } }))
        .status,
    ).toBe(401);
    expect((await call(`/?token=${TOKEN}`)).status).toBe(303);
    expect((await call('/?token=wrong-token-00000000')).status).toBe(401);
    // A one-time sign-in link: once.
    const link = server.signInLink();
    credentials.add(link.slice('/?signin='.length));
    expect((await call(link)).status).toBe(303);
    expect((await call(link)).status).toBe(401);
    // Stream tickets: once each.
    const issued = await fetch(`${url}/api/stream-tickets`, { method: 'POST', headers: bearer });
    const { ticket } = (await issued.json()) as { ticket: string };
    credentials.add(ticket);
    expect((await call(`/api/stream?ticket=${ticket}`)).status).toBe(200);
    expect((await call(`/api/stream?ticket=${ticket}`)).status).toBe(401);
    // Signed requests, accepted, replayed, forged, out of scope.
    const body = JSON.stringify({ actorId: 'refund-1', event: { type: 'APPROVAL_GRANTED' } });
    const signature = signed(MANAGER, 'POST', '/api/events', body);
    const headers = { 'content-type': 'application/json', ...signature };
    credentials.add((signature['x-agentcharts-signature'] ?? '').slice('sha256='.length));
    expect((await call('/api/events', { method: 'POST', headers, body })).status).toBe(200);
    expect((await call('/api/events', { method: 'POST', headers, body })).status).toBe(401);
    const forged = { ...headers, 'x-agentcharts-signature': `sha256=${'ab'.repeat(32)}` };
    expect((await call('/api/events', { method: 'POST', headers: forged, body })).status).toBe(401);
    const other = signed(BOT, 'GET', '/api/actors/other-1');
    credentials.add((other['x-agentcharts-signature'] ?? '').slice('sha256='.length));
    expect((await call('/api/actors/other-1', { headers: other })).status).toBe(403);
    // An approver's sign-in, right and wrong.
    const signIn = (secret: string) =>
      call('/dashboard/sign-in', {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: JSON.stringify({ keyId: MANAGER.id, secret }),
      });
    expect((await signIn('not-the-secret-000000')).status).toBe(401);
    expect((await signIn(MANAGER.secret)).status).toBe(200);
    // MCP bearer keys, right (with a dot in the key id) and wrong.
    const mcp = (token: string) =>
      call('/mcp', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      });
    expect((await mcp(`team.lead.${LEAD.secret}`)).status).toBe(200);
    expect((await mcp(`team.lead.${MANAGER.secret}`)).status).toBe(401);
    expect((await mcp(`manager.${TOKEN}`)).status).toBe(401);
    const metrics = await call('/metrics', { headers: bearer });
    expect(metrics.status).toBe(200);

    const log = logText.join('');
    expect(log).toContain('--> GET /?token=… 303');
    expect(log).toContain('--> GET /api/stream?ticket=… 200');
    for (const secret of credentials) {
      expect(log, 'the log').not.toContain(secret);
      expect(errorBodies.join('\n'), 'an error body').not.toContain(secret);
      expect(metrics.text, '/metrics').not.toContain(secret);
    }
    // Nor any of the wrong guesses.
    for (const guess of ['wrong-token-00000000', 'not-the-secret-000000'])
      expect(log).not.toContain(guess);
  });

  test('one INFO line per request, each with method, path, status and time', async () => {
    const before = logText.length;
    await fetch(`${url}/healthz`);
    await fetch(`${url}/api/machines`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const lines = logText.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => typeof l['status'] === 'number');
    expect(requests.map((l) => [l['level'], l['method'], l['path'], l['status']])).toEqual([
      ['info', 'GET', '/healthz', 200],
      ['info', 'GET', '/api/machines', 200],
    ]);
  });
});

describe('the small ones of the read side', () => {
  test("POST /logout from another site's page is refused and the session lives; from its own page it ends", async () => {
    const cookie = await approverSession(url, MANAGER);
    const logout = (origin: string) =>
      fetch(`${url}/logout`, { method: 'POST', headers: { cookie, origin }, redirect: 'manual' });
    expect((await logout('https://evil.example')).status).toBe(403);
    const session = await fetch(`${url}/api/session`, { headers: { cookie } });
    expect(await session.json()).toMatchObject({ approver: 'manager' });
    expect((await logout(url)).status).toBe(303);
    expect((await fetch(`${url}/api/actors`, { headers: { cookie } })).status).toBe(401);
  });

  test("a ticket's stream carries CORS headers for an allowed origin, none for another", async () => {
    const mint = async () => {
      const issued = await fetch(`${url}/api/stream-tickets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      return ((await issued.json()) as { ticket: string }).ticket;
    };
    const allowed = await fetch(`${url}/api/stream?ticket=${await mint()}`, {
      headers: { origin: APP },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP);
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    await allowed.body?.cancel();
    const other = await fetch(`${url}/api/stream?ticket=${await mint()}`, {
      headers: { origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    await other.body?.cancel();
  });

  test('behind --trust-proxy, /inspect is loopback only when no forwarding header names a client', async () => {
    const proxied = await listen(
      createServer({
        store,
        charts,
        keys: [],
        accessToken: TOKEN,
        pollMs: 0,
        requestLogs: false,
        trustProxy: true,
      }),
    );
    try {
      const status = (headers: Record<string, string>) =>
        fetch(`${proxied.url}/inspect`, { headers }).then((r) => r.status);
      // 426: the guard let it through (it asks for the WebSocket upgrade).
      expect(await status({})).toBe(426);
      for (const header of [
        { 'x-forwarded-for': '203.0.113.5' },
        { forwarded: 'for=203.0.113.5;proto=https' },
        { 'x-real-ip': '203.0.113.5' },
      ]) {
        expect(await status(header), JSON.stringify(header)).toBe(401);
        expect(await status({ ...header, authorization: `Bearer ${TOKEN}` })).toBe(426);
      }
    } finally {
      await proxied.close();
    }
  });

  test("an inspected machine's <a href> in a state or event name is drawn as text, not a link", async () => {
    const socket = new WebSocket(http.inspectUrl!);
    await new Promise((resolve) => socket.once('open', resolve));
    const definition = JSON.stringify({
      id: 'evil',
      initial: '<a href=https://evil.example>a</a>',
      states: {
        '<a href=https://evil.example>a</a>': { on: { '<img src=x onerror=alert(1)>': 'b' } },
        b: {},
      },
    });
    socket.send(
      JSON.stringify({ type: '@xstate.actor', sessionId: 'evil:0', name: 'evil', definition }),
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    let id: string | undefined;
    while (id === undefined) {
      const list = await (await fetch(`${url}/api/inspections`, { headers: auth })).json();
      id = list.actors.find((a: any) => a.sessionId === 'evil:0')?.id as string | undefined;
      if (id === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    const detail = await (
      await fetch(`${url}/api/inspections/${encodeURIComponent(id)}`, { headers: auth })
    ).json();
    const mermaid = detail.diagram.mermaid as string;
    expect(mermaid).not.toMatch(/<a |<img /);
    expect(mermaid).toContain('#lt;a href');
    expect(mermaid).toContain('#lt;img src=x onerror=alert(1)#gt;');
    // The current state is still found and lit.
    expect(detail.diagram.active.length).toBe(1);
    socket.close();
  });
});

describe('agentcharts serve', () => {
  test('logs each request at INFO without being asked, and prints a one-time sign-in link, never the token', async () => {
    const db = join(dir(), 'serve.db');
    const seed = openStore(`sqlite:${db}`);
    await taskActor(seed, 'refund-9');
    await getRuntime(seed).close();
    await seed.close();
    const keys = join(dir(), 'keys.json');
    writeFileSync(keys, JSON.stringify({ keys: [{ ...MANAGER }] }));
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const cli = join(import.meta.dirname, '..', 'src', 'cli.ts');
    const env: NodeJS.ProcessEnv = { ...process.env, AGENTCHARTS_TOKEN: TOKEN, NO_COLOR: '1' };
    delete env['AGENTCHARTS_LOG_LEVEL'];
    const child = spawn(
      process.execPath,
      ['--import', tsx, cli, 'serve', '--db', db, '--port', '0', '--keys', keys, '--no-timers'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const link = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const found = /dashboard: (http:\/\/\S+\/\?signin=\S+)/.exec(stdout);
          if (found?.[1]) resolve(found[1]);
        });
        child.once('exit', () => reject(new Error(`serve exited: ${stderr}`)));
      });
      const opened = await fetch(link, { redirect: 'manual' });
      expect(opened.status).toBe(303);
      const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!;
      const base = new URL(link).origin;
      expect((await fetch(`${base}/api/actors/refund-9`, { headers: { cookie } })).status).toBe(
        200,
      );
      expect((await fetch(link, { redirect: 'manual' })).status).toBe(401);
      // The request lines reach stderr (pino flushes asynchronously: wait for them).
      while (!stderr.includes('/api/actors/refund-9')) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const lines = stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(
        lines.some(
          (l) => l['level'] === 'info' && l['path'] === '/?signin=…' && l['status'] === 303,
        ),
      ).toBe(true);
      expect(`${stdout}${stderr}`).not.toContain(TOKEN);
      expect(`${stdout}${stderr}`).not.toContain(MANAGER.secret);
      expect(stderr).not.toContain(new URL(link).searchParams.get('signin')!);
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
