/**
 * 10,000+ malformed requests against the server (in process, through the same
 * Hono app `serve` runs): random methods, paths with encoded control characters,
 * bad and forged signatures, valid signatures over malformed bodies, huge and
 * deeply nested JSON, wrong content types, sessions and tokens in the wrong
 * places. None may answer 5xx, none may change an actor, and nothing may be
 * left behind (sessions, streams, rejection rows stay bounded).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { getRuntime } from '../src/index.ts';
import { createServer, type AgentchartsServer } from '../src/server/app.ts';
import { signRequest, type ApiKey } from '../src/server/auth.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { seededRandom } from '../src/testing/random.ts';
import { oneActorPerChart } from './support/actors.ts';

const TOKEN = 'fuzz-token-0123456789abcdef';
const AGENT: ApiKey = { id: 'agent', secret: 'agent-secret-0123456789abc', role: 'agent' };
const APPROVER: ApiKey = { id: 'approver', secret: 'approver-secret-01234567', role: 'approver' };
const ROUNDS = 10_000;

let dir: string;
let store: Store;
let server: AgentchartsServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-fuzz-'));
  store = openStore(`sqlite:${join(dir, 'fuzz.db')}`);
  await oneActorPerChart(store, 'fuzz');
  server = createServer({
    store,
    charts,
    keys: [AGENT, APPROVER],
    accessToken: TOKEN,
    pollMs: 0,
    maxBodyBytes: 16 * 1024,
    // The fuzzer is one key making thousands of requests a second.
    requestsPerKey: 1_000_000,
  });
}, 60_000);

afterAll(async () => {
  await server.close();
  await getRuntime(store).close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the server under 10,000 malformed requests', () => {
  test('a dashboard link with encoded CR/LF redirects safely (it answered 500 and set a cookie)', async () => {
    const response = await server.app.fetch(
      new Request(`http://127.0.0.1/actors/%0d%0aSet-Cookie:%20x=1?token=${TOKEN}`),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/actors/%0d%0aSet-Cookie:%20x=1');
    expect(response.headers.get('set-cookie')).not.toContain('x=1');
  });

  test('answers each with a 4xx or a harmless 2xx, changes no actor and leaks nothing', async () => {
    const rnd = seededRandom(2026);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const actorIds = charts.map((c) => `fuzz-${c.name}`);
    const versions = async () =>
      Object.fromEntries(
        await Promise.all(
          actorIds.map(async (id) => [id, (await store.loadActor(id))?.version] as const),
        ),
      );
    const before = await versions();

    const junkStrings = [
      '',
      ' ',
      '%0d%0aSet-Cookie:%20x=1',
      '%00',
      '..%2f..%2fetc%2fpasswd',
      '\u202e',
      'a'.repeat(5_000),
      '__proto__',
      'constructor',
      '🎉',
      '%ff%fe',
    ];
    const paths = [
      '/',
      '/api/actors',
      '/api/actors/fuzz-task-lifecycle',
      '/api/actors/fuzz-task-lifecycle/history',
      '/api/events',
      '/api/approval-callback',
      '/api/stream',
      '/api/counts',
      '/api/agents/status',
      '/metrics',
      '/dashboard/decision',
      '/dashboard/sign-in',
      '/logout',
      '/actors/x',
      '/nope',
    ];
    const jsonish = (): string => {
      switch (Math.floor(rnd() * 10)) {
        case 0:
          return '{';
        case 1:
          return '[]';
        case 2:
          return JSON.stringify({ actorId: pick(actorIds), event: { type: pick(junkStrings) } });
        case 3:
          return JSON.stringify({ actorId: pick(junkStrings), event: { type: 'START' } });
        case 4:
          return '['.repeat(5_000) + ']'.repeat(5_000);
        case 5:
          return JSON.stringify({
            actorId: pick(actorIds),
            event: { type: 'APPROVAL_GRANTED', approver: pick(junkStrings) },
          });
        case 6:
          return JSON.stringify({ task_id: pick(actorIds), decision: 'maybe', timestamp: {} });
        case 7:
          return 'x'.repeat(Math.floor(rnd() * 40_000));
        case 8:
          return JSON.stringify({ actorId: pick(actorIds), event: { type: 'TIMEOUT' } });
        default:
          return JSON.stringify({ keyId: pick(junkStrings), secret: pick(junkStrings) });
      }
    };

    const statuses = new Map<number, number>();
    for (let i = 0; i < ROUNDS; i++) {
      let path = pick(paths);
      // Mostly the route's own method, so requests get past routing into the checks.
      const natural = /^\/(api\/events|api\/approval-callback|dashboard|logout)/.test(path)
        ? 'POST'
        : 'GET';
      const method = rnd() < 0.85 ? natural : pick(['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS']);
      if (rnd() < 0.1) path = `${path}/${pick(junkStrings)}`;
      if (rnd() < 0.3)
        path = `${path}?${pick(['token', 'limit', 'state', 'after', 'lastEventId', 'userId'])}=${pick([TOKEN, ...junkStrings, '-1', '1e9'])}`;
      const body = method === 'GET' || method === 'OPTIONS' ? undefined : jsonish();
      const headers: Record<string, string> = {};
      if (rnd() < 0.7)
        headers['content-type'] = pick([
          'application/json',
          'text/plain',
          'application/json; charset=latin1',
        ]);
      if (rnd() < 0.3)
        headers['authorization'] = pick([
          `Bearer ${TOKEN}`,
          'Bearer x',
          'Basic Zm9vOmJhcg==',
          `Bearer ${TOKEN}\u0000`.slice(0, -1),
        ]);
      if (rnd() < 0.2)
        headers['origin'] = pick(['https://evil.example', 'null', 'http://localhost']);
      if (rnd() < 0.2) headers['cookie'] = `agentcharts_session=${pick(junkStrings).slice(0, 100)}`;
      const signing = rnd();
      let url: URL;
      try {
        url = new URL(`http://127.0.0.1${path}`);
      } catch {
        continue;
      }
      if (signing < 0.4 && body !== undefined) {
        // A valid signature over a malformed body (the path as the URL writes it).
        Object.assign(
          headers,
          signRequest(
            pick([AGENT, APPROVER]),
            { method, path: `${url.pathname}${url.search}`, body },
            Math.floor(Date.now() / 1000) - (i % 250),
          ),
        );
      } else if (signing < 0.6) {
        headers['x-agentcharts-key'] = pick([
          'agent',
          'approver',
          'nobody',
          ...junkStrings.slice(0, 3),
        ]);
        headers['x-agentcharts-timestamp'] = pick([
          '0',
          '99999999999999',
          'now',
          String(Math.floor(Date.now() / 1000)),
        ]);
        headers['x-agentcharts-signature'] = pick(['sha256=zz', `sha256=${'0'.repeat(64)}`, '']);
      }
      let request: Request;
      try {
        request = new Request(url, { method, headers, ...(body !== undefined ? { body } : {}) });
      } catch {
        continue; // a header the Fetch API itself refuses never reaches a server
      }
      const response = await server.app.fetch(request);
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status >= 500) {
        throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
      }
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
        await response.body?.cancel();
      } else {
        await response.arrayBuffer();
      }
    }

    // Nothing changed, nothing grew without bound.
    expect(await versions()).toEqual(before);
    expect(server.hub.size).toBe(0);
    const rejections = await store.listRejections({});
    for (const r of rejections) expect(r.eventType.length).toBeLessThanOrEqual(200);
    expect([...statuses.keys()].every((s) => s < 500)).toBe(true);
    // The requests reached every layer: refused unsigned, forbidden, invalid, not found.
    for (const code of [400, 401, 403, 404])
      expect(statuses.get(code) ?? 0, String(code)).toBeGreaterThan(0);
    console.info('fuzz statuses', Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])));
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(ROUNDS * 0.9);
  }, 300_000);
});
