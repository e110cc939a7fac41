/**
 * A chart whose transitions include wildcards, served over HTTP: a signed event of
 * a type only a wildcard takes is accepted and committed, as XState takes it; the
 * control, a type neither named nor matched, is refused with 400 and writes nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { assign, setup } from 'xstate';
import { createDurableActor, defineChart, getRuntime } from '../src/index.ts';
import { signRequest, type ApiKey } from '../src/server/auth.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';

const AGENT: ApiKey = { id: 'audit-bot', secret: 'audit-secret-0123456789abcd', role: 'agent' };

const machine = setup({
  types: { context: {} as { seen: string[] } },
  actions: {
    note: assign({ seen: ({ context, event }) => [...context.seen, event.type] }),
  },
}).createMachine({
  id: 'audit-trail',
  context: { seen: [] },
  initial: 'open',
  states: {
    open: { on: { CLOSE: 'closed', 'audit.*': { actions: 'note' } } },
    closed: { type: 'final' },
  },
});
const chart = defineChart(machine, { events: {} });

let dir: string;
let store: Store;
let http: ListeningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-wildcard-'));
  store = openStore(`sqlite:${join(dir, 'wild.db')}`);
  getRuntime(store, { charts: [chart] });
  await createDurableActor(machine, { id: 'trail-1', store, schemas: false });
  http = await listen(
    createServer({
      store,
      charts: [chart],
      keys: [AGENT],
      accessToken: 'read-token-0123456789abcdef',
    }),
  );
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function send(event: Record<string, unknown>) {
  const path = '/api/events';
  const text = JSON.stringify({ actorId: 'trail-1', event });
  const response = await fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signRequest(AGENT, { method: 'POST', path, body: text }),
    },
    body: text,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a wildcard transition over HTTP', () => {
  test('an event only `audit.*` takes is committed; one nothing takes is refused and writes nothing', async () => {
    const taken = await send({ type: 'audit.login' });
    expect(taken.status).toBe(200);
    const refused = await send({ type: 'auditor.login' });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_event', reason: 'unknown_type' });
    const row = await store.loadActor('trail-1');
    expect(JSON.parse(row?.snapshot ?? '{}').context).toEqual({ seen: ['audit.login'] });
    expect(row?.version).toBe(2);
  });
});
