import { afterAll, describe, expect, test } from 'vitest';
import { StreamTickets } from '../src/server/stream-tickets.ts';
import { openStore } from '../src/store/open.ts';
import { readOnlyServer } from './support/server.ts';

const TOKEN = 'cors-token-0123456789abcdef';
const APP = 'http://localhost:5173';
const store = openStore('memory:');
const server = readOnlyServer(store, TOKEN, { cors: { origins: [APP] } });
const bearer = { authorization: `Bearer ${TOKEN}` };
const request = (path: string, init?: RequestInit) =>
  server.app.request(`http://127.0.0.1${path}`, init);

afterAll(async () => {
  await server.close();
  await store.close();
});

describe('cross-origin reads', () => {
  test('an allowed origin gets CORS headers with credentials; any other gets none', async () => {
    const preflight = await request('/api/actors', {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'GET' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    const read = await request('/api/actors', { headers: { ...bearer, origin: APP } });
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe(APP);
    const other = await request('/api/actors', {
      headers: { ...bearer, origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('a stream ticket opens one stream once, with its filter; no token in the URL', async () => {
    const issued = await request('/api/stream-tickets', {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ actor: 'refund-1' }),
    });
    expect(issued.status).toBe(200);
    const { ticket, expiresAt } = (await issued.json()) as { ticket: string; expiresAt: number };
    expect(ticket).toMatch(/^[\w-]{32}$/);
    expect(expiresAt).toBeGreaterThan(Date.now());
    const controller = new AbortController();
    const stream = await request(`/api/stream?ticket=${ticket}`, {
      headers: { origin: APP },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.headers.get('access-control-allow-origin')).toBe(APP);
    controller.abort();
    await stream.body?.cancel().catch(() => {});
    // Used once: a second use, an unknown ticket and the read token in the URL are refused.
    expect((await request(`/api/stream?ticket=${ticket}`)).status).toBe(401);
    expect((await request('/api/stream?ticket=nope')).status).toBe(401);
    expect((await request(`/api/stream?token=${TOKEN}`)).status).toBe(401);
    // Tickets need a read credential.
    expect((await request('/api/stream-tickets', { method: 'POST' })).status).toBe(401);
  });

  test('tickets expire and are bounded', () => {
    let now = 0;
    const tickets = new StreamTickets(1_000, 2, () => now);
    const principal = { kind: 'token' } as const;
    const filter = { actorId: undefined, machineId: undefined };
    const a = tickets.issue(principal, filter).ticket;
    const b = tickets.issue(principal, filter).ticket;
    const c = tickets.issue(principal, filter).ticket; // a is dropped
    expect(tickets.redeem(a)).toBeUndefined();
    expect(tickets.redeem(b)?.principal).toEqual(principal);
    now = 1_000;
    expect(tickets.redeem(c)).toBeUndefined();
  });
});
