/**
 * A chart whose transitions include wildcards, served over HTTP: a signed event of
 * a type only a wildcard takes is accepted and committed, as XState takes it; the
 * control, a type neither named nor matched, is refused with 400 and writes nothing.
 * Who may send a family of types is the chart's metadata too: `meta.events` may
 * declare a descriptor (`'audit.*'`), the most specific declaration deciding.
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
const OPERATOR: ApiKey = { id: 'auditor', secret: 'auditor-secret-0123456789ab', role: 'operator' };

/** A trail that notes every `audit.*` event; `events`: its root `meta.events`. */
function auditTrail(id: string, events?: Record<string, { kind: 'command'; roles: string[] }>) {
  return setup({
    types: { context: {} as { seen: string[] } },
    actions: {
      note: assign({ seen: ({ context, event }) => [...context.seen, event.type] }),
    },
  }).createMachine({
    id,
    context: { seen: [] },
    ...(events === undefined ? {} : { meta: { events } }),
    initial: 'open',
    states: {
      open: { on: { CLOSE: 'closed', 'audit.*': { actions: 'note' } } },
      closed: { type: 'final' },
    },
  });
}
const machine = auditTrail('audit-trail');
const chart = defineChart(machine, { events: {} });
/** The same chart, the `audit.*` family declared for operators, one of its types for agents. */
const guarded = auditTrail('audit-guarded', {
  'audit.*': { kind: 'command', roles: ['operator'] },
  'audit.ping': { kind: 'command', roles: ['agent'] },
});
const guardedChart = defineChart(guarded, { events: {} });

let dir: string;
let store: Store;
let http: ListeningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-wildcard-'));
  store = openStore(`sqlite:${join(dir, 'wild.db')}`);
  getRuntime(store, { charts: [chart, guardedChart] });
  await createDurableActor(machine, { id: 'trail-1', store, schemas: false });
  await createDurableActor(guarded, { id: 'guarded-1', store, schemas: false });
  http = await listen(
    createServer({
      store,
      charts: [chart, guardedChart],
      keys: [AGENT, OPERATOR],
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

async function send(event: Record<string, unknown>, actorId = 'trail-1', key = AGENT) {
  const path = '/api/events';
  const text = JSON.stringify({ actorId, event });
  const response = await fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signRequest(key, { method: 'POST', path, body: text }),
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

  test("a family declared in the chart's metadata decides who sends its types; an exact declaration beats it", async () => {
    const refused = await send({ type: 'audit.login' }, 'guarded-1', AGENT);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      error: 'forbidden',
      reason: 'role_not_allowed',
      eventType: 'audit.login',
      roles: ['operator'],
    });
    expect((await store.loadActor('guarded-1'))?.version).toBe(1);
    // The control: the operator's same event is taken, and the agent's declared one.
    expect((await send({ type: 'audit.login' }, 'guarded-1', OPERATOR)).status).toBe(200);
    expect((await send({ type: 'audit.ping' }, 'guarded-1', AGENT)).status).toBe(200);
    const row = await store.loadActor('guarded-1');
    expect(JSON.parse(row?.snapshot ?? '{}').context).toEqual({
      seen: ['audit.login', 'audit.ping'],
    });
    expect(row?.version).toBe(3);
  });
});
