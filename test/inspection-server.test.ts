import { createWebSocketInspector } from '@statelyai/inspect';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { assign, createActor, createMachine, sendParent } from 'xstate';
import { catalog, charts } from '../machines/index.ts';
import { getRuntime } from '../src/index.ts';
import {
  createServer,
  listen,
  ListenError,
  type AgentchartsServer,
  type ListeningServer,
} from '../src/server/app.ts';
import { localInspector } from '../src/server/inspection-local.ts';
import { inspectStore } from '../src/inspect/inspector.ts';
import { InspectionHub } from '../src/server/inspection.ts';
import { jsonTextHeapBytes } from '../src/server/heap-size.ts';
import { MAX_EVENT_DEPTH } from '../src/strict/events.ts';
import { machineFromDefinition, InvalidDefinitionError } from '../src/inspect/definition.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { taskActor } from './support/actors.ts';

const TOKEN = 'inspection-token-0123456789';

/** A plain XState app: a parent machine that invokes a child machine. */
const child = createMachine({
  id: 'payment',
  initial: 'charging',
  states: {
    charging: { on: { CHARGED: 'charged' } },
    charged: { type: 'final', entry: sendParent({ type: 'PAID' }) },
  },
});
const checkout = createMachine({
  id: 'checkout',
  initial: 'cart',
  context: { items: 0 },
  states: {
    cart: {
      on: {
        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },
        CHECKOUT: 'paying',
      },
    },
    paying: {
      invoke: { id: 'payment', src: child },
      on: { PAID: 'done' },
      after: { 60_000: 'cart' },
    },
    done: { type: 'final' },
  },
});

let dir: string;
let store: Store;
let http: ListeningServer;
let server: AgentchartsServer;
const auth = { authorization: `Bearer ${TOKEN}` };
const socketUrl = (): string => {
  if (http.inspectUrl === undefined) throw new Error('the server has no inspection socket');
  return http.inspectUrl;
};

async function getJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${http.url}${path}`, { headers: auth });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

interface Summary {
  id: string;
  sessionId: string;
  name: string;
  parentId: string | null;
  value: unknown;
  entries: number;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-inspection-'));
  store = openStore(`sqlite:${join(dir, 'i.db')}`);
  server = createServer({
    store,
    charts,
    keys: [],
    accessToken: TOKEN,
    requestLogs: false,
    pollMs: 0,
    inspection: { maxMessageBytes: 64 * 1024 },
  });
  http = await listen(server);
});

afterAll(async () => {
  await http?.close();
  if (store) {
    await getRuntime(store).close();
    await store.close();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the local inspector', () => {
  test('a plain XState app sends to /inspect with createWebSocketInspector: actors, definition, events, snapshots, parent and child', async () => {
    expect(http.inspectUrl).toBe(`${http.url.replace('http', 'ws')}/inspect`);
    const inspector = createWebSocketInspector({ url: socketUrl() });
    const actor = createActor(checkout, { inspect: inspector.inspect });
    actor.start();
    actor.send({ type: 'ADD' });
    actor.send({ type: 'ADD' });
    actor.send({ type: 'CHECKOUT' });
    actor.getSnapshot().children['payment']?.send({ type: 'CHARGED' });
    expect(actor.getSnapshot().value).toBe('done');

    let actors: Summary[] = [];
    await expect
      .poll(
        async () => {
          actors = (await getJson('/api/inspections')).body['actors'] as Summary[];
          return actors.find((a) => a.name === 'checkout')?.value;
        },
        { timeout: 20_000 },
      )
      .toBe('done');
    const parent = actors.find((a) => a.name === 'checkout') as Summary;
    const payment = actors.find((a) => a.name === 'payment') as Summary;
    expect(payment.parentId).toBe(parent.id);

    type Detail = {
      snapshot: { value: unknown; context: { items: number } };
      diagram: { mermaid: string; active: string[] };
      entries: Array<{ kind: string; eventType: string }>;
      children: Summary[];
    };
    let detail = {} as Detail;
    // Every event the app's actor received, in order (the child's completion last).
    await expect
      .poll(async () => {
        detail = (await getJson(`/api/inspections/${encodeURIComponent(parent.id)}`))
          .body as Detail;
        return detail.entries.filter((e) => e.kind === 'event').map((e) => e.eventType);
      })
      .toEqual(['xstate.init', 'ADD', 'ADD', 'CHECKOUT', 'PAID', 'xstate.done.actor.payment']);
    expect(detail.snapshot.context.items).toBe(2);
    expect(detail.diagram.mermaid).toContain('cart --> paying : CHECKOUT');
    expect(detail.diagram.active).toEqual(['done']);
    expect(detail.children.map((c) => c.id)).toEqual([payment.id]);
    expect(detail.entries.filter((e) => e.kind === 'snapshot').length).toBeGreaterThanOrEqual(5);
    inspector.stop();
  });

  test('reads need the read credential; the socket refuses other sites and answers 426 without an upgrade', async () => {
    expect((await fetch(`${http.url}/api/inspections`)).status).toBe(401);
    // A browser page of another site may not write into the dashboard's memory.
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(socketUrl(), { origin: 'https://evil.example' });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    expect(refused).toBe(403);
    const plain = await fetch(`${http.url}/inspect`);
    expect(plain.status).toBe(426);
    expect(await plain.json()).toMatchObject({ error: 'upgrade_required' });
  });

  test('a connection not from loopback needs a read credential', async () => {
    const server = createServer({ store, charts, keys: [], accessToken: TOKEN, pollMs: 0 });
    // app.request has no Node socket: the peer is not loopback.
    expect((await server.app.request('http://127.0.0.1/inspect')).status).toBe(401);
    const withToken = await server.app.request('http://127.0.0.1/inspect', { headers: auth });
    expect(withToken.status).toBe(426);
    await server.close();
  });

  test('an oversized or ill-formed message is refused and the socket stays usable', async () => {
    const ws = new WebSocket(socketUrl());
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const before = (await getJson('/api/inspections')).body['stats'] as {
      refused: Record<string, number>;
    };
    ws.send('x'.repeat(80 * 1024));
    ws.send('{not json');
    ws.send(JSON.stringify({ type: '@xstate.event', sessionId: 'x:9' }));
    ws.send(JSON.stringify({ type: '@xstate.actor', sessionId: 'lone', name: 'lone' }));
    await expect
      .poll(async () => {
        const list = (await getJson('/api/inspections')).body['actors'] as Summary[];
        return list.some((a) => a.sessionId === 'lone');
      })
      .toBe(true);
    const after = (await getJson('/api/inspections')).body['stats'] as {
      refused: Record<string, number>;
    };
    expect(after.refused['too_large']).toBe((before.refused['too_large'] ?? 0) + 1);
    expect(after.refused['invalid_json']).toBe((before.refused['invalid_json'] ?? 0) + 1);
    expect(after.refused['invalid_message']).toBe((before.refused['invalid_message'] ?? 0) + 1);
    ws.close();
  });

  test("a chart's durable actors appear beside the apps (what agentcharts inspect <machine> does)", async () => {
    const task = catalog['task-lifecycle'];
    const actor = await taskActor(store, 'inspected-task');
    await actor.send({ type: 'START' });
    const inspection = inspectStore(store, {
      chart: task,
      inspector: localInspector(server.inspection),
      actorId: 'inspected-task',
    });
    await inspection.ready;
    inspection.stop();
    const detail = (
      await getJson(`/api/inspections/${encodeURIComponent('0~durable:inspected-task')}`)
    ).body as {
      actor: { name: string; value: unknown };
      diagram: { active: string[]; mermaid: string };
      entries: Array<{ kind: string; eventType: string }>;
    };
    expect(detail.actor).toMatchObject({ name: 'inspected-task', value: 'running' });
    expect(detail.diagram.active).toEqual(['running']);
    // The chart itself is drawn (its timer events named), not a rebuilt definition.
    expect(detail.diagram.mermaid).toContain('RETRY (after retryBackoff)');
    expect(detail.entries.filter((e) => e.kind === 'event').map((e) => e.eventType)).toEqual([
      'xstate.init',
      'START',
    ]);
  });

  test('a taken port is a ListenError naming the port', async () => {
    const server = createServer({ store, charts, keys: [], accessToken: TOKEN, pollMs: 0 });
    const error = await listen(server, { port: http.port }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ListenError);
    expect((error as ListenError).message).toBe(
      `port ${http.port} on 127.0.0.1 is taken (another server listens there); choose another with --port`,
    );
    await server.close();
  });
});

describe('InspectionHub keeps bounded memory', () => {
  const actorMessage = (sessionId: string) =>
    JSON.stringify({ type: '@xstate.actor', sessionId, name: sessionId });
  const eventMessage = (sessionId: string, n: number) =>
    JSON.stringify({ type: '@xstate.event', sessionId, event: { type: `E${n}` } });

  test('the least recently updated actor leaves past maxActors', () => {
    const hub = new InspectionHub({ maxActors: 2 });
    hub.receive(1, actorMessage('a'));
    hub.receive(1, actorMessage('b'));
    hub.receive(1, eventMessage('a', 1)); // a is now the most recent
    hub.receive(1, actorMessage('c'));
    expect(hub.list().map((a) => a.sessionId)).toEqual(['c', 'a']);
    expect(hub.stats.actorsDropped).toBe(1);
  });

  test('the oldest entries drop past maxEntriesPerActor, and the bytes kept follow', () => {
    const hub = new InspectionHub({ maxEntriesPerActor: 3 });
    hub.receive(1, actorMessage('a'));
    for (let n = 1; n <= 10; n++) hub.receive(1, eventMessage('a', n));
    const a = hub.get('1~a');
    expect(a?.entries.map((e) => e.eventType)).toEqual(['E8', 'E9', 'E10']);
    expect(a?.entries.map((e) => e.seq)).toEqual([8, 9, 10]);
    expect(a?.droppedEntries).toBe(7);
    // Counted as the server holds them: the heap each message's text is estimated to take.
    const cost = (text: string) => jsonTextHeapBytes(text, MAX_EVENT_DEPTH + 2) ?? NaN;
    const kept = [8, 9, 10].reduce((sum, n) => sum + cost(eventMessage('a', n)), 0);
    expect(hub.bytes).toBe(cost(actorMessage('a')) + kept);
  });

  test('past maxTotalBytes, the least recently updated actors leave until it fits', () => {
    const hub = new InspectionHub({ maxTotalBytes: 1000 });
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) hub.receive(1, actorMessage(id));
    expect(hub.bytes).toBeLessThanOrEqual(1000);
    expect(hub.list()[0]?.sessionId).toBe('g');
    expect(hub.stats.actorsDropped).toBeGreaterThan(0);
  });

  test('the same session id from two apps is two actors', () => {
    const hub = new InspectionHub();
    hub.receive(1, actorMessage('x:0'));
    hub.receive(2, actorMessage('x:0'));
    expect(hub.list().map((a) => a.id)).toEqual(['2~x:0', '1~x:0']);
  });
});

describe('machineFromDefinition', () => {
  test('rebuilds the states and transitions a sent definition describes', () => {
    const machine = machineFromDefinition(
      JSON.stringify({
        id: 'light',
        initial: 'green',
        states: { green: { on: { NEXT: 'red' } }, red: { after: { 1000: 'green' } } },
      }),
    );
    expect(Object.keys(machine.root.states)).toEqual(['green', 'red']);
  });

  test('refuses what is not a machine config with a typed error', () => {
    for (const [text, problem] of [
      ['{nope', 'not_json'],
      ['[1,2]', 'not_a_machine_config'],
      ['{"id":"x"}', 'not_a_machine_config'],
      ['{"initial":"missing","states":{"a":{}}}', 'rejected_by_xstate'],
    ] as const) {
      const error = (() => {
        try {
          machineFromDefinition(text);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(error, text).toBeInstanceOf(InvalidDefinitionError);
      expect((error as InvalidDefinitionError).problem, text).toBe(problem);
    }
  });
});
