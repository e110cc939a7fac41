/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies and inspection events: their shape is what the expectations check */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catalog, charts } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { streamMessageSchema } from '../src/observe/stream.ts';
import { ConcurrencyError, StoreError } from '../src/core/errors.ts';
import {
  KEY_HEADER,
  KeyQuota,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  signRequest,
  type ApiKey,
} from '../src/server/auth.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import { SseHub } from '../src/server/sse.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { readSse } from './support/sse.ts';

const task = catalog['task-lifecycle'];
const status = catalog['agent-status'];

const APPROVER: ApiKey = { id: 'manager', secret: 'approver-secret-0123456789', role: 'approver' };
const AGENT: ApiKey = {
  id: 'refund-bot',
  secret: 'agent-secret-0123456789abcd',
  role: 'agent',
  actors: ['refund-*'],
};
/** An agent key without an actor list (any actor), for the agent-status actors. */
const AGENT_ALL: ApiKey = { id: 'status-bot', secret: 'status-secret-0123456789ab', role: 'agent' };
const DASHBOARD: ApiKey = {
  id: 'dashboard',
  secret: 'dashboard-secret-0123456789',
  role: 'approver',
};
const TOKEN = 'read-token-0123456789abcdef';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let dir: string;
let file: string;
let store: Store;
let other: Store;
let http: ListeningServer;

async function makeTask(id: string, path: readonly Record<string, unknown>[]): Promise<void> {
  const actor = await createDurableActor(task.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: task.events,
  });
  for (const event of path) await actor.send(event as never);
}

const pause = () => ({
  type: 'PAUSE_FOR_APPROVAL',
  reason: 'refund_approval',
  requestedAt: Date.now(),
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-server-'));
  file = join(dir, 'server.db');
  store = openStore(`sqlite:${file}`);
  await makeTask('refund-paused', [{ type: 'START' }, pause()]);
  await makeTask('refund-approve', [{ type: 'START' }, pause()]);
  await makeTask('refund-deny', [{ type: 'START' }, pause()]);
  await makeTask('refund-dash', [{ type: 'START' }, pause()]);
  await makeTask('refund-running', [{ type: 'START' }]);
  await makeTask('refund-blocked', [
    { type: 'START' },
    { type: 'BLOCK_ON_DEPENDENCY', dependency: 'payment-gateway' },
  ]);
  await makeTask('other-task', [{ type: 'START' }, pause()]);
  await makeTask('refund-done', [{ type: 'START' }, { type: 'COMPLETE' }]);
  for (const id of ['agent-a', 'agent-b', 'agent-c']) {
    await createDurableActor(status.machine, {
      id,
      store,
      input: { agentId: id, name: id, task: 'summarise', modelBackend: 'test', createdAt: 0 },
      schemas: status.events,
    });
  }
  const server = createServer({
    store,
    charts,
    keys: [APPROVER, AGENT, AGENT_ALL, DASHBOARD],
    accessToken: TOKEN,
    dashboard: { approvals: true },
    pollMs: 50,
    maxBodyBytes: 4096,
  });
  http = await listen(server);
  // A second handle on the same file stands for another process writing the store.
  other = openStore(`sqlite:${file}`);
  getRuntime(other, { charts });
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await getRuntime(other).close();
  await store.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

async function get(path: string, headers: Record<string, string> = AUTH) {
  const response = await fetch(`${http.url}${path}`, { headers });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function post(
  path: string,
  body: unknown,
  key: Pick<ApiKey, 'id' | 'secret'> | undefined,
  options: { at?: number; headers?: Record<string, string>; raw?: string } = {},
) {
  const text = options.raw ?? JSON.stringify(body);
  const signature = key ? signRequest(key, { method: 'POST', path, body: text }, options.at) : {};
  const response = await fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signature, ...options.headers },
    body: text,
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const now = () => Math.floor(Date.now() / 1000);

/** Reads an SSE response frame by frame. */
const readStream = (response: Response) => readSse<any>(response);

describe('reading actors', () => {
  test('lists actors with state, colour and category, filtered by machine and state', async () => {
    const all = await get('/api/actors?limit=100');
    expect(all.status).toBe(200);
    expect(all.body.actors).toHaveLength(11);

    const paused = await get('/api/actors?machine=task-lifecycle&state=paused&limit=100');
    const ids = paused.body.actors.map((a: { id: string }) => a.id);
    expect(ids).toEqual(expect.arrayContaining(['refund-paused', 'other-task']));
    for (const a of paused.body.actors) {
      expect(a).toMatchObject({ machineId: 'task-lifecycle', state: 'paused', category: 'paused' });
      expect(a.color).toBe('#9ca3af'); // seed 000: paused is bg-gray-400
    }
    const agents = await get('/api/actors?machine=agent-status');
    expect(agents.body.actors.map((a: { id: string }) => a.id)).toEqual([
      'agent-a',
      'agent-b',
      'agent-c',
    ]);
    expect(agents.body.actors[0].color).toBe('#6b7280'); // idle is bg-gray-500
  });

  test('pages through every actor exactly once with the cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await get(`/api/actors?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.body.actors.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.actors.map((a: { id: string }) => a.id));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 20);
    expect(seen).toHaveLength(11);
    expect(new Set(seen).size).toBe(11);
    expect(seen).toEqual([...seen].sort());
  });

  test('refuses a malformed query with 400 naming the parameter', async () => {
    const zero = await get('/api/actors?limit=0');
    expect(zero.status).toBe(400);
    expect(zero.body).toMatchObject({ error: 'invalid_query', field: 'limit' });
    const unknown = await get('/api/actors?colour=red');
    expect(unknown.status).toBe(400);
    expect(unknown.body.field).toBe('colour');
  });

  test('counts actors per state, with paused and blocked apart', async () => {
    const counts = await get('/api/counts?machine=task-lifecycle');
    expect(counts.status).toBe(200);
    const states = Object.fromEntries(
      counts.body.states.map((s: { state: string; count: number }) => [s.state, s.count]),
    );
    expect(states['blocked']).toBe(1);
    expect(states['paused']).toBeGreaterThanOrEqual(1);
    expect(counts.body.categories.blocked).toBe(states['blocked']);
    expect(counts.body.categories.paused).toBe(states['paused']);
    expect(counts.body.total).toBe(8);
  });

  test('returns one actor with its trail, its chart with the current state marked, and the events it accepts', async () => {
    const { status: code, body } = await get('/api/actors/refund-paused');
    expect(code).toBe(200);
    expect(body.actor).toMatchObject({ id: 'refund-paused', state: 'paused', version: 3 });
    expect(body.trail.map((t: { eventType: string }) => t.eventType)).toEqual([
      'xstate.init',
      'START',
      'PAUSE_FOR_APPROVAL',
    ]);
    expect(body.trail[2]).toMatchObject({ from: 'running', to: 'paused', source: 'send' });
    expect(body.diagram.active).toEqual(['paused']);
    expect(body.diagram.mermaid).toContain('class paused current');
    expect(body.accepts).toEqual(['APPROVAL_DENIED', 'APPROVAL_GRANTED', 'TIMEOUT']);
    expect(body.awaitingApproval).toBe(true);
    expect(body.context.approval.status).toBe('pending');

    const missing = await get('/api/actors/no-such-actor');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'actor_not_found', actorId: 'no-such-actor' });
  });

  test("pages through an actor's trail; the actor page carries only its last page", async () => {
    const first = await get('/api/actors/refund-paused/history?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.trail.map((r: { seq: number }) => r.seq)).toEqual([1, 2]);
    expect(first.body).toMatchObject({ next: 2, total: 3 });
    const rest = await get('/api/actors/refund-paused/history?after=2&limit=2');
    expect(rest.body.trail.map((r: { seq: number }) => r.seq)).toEqual([3]);
    expect(rest.body.next).toBeNull();
    expect((await get('/api/actors/refund-paused/history?limit=9999')).status).toBe(400);
    expect((await get('/api/actors/nobody/history')).status).toBe(404);
    const page = await get('/api/actors/refund-paused');
    expect(page.body.trailTotal).toBe(3);
  });

  test('refuses reads without a token, a session or a valid signature', async () => {
    expect((await get('/api/actors', {})).status).toBe(401);
    expect((await get('/api/actors', { authorization: 'Bearer wrong-token' })).status).toBe(401);
    expect((await get('/metrics', {})).status).toBe(401);
    const signed = await get(
      '/api/actors?limit=1',
      signRequest(AGENT, { method: 'GET', path: '/api/actors?limit=1' }),
    );
    expect(signed.status).toBe(200);
    const health = await get('/healthz', {});
    expect(health).toMatchObject({ status: 200, body: { ok: true, store: 'sqlite' } });
  });
});

describe('reads by a key limited to some actors', () => {
  // Each signed read needs its own signature (a replayed one is refused): vary the second.
  let second = 0;
  const asAgent = (path: string) =>
    get(path, signRequest(AGENT, { method: 'GET', path }, now() - ++second));

  test('see only their actors, and nothing that spans the whole store', async () => {
    expect((await asAgent('/api/actors/refund-paused')).status).toBe(200);
    const other = await asAgent('/api/actors/other-task');
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({
      reason: 'actor_not_allowed_for_key',
      actorId: 'other-task',
    });
    const list = await asAgent('/api/actors?limit=100');
    expect(list.status).toBe(200);
    const ids = list.body.actors.map((a: { id: string }) => a.id);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.every((id: string) => id.startsWith('refund-'))).toBe(true);
    for (const path of ['/metrics', '/api/agents/status?userId=u']) {
      const res = await asAgent(path);
      expect(res.status, path).toBe(403);
      expect(res.body, path).toMatchObject({ reason: 'scope_too_narrow' });
    }
    // Counts are cut to the key's scope (test/server-scope.test.ts covers every read route).
    const counts = await asAgent('/api/counts');
    expect(counts.status).toBe(200);
    expect(counts.body.total).toBe(ids.length);
    // An unscoped key still reads everything.
    expect(
      (
        await get(
          '/api/actors/other-task',
          signRequest(AGENT_ALL, { method: 'GET', path: '/api/actors/other-task' }, now() - 99),
        )
      ).status,
    ).toBe(200);
  });
});

describe("seed 000's status API", () => {
  const lifecycle = catalog['agent-lifecycle'];
  async function agent(id: string, userId: string, events: readonly Record<string, unknown>[]) {
    const actor = await createDurableActor(lifecycle.machine, {
      id,
      store,
      userId,
      input: { agent_name: 'interviewer', user_id: userId },
      schemas: lifecycle.events,
    });
    for (const event of events) await actor.send(event as never);
  }
  const start = { type: 'START', payload: { task_id: 'T-1', extra: { ticket: 9 } } };
  const init = { type: 'INIT_COMPLETE', payload: { context_loaded: true } };
  const plan = { type: 'PLAN_COMPLETE', payload: { plan_id: 'P-1', steps: 2 } };

  test('GET /api/agents/status?userId= lists the active agents as { name, state, task, metadata }', async () => {
    await agent('life-exec', 'user_2x', [start, init, plan]);
    await agent('life-idle', 'user_2x', []);
    await agent('life-paused', 'user_2x', [start, { type: 'PAUSE', payload: { reason: 'x' } }]);
    await agent('life-other', 'user_3y', [start]);
    const { status: code, body } = await get('/api/agents/status?userId=user_2x');
    expect(code).toBe(200);
    // Idle and paused are not among the seven active states; the state is the flat name.
    expect(body).toEqual({
      agents: [
        {
          name: 'interviewer',
          state: 'executing',
          task: 'T-1',
          metadata: { task_id: 'T-1', plan_id: 'P-1', iteration: 0, extra: { ticket: 9 } },
        },
      ],
    });
    expect((await get('/api/agents/status')).status).toBe(400);
    expect((await get('/api/agents/status?userId=user_2x', {})).status).toBe(401);
  });

  test('the generic list filters by userId and by the document name or the full path', async () => {
    const byName = await get('/api/actors?userId=user_2x&state=executing');
    const byPath = await get('/api/actors?userId=user_2x&state=active.executing');
    expect(byName.body.actors.map((a: { id: string }) => a.id)).toEqual(['life-exec']);
    expect(byPath.body.actors).toEqual(byName.body.actors);
    expect(byName.body.actors[0]).toMatchObject({
      state: 'active.executing',
      stateName: 'executing',
      class: 'working',
      color: '#eab308',
      // The card's labels, from the chart's meta.display.
      name: 'interviewer',
      task: 'T-1',
    });
    const mine = await get('/api/actors?userId=user_3y');
    expect(mine.body.actors.map((a: { id: string }) => a.id)).toEqual(['life-other']);
  });
});

describe('the signed approval webhook (seed 001)', () => {
  test('an approver key moves a paused task to running and the trail records who', async () => {
    const res = await post(
      '/api/approval-callback',
      {
        task_id: 'refund-approve',
        decision: 'approved',
        approver: 'manager',
        comment: 'ok',
        timestamp: new Date().toISOString(),
      },
      APPROVER,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, state: 'running', eventType: 'APPROVAL_GRANTED' });
    const trail = (await get('/api/actors/refund-approve')).body.trail;
    expect(trail.at(-1)).toMatchObject({
      eventType: 'APPROVAL_GRANTED',
      keyId: 'manager',
      event: { type: 'APPROVAL_GRANTED', approver: 'manager', comment: 'ok' },
    });
  });

  test('the approver is the signing key: a body naming someone else gets 403, none is filled in', async () => {
    const other = await post(
      '/api/approval-callback',
      {
        task_id: 'refund-paused',
        decision: 'approved',
        approver: 'the-cfo',
        timestamp: new Date().toISOString(),
      },
      APPROVER,
    );
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ reason: 'identity_mismatch', field: 'approver' });
    expect((await get('/api/actors/refund-paused')).body.actor.state).toBe('paused');
  });

  test('a denial moves the task to failed', async () => {
    const res = await post(
      '/api/approval-callback',
      { task_id: 'refund-deny', decision: 'denied', approver: 'manager', timestamp: 1_780_000_000 },
      APPROVER,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'failed', status: 'done' });
  });

  test('a bad signature gets 401 and changes nothing', async () => {
    const body = {
      task_id: 'refund-paused',
      decision: 'approved',
      approver: 'mallory',
      timestamp: 'now',
    };
    const wrongSecret = await post('/api/approval-callback', body, {
      id: APPROVER.id,
      secret: 'not-the-right-secret-000',
    });
    expect(wrongSecret).toMatchObject({ status: 401, body: { error: 'invalid_signature' } });
    const unknownKey = await post('/api/approval-callback', body, {
      id: 'nobody',
      secret: APPROVER.secret,
    });
    expect(unknownKey.body.error).toBe('invalid_signature');
    // Signed for one body, sent with another.
    const headers = signRequest(APPROVER, {
      method: 'POST',
      path: '/api/approval-callback',
      body: JSON.stringify(body),
    });
    const tampered = await post(
      '/api/approval-callback',
      { ...body, approver: 'someone else' },
      undefined,
      { headers },
    );
    expect(tampered.status).toBe(401);
    const unsigned = await post('/api/approval-callback', body, undefined);
    expect(unsigned).toMatchObject({ status: 401, body: { error: 'missing_signature' } });
    const malformed = await post('/api/approval-callback', body, undefined, {
      headers: {
        [KEY_HEADER]: APPROVER.id,
        [TIMESTAMP_HEADER]: String(now()),
        [SIGNATURE_HEADER]: 'sha256=zz',
      },
    });
    expect(malformed.status).toBe(401);
    expect((await get('/api/actors/refund-paused')).body.actor.state).toBe('paused');
  });

  test('a request signed more than 5 minutes ago (or ahead) is refused', async () => {
    const body = {
      task_id: 'refund-paused',
      decision: 'approved',
      approver: 'manager',
      timestamp: 'now',
    };
    const stale = await post('/api/approval-callback', body, APPROVER, { at: now() - 301 });
    expect(stale).toMatchObject({ status: 401, body: { error: 'stale_request' } });
    const future = await post('/api/approval-callback', body, APPROVER, { at: now() + 301 });
    expect(future.body.error).toBe('stale_request');
    expect((await get('/api/actors/refund-paused')).body.actor.state).toBe('paused');
  });

  test('a replayed request is refused and the event is not applied twice', async () => {
    const text = JSON.stringify({
      actorId: 'agent-a',
      event: { type: 'OUTPUT', stream: 'stdout', content: 'hello', at: 1 },
    });
    const headers = signRequest(AGENT_ALL, { method: 'POST', path: '/api/events', body: text });
    const first = await post('/api/events', undefined, undefined, { raw: text, headers });
    expect(first.status).toBe(200);
    const before = (await get('/api/actors/agent-a')).body.actor.version;
    const again = await post('/api/events', undefined, undefined, { raw: text, headers });
    expect(again).toMatchObject({ status: 401, body: { error: 'replayed_request' } });
    expect((await get('/api/actors/agent-a')).body.actor.version).toBe(before);
  });

  test('a signature covers method and path: moved to another route it is refused', async () => {
    const text = JSON.stringify({
      actorId: 'agent-b',
      event: { type: 'OUTPUT', stream: 'stdout', content: 'moved', at: 1 },
    });
    const headers = signRequest(AGENT_ALL, {
      method: 'POST',
      path: '/api/approval-callback',
      body: text,
    });
    const moved = await post('/api/events', undefined, undefined, { raw: text, headers });
    expect(moved).toMatchObject({ status: 401, body: { error: 'invalid_signature' } });
  });

  test('a captured request stays refused after the server restarts (nonces live in the store)', async () => {
    const text = JSON.stringify({
      actorId: 'agent-c',
      event: { type: 'OUTPUT', stream: 'stdout', content: 'once', at: 1 },
    });
    const headers = signRequest(AGENT_ALL, { method: 'POST', path: '/api/events', body: text });
    const send = (base: string) =>
      fetch(`${base}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: text,
      });
    const restartFile = join(dir, 'restart.db');
    const open = () => {
      const s = openStore(`sqlite:${restartFile}`);
      return { s, server: createServer({ store: s, charts, keys: [AGENT_ALL], pollMs: 0 }) };
    };
    const first = open();
    await createDurableActor(status.machine, {
      id: 'agent-c',
      store: first.s,
      input: { agentId: 'agent-c', name: 'c', task: 't', modelBackend: 'test', createdAt: 0 },
      schemas: status.events,
    });
    let listening = await listen(first.server);
    expect((await send(listening.url)).status).toBe(200);
    await listening.close();
    await first.server.close();
    await getRuntime(first.s).close();
    await first.s.close();

    const second = open();
    listening = await listen(second.server);
    try {
      const again = await send(listening.url);
      expect(again.status).toBe(401);
      expect(await again.json()).toMatchObject({ error: 'replayed_request' });
      expect((await second.s.history('agent-c')).length).toBe(2);
    } finally {
      await listening.close();
      await second.server.close();
      await getRuntime(second.s).close();
      await second.s.close();
    }
  });

  test('an illegal transition gets 409 naming the state, and nothing is written', async () => {
    const before = (await get('/api/actors/refund-running')).body.actor.version;
    const res = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'START' } },
      AGENT,
    );
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      error: 'invalid_transition',
      state: 'running',
      eventType: 'START',
    });
    const approveRunning = await post(
      '/api/approval-callback',
      { task_id: 'refund-running', decision: 'approved', approver: 'manager', timestamp: 'now' },
      APPROVER,
    );
    expect(approveRunning.body).toMatchObject({ error: 'invalid_transition', state: 'running' });
    expect((await get('/api/actors/refund-running')).body.actor.version).toBe(before);
  });

  test('a bad payload gets 400 naming the field, never echoing the value', async () => {
    const secret = 'SECRET-PAYLOAD-VALUE';
    const extra = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'COMPLETE', note: secret } },
      AGENT,
    );
    expect(extra.status).toBe(400);
    expect(extra.body).toMatchObject({
      error: 'invalid_event',
      field: 'event.note',
      reason: 'unexpected_field',
    });
    expect(JSON.stringify(extra.body)).not.toContain(secret);
    expect(extra.body).not.toHaveProperty('more');

    // Several problems: the first as field and reason, the others under `more`.
    const several = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'TRANSIENT_ERROR', note: secret } },
      AGENT,
    );
    expect(several).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_event',
        field: 'event.error',
        reason: 'missing_field',
        more: [{ field: 'event.note', reason: 'unexpected_field' }],
      },
    });
    expect(JSON.stringify(several.body)).not.toContain(secret);

    const missing = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'TRANSIENT_ERROR' } },
      AGENT,
    );
    expect(missing.body).toMatchObject({ field: 'event.error', reason: 'missing_field' });

    const wrongType = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'FATAL_ERROR', error: 42 } },
      AGENT,
    );
    expect(wrongType.body).toMatchObject({ field: 'event.error' });

    const approval = await post(
      '/api/approval-callback',
      { task_id: 'refund-paused', decision: 'maybe', approver: secret, timestamp: 'now' },
      APPROVER,
    );
    expect(approval).toMatchObject({ status: 400, body: { field: 'decision' } });
    expect(JSON.stringify(approval.body)).not.toContain(secret);

    const notJson = await post('/api/events', undefined, AGENT, { raw: '{"actorId":' });
    expect(notJson).toMatchObject({ status: 400, body: { reason: 'invalid_json' } });

    const big = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'COMPLETE', result: 'x'.repeat(5000) } },
      AGENT,
    );
    expect(big.status).toBe(413);
    expect((await get('/api/actors/refund-running')).body.actor.state).toBe('running');
  });

  test('an unknown actor gets 404', async () => {
    const res = await post(
      '/api/events',
      { actorId: 'refund-ghost', event: { type: 'START' } },
      AGENT,
    );
    expect(res).toMatchObject({ status: 404, body: { error: 'actor_not_found' } });
  });
});

describe('authorization by source', () => {
  test('an agent key never sends APPROVAL_GRANTED or APPROVAL_DENIED (403), by either route', async () => {
    for (const type of ['APPROVAL_GRANTED', 'APPROVAL_DENIED']) {
      const res = await post(
        '/api/events',
        { actorId: 'refund-paused', event: { type, approver: 'llm' } },
        AGENT,
      );
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        error: 'forbidden',
        reason: 'approval_requires_approver_key',
        eventType: type,
      });
    }
    const webhook = await post(
      '/api/approval-callback',
      { task_id: 'refund-paused', decision: 'approved', approver: 'llm', timestamp: 'now' },
      AGENT,
    );
    expect(webhook.status).toBe(403);
    expect((await get('/api/actors/refund-paused')).body.actor.state).toBe('paused');
  });

  test("no key sends a timer's event, whatever its role: the chart marks it timer-only", async () => {
    for (const key of [AGENT, APPROVER]) {
      const res = await post(
        '/api/events',
        { actorId: 'refund-paused', event: { type: 'TIMEOUT' } },
        key,
      );
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        error: 'forbidden',
        reason: 'event_not_sendable',
        eventType: 'TIMEOUT',
        kind: 'timer-only',
      });
    }
    expect((await get('/api/actors/refund-paused')).body.actor.state).toBe('paused');
  });

  test("a vote is the signing key's own: one key cannot cast the team's votes", async () => {
    const team = catalog['team-workflow'];
    await createDurableActor(team.machine, {
      id: 'team-1',
      store,
      input: {
        members: [
          { id: AGENT_ALL.id, role: 'architect' },
          { id: 'dev', role: 'developer' },
          { id: 'qa', role: 'qa' },
        ],
      },
      schemas: team.events,
    });
    const send = (event: Record<string, unknown>) =>
      post('/api/events', { actorId: 'team-1', event }, AGENT_ALL);
    expect((await send({ type: 'START', request: 'dark mode' })).status).toBe(200);
    // `by` names the sender: filled in from the key when absent.
    expect((await send({ type: 'PLAN_DRAFTED', plan: 'v1' })).status).toBe(200);
    const forged = await send({ type: 'VOTE', voterId: 'dev', decision: 'approve' });
    expect(forged.status).toBe(403);
    expect(forged.body).toMatchObject({ reason: 'identity_mismatch', field: 'voterId' });
    expect((await send({ type: 'VOTE', decision: 'approve' })).status).toBe(200);
    const actor = await get('/api/actors/team-1');
    expect(actor.body.context.votes).toEqual({ [AGENT_ALL.id]: 'approve' });
  });

  test("an agent key sends its own actors' work events, and no one else's", async () => {
    const own = await post(
      '/api/events',
      { actorId: 'refund-blocked', event: { type: 'DEPENDENCY_RESOLVED' } },
      AGENT,
    );
    expect(own).toMatchObject({ status: 200, body: { state: 'running' } });
    const foreign = await post(
      '/api/events',
      { actorId: 'other-task', event: { type: 'FATAL_ERROR', error: 'x' } },
      AGENT,
    );
    expect(foreign).toMatchObject({
      status: 403,
      body: { reason: 'actor_not_allowed_for_key', actorId: 'other-task' },
    });
  });

  test('an approver key sends approval decisions only', async () => {
    const res = await post(
      '/api/events',
      { actorId: 'refund-running', event: { type: 'COMPLETE' } },
      APPROVER,
    );
    expect(res).toMatchObject({
      status: 403,
      body: { reason: 'approver_key_sends_approvals_only' },
    });
  });
});

describe('the live stream', () => {
  test('carries seed 003 messages for every accepted event, and resumes from Last-Event-ID', async () => {
    const response = await fetch(`${http.url}/api/stream?machine=agent-status`, { headers: AUTH });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const stream = readStream(response);
    const sent = ['one', 'two', 'three'];
    for (const content of sent) {
      const res = await post(
        '/api/events',
        { actorId: 'agent-b', event: { type: 'OUTPUT', stream: 'stdout', content, at: 5 } },
        AGENT_ALL,
      );
      expect(res.status).toBe(200);
    }
    await stream.until((f) => f.data.content === 'three');
    const outputs = stream.frames.filter((f) => f.data.type === 'output');
    expect(outputs.map((f) => f.data.content)).toEqual(sent);
    for (const f of stream.frames) {
      expect(streamMessageSchema.safeParse(f.data).success).toBe(true);
      expect(f.data.machine_id).toBe('agent-status');
    }
    const firstId = outputs[0]!.id!;
    await stream.close();

    // Reconnect as EventSource would, after the first message: the rest are replayed.
    const resumed = readStream(
      await fetch(`${http.url}/api/stream?machine=agent-status`, {
        headers: { ...AUTH, 'last-event-id': String(firstId) },
      }),
    );
    await resumed.until((f) => f.data.content === 'three');
    expect(resumed.frames.map((f) => f.data.content)).toEqual(['two', 'three']);
    await resumed.close();
  });

  test('shows transitions another process wrote to the same store', async () => {
    const stream = readStream(
      await fetch(`${http.url}/api/stream?actor=agent-c`, { headers: AUTH }),
    );
    const elsewhere = await getRuntime(other).actor('agent-c');
    await elsewhere.send({ type: 'STATUS_UPDATE', status: 'initializing', at: 10 });
    const frame = await stream.until((f) => f.data.type === 'status_update');
    expect(frame.data).toMatchObject({
      agent_id: 'agent-c',
      status: 'initializing',
      previous_status: 'idle',
      event: 'STATUS_UPDATE',
    });
    await stream.close();
  });

  test('an event is judged on the stored state even when another process moved the actor', async () => {
    // The server holds agent-c live (it created it); the other process moves it on.
    const elsewhere = await getRuntime(other).actor('agent-c');
    await elsewhere.send({ type: 'STATUS_UPDATE', status: 'running', at: 11 });
    const res = await post(
      '/api/events',
      { actorId: 'agent-c', event: { type: 'STATUS_UPDATE', status: 'thinking', at: 12 } },
      AGENT_ALL,
    );
    expect(res).toMatchObject({ status: 200, body: { state: 'thinking' } });
  });

  test('/metrics exposes seed 001 metrics in Prometheus text', async () => {
    const response = await fetch(`${http.url}/metrics`, { headers: AUTH });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('agentcharts_transitions_total{');
    expect(text).toContain('agentcharts_actors{');
  });
});

describe('deployment', () => {
  test('answers only for its hosts (DNS rebinding): others get 421 before anything runs', async () => {
    const local = createServer({
      store,
      charts,
      keys: [],
      publicRead: true,
      allowedHosts: ['agents.example.com', '.internal'],
      pollMs: 0,
    });
    try {
      const status = async (url: string) => (await local.app.fetch(new Request(url))).status;
      expect(await status('http://127.0.0.1:7878/healthz')).toBe(200);
      expect(await status('http://localhost/healthz')).toBe(200);
      expect(await status('http://agents.example.com/healthz')).toBe(200);
      expect(await status('http://db.internal:8080/healthz')).toBe(200);
      expect(await status('http://attacker.example/api/actors')).toBe(421);
      expect(await status('http://internal.attacker.example/api/actors')).toBe(421);
    } finally {
      await local.close();
    }
  });

  test('logs one INFO line per request into pino', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    const local = createServer({ store, charts, keys: [], accessToken: TOKEN, pollMs: 0, logger });
    try {
      await local.app.fetch(new Request('http://127.0.0.1/healthz'));
      expect(lines.some((l) => l.level === 30 && /--> GET \/healthz .*200/.test(l.msg))).toBe(true);
    } finally {
      await local.close();
    }
  });

  test('behind a trusted TLS proxy the session cookie is Secure and the origin is the proxy’s', async () => {
    const local = createServer({
      store,
      charts,
      keys: [DASHBOARD],
      accessToken: TOKEN,
      trustProxy: true,
      allowedHosts: ['agents.example.com'],
      pollMs: 0,
    });
    try {
      const proxied = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'agents.example.com' };
      const page = await local.app.fetch(
        new Request(`http://127.0.0.1/?token=${TOKEN}`, { headers: proxied }),
      );
      expect(page.headers.get('set-cookie')).toContain('Secure');
      const signIn = await local.app.fetch(
        new Request('http://127.0.0.1/dashboard/sign-in', {
          method: 'POST',
          headers: {
            ...proxied,
            origin: 'https://agents.example.com',
            'content-type': 'application/json',
          },
          body: JSON.stringify({ keyId: DASHBOARD.id, secret: DASHBOARD.secret }),
        }),
      );
      expect(signIn.status).toBe(200);
    } finally {
      await local.close();
    }
  });
});

describe('the dashboard', () => {
  async function session(): Promise<string> {
    const response = await fetch(`${http.url}/?token=${TOKEN}`, { redirect: 'manual' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/');
    const cookie = response.headers.get('set-cookie') ?? '';
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    return cookie.split(';')[0]!;
  }

  test('serves the page with a strict content security policy and assets from node_modules', async () => {
    const page = await fetch(`${http.url}/`);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('/assets/app.js');
    expect(html).not.toMatch(/https?:\/\//);
    const mermaid = await fetch(`${http.url}/assets/mermaid.min.js`);
    expect(mermaid.status).toBe(200);
    expect((await mermaid.text()).length).toBeGreaterThan(1_000_000);
    expect((await fetch(`${http.url}/?token=wrong`)).status).toBe(401);
  });

  test('Approve goes through the signed approval path as the approver who signed in; the read token never approves', async () => {
    const reader = await session();
    const decide = (headers: Record<string, string>, body: unknown) =>
      fetch(`${http.url}/dashboard/decision`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const signIn = (headers: Record<string, string>, body: unknown) =>
      fetch(`${http.url}/dashboard/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    expect((await decide({}, { actorId: 'refund-dash', decision: 'approved' })).status).toBe(401);
    // A session opened with the read token reads; it never approves.
    const asReader = await decide(
      { cookie: reader, origin: http.url },
      { actorId: 'refund-dash', decision: 'approved' },
    );
    expect(asReader.status).toBe(403);
    expect(await asReader.json()).toMatchObject({ error: 'approver_sign_in_required' });
    expect((await get('/api/actors/refund-dash')).body.actor.state).toBe('paused');
    // Signing in takes the approver's own key id and secret; an agent key cannot.
    for (const wrong of [
      { keyId: DASHBOARD.id, secret: 'not-the-secret-0000000' },
      { keyId: AGENT.id, secret: AGENT.secret },
      { keyId: 'nobody', secret: DASHBOARD.secret },
    ]) {
      const refused = await signIn({ cookie: reader }, wrong);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ error: 'invalid_credentials' });
    }
    expect(
      (
        await signIn(
          { origin: 'https://evil.example' },
          { keyId: DASHBOARD.id, secret: DASHBOARD.secret },
        )
      ).status,
    ).toBe(403);
    const signedIn = await signIn(
      { cookie: reader },
      { keyId: DASHBOARD.id, secret: DASHBOARD.secret },
    );
    expect(signedIn.status).toBe(200);
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(cookie).not.toBe(reader);
    // The reader's session was replaced, not upgraded in place.
    expect(
      (
        await decide(
          { cookie: reader, origin: http.url },
          { actorId: 'refund-dash', decision: 'approved' },
        )
      ).status,
    ).toBe(401);
    expect(
      (
        await decide(
          { cookie, origin: 'https://evil.example' },
          { actorId: 'refund-dash', decision: 'approved' },
        )
      ).status,
    ).toBe(403);
    const ok = await decide(
      { cookie, origin: http.url },
      { actorId: 'refund-dash', decision: 'approved', comment: 'fine' },
    );
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ state: 'running', eventType: 'APPROVAL_GRANTED' });
    const last = (await get('/api/actors/refund-dash')).body.trail.at(-1);
    expect(last).toMatchObject({
      keyId: 'dashboard',
      event: { type: 'APPROVAL_GRANTED', approver: 'dashboard', comment: 'fine' },
    });
    // The same rules apply: approving a running task is an illegal transition.
    const again = await decide({ cookie }, { actorId: 'refund-dash', decision: 'approved' });
    expect(again.status).toBe(409);
  });
});

describe('store failures', () => {
  test('a concurrent update maps to 409 retryable, a busy store to 503, anything else to 500 without internals', async () => {
    const inner = openStore('memory:');
    const failures: Error[] = [];
    const flaky = Object.create(inner) as Store;
    flaky.commit = (writes) => {
      const failure = failures.shift();
      if (failure instanceof ConcurrencyError) return Promise.resolve(writes.map(() => failure));
      if (failure) return Promise.reject(failure);
      return inner.commit(writes);
    };
    await createDurableActor(task.machine, {
      id: 'refund-flaky',
      store: flaky,
      input: { taskId: 'refund-flaky' },
      schemas: task.events,
    });
    const server = createServer({ store: flaky, keys: [AGENT], accessToken: TOKEN, pollMs: 0 });
    const local = await listen(server);
    let attempt = 0;
    const base = now();
    const send = async () => {
      const text = JSON.stringify({ actorId: 'refund-flaky', event: { type: 'START' } });
      // Each attempt is signed anew (a distinct timestamp), as a retrying client does.
      const headers = signRequest(
        AGENT,
        { method: 'POST', path: '/api/events', body: text },
        base - attempt++,
      );
      const response = await fetch(`${local.url}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: text,
      });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    try {
      // The server retries a lost race 3 times; a fourth loss reaches the client.
      for (let i = 0; i < 4; i++) {
        failures.push(new ConcurrencyError({ actorId: 'refund-flaky', expectedVersion: 1 }));
      }
      expect(await send()).toMatchObject({
        status: 409,
        body: { error: 'concurrent_update', retryable: true },
      });
      failures.push(new StoreError({ operation: 'commit', kind: 'busy', detail: 'SQLITE_BUSY' }));
      expect(await send()).toMatchObject({
        status: 503,
        body: { error: 'store_unavailable', retryable: true },
      });
      failures.push(new Error('disk on fire at /var/lib/secret-path'));
      const broken = await send();
      // A request id to find the logged error by; nothing of the error itself.
      expect(broken).toEqual({
        status: 500,
        body: { error: 'internal', requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) },
      });
      expect(JSON.stringify(broken)).not.toContain('secret-path');
      expect(await send()).toMatchObject({ status: 200, body: { state: 'running' } });
    } finally {
      await local.close();
      await getRuntime(flaky).close();
      await inner.close();
    }
  });
});

describe('bounds', () => {
  test('each key has its own request quota: a key that floods gets 429, others go on', () => {
    const quota = new KeyQuota(2, 300);
    expect([quota.take('a', 10), quota.take('a', 11), quota.take('a', 12)]).toEqual([
      true,
      true,
      false,
    ]);
    expect(quota.take('b', 12)).toBe(true);
    // The next window starts over.
    expect(quota.take('a', 300)).toBe(true);
  });

  test.each(['memory:', 'sqlite::memory:'])(
    'the store remembers a nonce until it expires (%s)',
    async (url) => {
      const nonces = openStore(url);
      try {
        const remember = (nonce: string, now: number) =>
          nonces.rememberRequest({ key: 'k', nonce, expiresAt: 1_000, now });
        expect(await remember('n1', 0)).toBe('new');
        expect(await remember('n1', 500)).toBe('replayed');
        expect(
          await nonces.rememberRequest({ key: 'other', nonce: 'n1', expiresAt: 1_000, now: 500 }),
        ).toBe('new');
        // Past its expiry the same nonce is new again (the freshness check refuses it first).
        expect(await remember('n1', 1_001)).toBe('new');
      } finally {
        await nonces.close();
      }
    },
  );

  test('the stream buffer is bounded in bytes, and a resume larger than a client may queue resyncs', async () => {
    const hub = new SseHub({ maxBufferBytes: 4096, maxQueuedBytes: 2048, keepAliveMs: 0 });
    const big = 'x'.repeat(200);
    for (let i = 0; i < 1_000; i++) hub.publish({ actorId: 'a', machineId: 'm', data: { i, big } });
    await new Promise((r) => setImmediate(r));
    // 1,000 messages of ~230 bytes: only ~4 KiB of them are kept, so id 1 is gone.
    const fromStart = readStream(hub.connect({ filter: {}, lastEventId: 0 }));
    expect((await fromStart.until((f) => f.event === 'resync')).data).toEqual({
      lastEventId: 1_000,
    });
    // A resume the buffer still holds, but over what a client may queue: resync, not one huge chunk.
    const recent = readStream(hub.connect({ filter: {}, lastEventId: 990 }));
    expect((await recent.until((f) => f.event === 'resync')).data).toEqual({ lastEventId: 1_000 });
    const last = readStream(hub.connect({ filter: {}, lastEventId: 997 }));
    expect((await last.until((f) => f.id === 1000)).data).toMatchObject({ i: 999 });
    hub.close();
  });

  test('1,000 clients that never read, then 1,000 resuming from 0: memory stays within the byte bounds', async () => {
    const maxQueuedBytes = 64 * 1024;
    const hub = new SseHub({
      maxQueuedBytes,
      maxBufferBytes: 1024 * 1024,
      maxStreamsPerPrincipal: 5_000,
      keepAliveMs: 0,
    });
    const payload = 'y'.repeat(1_000);
    const slow = Array.from({ length: 1_000 }, () =>
      hub.connect({ filter: {}, principal: 'slow' }),
    );
    expect(hub.size).toBe(1_000);
    for (let i = 0; i < 200; i++) {
      hub.publish({ actorId: `a${i % 7}`, machineId: 'm', data: { i, payload } });
      if (i % 20 === 19) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setImmediate(r));
    // ~200 kB were published to each: every client passed its 64 KiB queue and was dropped.
    expect(hub.dropped).toBe(1_000);
    expect(hub.size).toBe(0);
    for (const response of slow) await response.body?.cancel();
    // Resuming from 0, the head each one would get is bounded by its queue: a resync.
    const resumed = Array.from({ length: 1_000 }, () =>
      readStream(hub.connect({ filter: {}, principal: 'resume', lastEventId: 0 })),
    );
    const first = await resumed[0]!.until((f) => f.event === 'resync');
    expect(first.data).toEqual({ lastEventId: 200 });
    expect(hub.size).toBe(1_000);
    hub.close();
  });

  test('streams are capped per principal and end with their principal', () => {
    const hub = new SseHub({ maxStreamsPerPrincipal: 2, keepAliveMs: 0 });
    hub.connect({ filter: {}, principal: 'session:a' });
    hub.connect({ filter: {}, principal: 'session:a' });
    expect(hub.admits('session:a')).toBe(false);
    expect(hub.admits('session:b')).toBe(true);
    expect(hub.size).toBe(2);
    hub.closePrincipal('session:a');
    expect(hub.size).toBe(0);
    expect(hub.admits('session:a')).toBe(true);
    hub.close();
  });

  test('a stream client resuming from an id no longer buffered is told to resync', async () => {
    const hub = new SseHub({ bufferSize: 2, keepAliveMs: 0 });
    for (let i = 0; i < 10; i++) hub.publish({ actorId: 'a', machineId: 'm', data: { i } });
    await new Promise((r) => setImmediate(r));
    const stream = readStream(hub.connect({ filter: {}, lastEventId: 1 }));
    const frame = await stream.until((f) => f.event === 'resync');
    expect(frame.data).toEqual({ lastEventId: 10 });
    const recent = readStream(hub.connect({ filter: {}, lastEventId: 8 }));
    await recent.until((f) => f.data.i === 9);
    expect(recent.frames.map((f) => f.id)).toEqual([9, 10]);
    hub.close();
  });

  test('a stream client that stops reading is dropped instead of buffering without bound', async () => {
    const hub = new SseHub({ maxQueuedBytes: 1024, keepAliveMs: 0 });
    const response = hub.connect({ filter: {} });
    expect(hub.size).toBe(1);
    for (let i = 0; i < 50; i++) {
      hub.publish({ actorId: 'a', machineId: 'm', data: { text: 'x'.repeat(100) } });
      await new Promise((r) => setImmediate(r));
    }
    expect(hub.size).toBe(0);
    expect(hub.dropped).toBe(1);
    await response.body?.cancel();
    hub.close();
  });
});

describe('the live-actor cache', () => {
  test('a server touching more actors than its limit keeps only the recent idle ones in memory, and every write lands', async () => {
    const own = openStore('memory:');
    const ids = Array.from({ length: 12 }, (_, i) => `refund-lru-${i}`);
    for (const id of ids) {
      await createDurableActor(task.machine, {
        id,
        store: own,
        input: { taskId: id },
        schemas: task.events,
      });
    }
    await getRuntime(own).close(); // the server starts with nothing in memory
    const server = createServer({ store: own, keys: [AGENT], pollMs: 0, maxLiveActors: 4 });
    const local = await listen(server);
    try {
      for (const id of ids) {
        const text = JSON.stringify({ actorId: id, event: { type: 'START' } });
        const response = await fetch(`${local.url}/api/events`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...signRequest(AGENT, { method: 'POST', path: '/api/events', body: text }),
          },
          body: text,
        });
        expect(response.status).toBe(200);
      }
      expect(server.runtime.liveCount).toBe(4);
      for (const id of ids) expect((await own.loadActor(id))?.state).toBe('running');
    } finally {
      await local.close();
      await getRuntime(own).close();
      await own.close();
    }
  });
});
