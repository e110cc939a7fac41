/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies: their shape is what the expectations check */
/**
 * What one credential may hold is bounded, and counted against that credential
 * only: sessions, streams (across its sessions), the replay a stream resumes
 * with, inspection memory and change streams, failed guesses, rejection rows.
 * Each bound is tried as an attacker would, beside a legitimate request of
 * another principal that must still be served.
 */
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { getRuntime } from '../src/index.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import type { ApiKey } from '../src/server/auth.ts';
import { InspectionHub } from '../src/server/inspection.ts';
import { SessionStore } from '../src/server/sessions.ts';
import { SseHub, type NodeResponseLike } from '../src/server/sse.ts';
import { FailureThrottle } from '../src/server/throttle.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { pausedTasks } from './support/actors.ts';
import { approverSession, readerSession, signed, signedPost } from './support/principals.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const TOKEN = 'bounds-token-0123456789abcdef';
const MANAGER: ApiKey = { id: 'manager', secret: 'manager-secret-0123456789ab', role: 'approver' };
const BOT: ApiKey = { id: 'refund-bot', secret: 'refund-bot-secret-0123456789', role: 'agent' };

const dir = suiteTempDir('agentcharts-bounds-');
let store: Store;
let http: ListeningServer;
let url: string;

beforeAll(async () => {
  store = openStore(`sqlite:${join(dir(), 'bounds.db')}`);
  await pausedTasks(store, ['refund-1', 'refund-2', 'refund-3']);
  http = await listen(
    createServer({
      store,
      charts,
      keys: [MANAGER, BOT],
      accessToken: TOKEN,
      pollMs: 0,
      requestLogs: false,
      // Tests name their client with X-Forwarded-For (all of them are on loopback).
      trustProxy: true,
      sse: { maxStreamsPerPrincipal: 4, keepAliveMs: 0 },
      rejections: { everyMs: 20, maxRows: 5 },
    }),
  );
  url = http.url;
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await store.close();
});

const decide = (cookie: string, actorId: string) =>
  fetch(`${url}/dashboard/decision`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, origin: url },
    body: JSON.stringify({ actorId, decision: 'approved' }),
  });

describe('sessions are bounded per credential', () => {
  test('1,200 sign-ins with the read token push out its own oldest sessions, never a signed-in approver', async () => {
    const manager = await approverSession(url, MANAGER);
    const first = await readerSession(url, TOKEN);
    for (let i = 0; i < 1_200; i++) await readerSession(url, TOKEN);
    // The token's first session went (its cap is 1,000) ...
    const gone = await fetch(`${url}/api/actors`, { headers: { cookie: first } });
    expect(gone.status).toBe(401);
    // ... the approver's did not: its next decision is served.
    const decided = await decide(manager, 'refund-1');
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ state: 'running' });
  });

  test('the store itself: past its cap a credential loses its own oldest, and says which', () => {
    const sessions = new SessionStore({ maxPerCredential: 2 });
    const approver = sessions.open({ kind: 'approver', keyId: 'manager' }).id;
    const a = sessions.open({ kind: 'reader' }).id;
    sessions.open({ kind: 'reader' });
    const third = sessions.open({ kind: 'reader' });
    expect(third.evicted).toEqual([a]);
    expect(sessions.get(a)).toBeUndefined();
    expect(sessions.get(approver)).toEqual({ kind: 'approver', keyId: 'manager' });
    expect(sessions.size).toBe(3);
  });
});

describe('streams are bounded per credential, across its sessions', () => {
  test("four streams from four reader sessions fill the token's cap; a fifth is 429, the approver's opens", async () => {
    const open: Response[] = [];
    for (let i = 0; i < 4; i++) {
      const cookie = await readerSession(url, TOKEN);
      const response = await fetch(`${url}/api/stream`, { headers: { cookie } });
      expect(response.status).toBe(200);
      open.push(response);
    }
    const fifth = await fetch(`${url}/api/stream`, {
      headers: { cookie: await readerSession(url, TOKEN) },
    });
    expect(fifth.status).toBe(429);
    const manager = await approverSession(url, MANAGER);
    const approvers = await fetch(`${url}/api/stream`, { headers: { cookie: manager } });
    expect(approvers.status).toBe(200);
    for (const response of [...open, approvers]) await response.body?.cancel();
  });
});

/** A Node response that takes every chunk (a kernel with room), recording them. */
function recordingResponse() {
  const chunks: Uint8Array[] = [];
  const response: NodeResponseLike & { chunks: Uint8Array[] } = {
    chunks,
    writeHead: () => undefined,
    write(chunk) {
      chunks.push(chunk);
      return true;
    },
    end: () => undefined,
    writableLength: 0,
    once: () => undefined,
  };
  return response;
}

describe('the resume buffer is shared: a resume writes views of it, never a copy', () => {
  const hubWith = async (actorOf: (i: number) => string) => {
    const hub = new SseHub({ keepAliveMs: 0, maxStreamsPerPrincipal: 1_000 });
    for (let i = 0; i < 2_000; i++) {
      hub.publish({ actorId: actorOf(i), machineId: 'm', data: { i, text: 'x'.repeat(200) } });
    }
    await new Promise((r) => setImmediate(r));
    const resume = (filter: { actorId?: string }) => {
      const response = recordingResponse();
      hub.connectNode({ filter, principal: 'token', lastEventId: 0, response });
      // The first chunk is the retry hint; the rest is the replay.
      return response.chunks.slice(1);
    };
    return { hub, resume };
  };
  const where = (chunks: Uint8Array[]) => chunks.map((c) => [c.buffer, c.byteOffset, c.byteLength]);

  test('a hundred streams resuming from 0 hold views of the same blocks', async () => {
    const { hub, resume } = await hubWith((i) => `a${i % 5}`);
    const first = resume({});
    expect(first.reduce((n, c) => n + c.byteLength, 0)).toBeGreaterThan(400_000);
    for (let i = 0; i < 99; i++) expect(where(resume({}))).toEqual(where(first));
    hub.close();
  });

  test('a resume filtered on one actor, whose messages are scattered, is views of the same blocks too', async () => {
    const { hub, resume } = await hubWith((i) => (i % 3 === 0 ? 'mine' : `other-${i}`));
    const blocks = new Set(resume({}).map((c) => c.buffer));
    const mine = resume({ actorId: 'mine' });
    expect(Buffer.concat(mine).toString('utf8')).toContain('"i":1998');
    expect(mine.length).toBeGreaterThan(600);
    expect(mine.every((c) => blocks.has(c.buffer))).toBe(true);
    hub.close();
  });
});

describe('inspection memory is counted as the server holds it', () => {
  test('1 MiB messages of empty objects (twenty times that in memory) are refused as too_large; a small one beside them is kept', () => {
    const hub = new InspectionHub();
    const objects = `[${Array.from({ length: 340_000 }, () => '{}').join(',')}]`;
    for (let i = 0; i < 8; i++) {
      const refused = hub.receive(
        1,
        `{"type":"@xstate.snapshot","sessionId":"x:${i}","snapshot":{"context":${objects}}}`,
      );
      expect(refused).toBe('too_large');
    }
    expect(hub.bytes).toBe(0);
    expect(
      hub.receive(1, JSON.stringify({ type: '@xstate.actor', sessionId: 'ok', name: 'ok' })),
    ).toBeUndefined();
    expect(hub.stats.refused.too_large).toBe(8);
  });

  test('a snapshot nested 20,000 deep is refused (too_deep) and counted; the actor stays readable', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const socket = new WebSocket(http.inspectUrl!);
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: '@xstate.actor', sessionId: 'deep:0', name: 'deep' }));
    socket.send(`{"type":"@xstate.snapshot","sessionId":"deep:0","snapshot":{"context":${deep}}}`);
    socket.send(
      JSON.stringify({ type: '@xstate.event', sessionId: 'deep:0', event: { type: 'DONE' } }),
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    // The DONE after the deep one arrives: messages on one socket are read in order.
    for (;;) {
      const list = await (await fetch(`${url}/api/inspections`, { headers: auth })).json();
      if (list.actors.some((a: any) => a.sessionId === 'deep:0' && a.entries === 1)) {
        expect(list.stats.refused.too_deep).toBe(1);
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const list = await (await fetch(`${url}/api/inspections`, { headers: auth })).json();
    const id = encodeURIComponent(
      list.actors.find((a: any) => a.sessionId === 'deep:0').id as string,
    );
    const read = await fetch(`${url}/api/inspections/${id}`, { headers: auth });
    expect(read.status).toBe(200);
    socket.close();
  });

  test('change streams: 16 per credential; the 17th is 429, another credential opens one', async () => {
    const open: Response[] = [];
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (let i = 0; i < 16; i++) {
      const response = await fetch(`${url}/api/inspections/stream`, { headers: auth });
      expect(response.status).toBe(200);
      open.push(response);
    }
    expect((await fetch(`${url}/api/inspections/stream`, { headers: auth })).status).toBe(429);
    const path = '/api/inspections/stream';
    const other = await fetch(`${url}${path}`, { headers: signed(MANAGER, 'GET', path) });
    expect(other.status).toBe(200);
    for (const response of [...open, other]) await response.body?.cancel();
  });
});

describe('failed secrets are throttled per client and per key', () => {
  const signIn = (client: string, secret: string) =>
    fetch(`${url}/dashboard/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: url, 'x-forwarded-for': client },
      body: JSON.stringify({ keyId: MANAGER.id, secret }),
    });

  test('a client guessing the sign-in gets 429 with Retry-After; the right secret from elsewhere still signs in', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await signIn('203.0.113.7', `guess-${i}-000000000`)).status);
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    const throttled = await signIn('203.0.113.7', `guess-x-000000000`);
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    // Throttled before checking: even the right secret from that client waits.
    expect((await signIn('203.0.113.7', MANAGER.secret)).status).toBe(429);
    expect((await signIn('198.51.100.1', MANAGER.secret)).status).toBe(200);
  });

  test('guesses spread over many clients trip the key: failing clients wait, a clean one signs in', async () => {
    for (let i = 0; i < 60; i++) await signIn(`192.0.2.${i}`, `guess-${i}-000000000`);
    expect((await signIn('192.0.2.1', `another-guess-0000000`)).status).toBe(429);
    expect((await signIn('198.51.100.2', MANAGER.secret)).status).toBe(200);
  });

  test('MCP bearer guesses are throttled the same way', async () => {
    const mcp = (client: string, bearer: string) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${bearer}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'x-forwarded-for': client,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    for (let i = 0; i < 10; i++)
      expect((await mcp('203.0.113.9', `refund-bot.wrong-${i}`)).status).toBe(401);
    const throttled = await mcp('203.0.113.9', 'refund-bot.wrong-x');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).not.toBeNull();
    // The right key from another client is authenticated (the transport then wants an initialize).
    expect((await mcp('198.51.100.3', `refund-bot.${BOT.secret}`)).status).not.toBe(401);
  });

  test('the throttle itself: window, per client, per key', () => {
    let now = 0;
    const throttle = new FailureThrottle({
      perClient: 2,
      perKey: 3,
      windowMs: 1_000,
      now: () => now,
    });
    throttle.fail('a', 'k');
    throttle.fail('a', 'k');
    expect(throttle.check('a', 'k')).toBe(1);
    throttle.fail('b', 'k');
    expect(throttle.check('b', 'k')).toBe(1); // the key is over, and b has failed
    expect(throttle.check('c', 'k')).toBeUndefined(); // c has not
    now = 1_000;
    expect(throttle.check('a', 'k')).toBeUndefined();
  });
});

describe('rejection rows have a retention', () => {
  test('a key sending 30 illegal events leaves at most the newest rows; a legal event beside them is applied', async () => {
    for (let i = 0; i < 30; i++) {
      const body = JSON.stringify({ actorId: 'refund-2', event: { type: 'START' } });
      const response = await signedPost(url, BOT, '/api/events', body);
      expect(response.status).toBe(409);
    }
    // The pruning runs every 20 ms in this server: wait for it by its effect.
    while ((await store.listRejections()).length > 5) await new Promise((r) => setTimeout(r, 10));
    expect((await store.listRejections()).length).toBeLessThanOrEqual(5);
    const manager = await approverSession(url, MANAGER);
    expect((await decide(manager, 'refund-2')).status).toBe(200);
  });
});
