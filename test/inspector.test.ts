/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies and inspection events: their shape is what the expectations check */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createWebSocketInspector,
  createWebSocketReceiver,
  type StatelyInspectionEvent,
} from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { ManualClock, createDurableActor, getRuntime } from '../src/index.ts';
import { attachInspector, inspectStore, inspectionSessionId } from '../src/inspect/inspector.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { taskActor } from './support/actors.ts';

const task = catalog['task-lifecycle'];

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A Stately inspector server on a free port and a receiver that collects what it relays. */
async function inspectorServer() {
  const port = await freePort();
  const server = createInspectorServer({ port, autoOpen: false });
  const url = `ws://localhost:${port}`;
  const received: StatelyInspectionEvent[] = [];
  // The receiver is another client of the server, as the inspector page is.
  const receiver = createWebSocketReceiver({ server: url });
  receiver.subscribe((event) => received.push(event));
  return {
    url,
    received,
    async until(predicate: (events: StatelyInspectionEvent[]) => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`timed out with ${received.length} events`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: () => server.stop(),
  };
}

function ofSession(events: StatelyInspectionEvent[], actorId: string) {
  return events.filter((e) => e.sessionId === inspectionSessionId(actorId));
}

/** The machine definition as the inspector received it. */
function definitionOf(event: StatelyInspectionEvent | undefined): Record<string, any> {
  expect(event?.type).toBe('@xstate.actor');
  const definition = (event as { definition?: string }).definition;
  expect(typeof definition).toBe('string');
  return JSON.parse(definition as string) as Record<string, any>;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-inspector-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('durable actors in the Stately inspector', () => {
  test('a running actor sends its machine definition and every committed transition over the WebSocket', async () => {
    const inspectorSide = await inspectorServer();
    const store = openStore('memory:');
    const clock = new ManualClock(Date.parse('2026-06-05T14:00:00Z'));
    const inspector = createWebSocketInspector({ url: inspectorSide.url });
    const detach = attachInspector(getRuntime(store, { clock, charts: [task] }), inspector);
    try {
      const actor = await createDurableActor(task.machine, {
        id: 'refund-42',
        store,
        input: { taskId: 'refund-42', backoff: { baseMs: 1000, capMs: 1000 } },
        schemas: task.events,
        clock,
      });
      await actor.send({ type: 'START' });
      await actor.send({
        type: 'PAUSE_FOR_APPROVAL',
        reason: 'refund_approval',
        requestedAt: clock.now(),
      });
      await actor.send({ type: 'APPROVAL_GRANTED', approver: 'manager@example.com' });
      await actor.send({ type: 'TRANSIENT_ERROR', error: 'gateway timeout' });
      // The durable backoff timer fires RETRY: a transition no caller sent.
      clock.advance(1000);
      await getRuntime(store).drain();
      await expect.poll(() => actor.state).toBe('running');
      await actor.send({ type: 'COMPLETE', result: 'refunded' });

      const history = await actor.history();
      await inspectorSide.until(
        (events) =>
          ofSession(events, 'refund-42').filter((e) => e.type === '@xstate.snapshot').length ===
          history.length,
      );
      const events = ofSession(inspectorSide.received, 'refund-42');

      // Announced once, with the machine definition, before anything else.
      const actors = events.filter((e) => e.type === '@xstate.actor');
      expect(actors).toHaveLength(1);
      expect(events[0]).toBe(actors[0]);
      expect((actors[0] as { name: string }).name).toBe('refund-42');
      const definition = definitionOf(actors[0]);
      expect(definition['id']).toBe('task-lifecycle');
      expect(Object.keys(definition['states'] as object).sort()).toEqual(
        Object.keys(task.machine.root.states).sort(),
      );
      expect(definition['states'].paused.on.APPROVAL_GRANTED.target).toBe('running');

      // Every transition: the event, then the snapshot it produced, in commit order.
      const transitions = events.filter((e) => e.type !== '@xstate.actor');
      expect(
        transitions.map((e) => `${e.type}:${(e as { event: { type: string } }).event.type}`),
      ).toEqual(
        // The inspector gets XState's own event; the log names a timer's by the
        // document (RETRY) and keeps the event itself in `event`.
        history.flatMap((row) => {
          const type = (JSON.parse(row.event) as { type: string }).type;
          return [`@xstate.event:${type}`, `@xstate.snapshot:${type}`];
        }),
      );
      const snapshots = transitions.filter((e) => e.type === '@xstate.snapshot') as Array<
        StatelyInspectionEvent & { snapshot: { value: unknown; status: string; context: any } }
      >;
      expect(snapshots.map((s) => s.snapshot.value)).toEqual(history.map((row) => row.toState));
      expect(snapshots.at(-1)?.snapshot.status).toBe('done');
      expect(snapshots.at(-1)?.snapshot.context.result).toBe('refunded');
      expect(snapshots[3]?.snapshot.context.approval.approver).toBe('manager@example.com');
      for (const e of events) expect(e.rootId).toBe(inspectionSessionId('refund-42'));
      // The backoff timer's event comes from the actor itself, as XState's delayed events do.
      const timer = transitions.find(
        (e) =>
          e.type === '@xstate.event' &&
          (e as { event: { type: string } }).event.type.startsWith('xstate.after.'),
      ) as { sourceId?: string } | undefined;
      expect(timer?.sourceId).toBe(inspectionSessionId('refund-42'));
      const sent = transitions.find(
        (e) =>
          e.type === '@xstate.event' && (e as { event: { type: string } }).event.type === 'START',
      ) as { sourceId?: string } | undefined;
      expect(sent?.sourceId).toBeUndefined();
    } finally {
      detach();
      inspector.stop();
      inspectorSide.stop();
      await getRuntime(store).close();
      await store.close();
    }
  });

  test('a single actor attached later is announced at once with its current state', async () => {
    const events: Array<Record<string, any>> = [];
    const store = openStore('memory:');
    const actor = await taskActor(store, 'refund-7');
    await actor.send({ type: 'START' });
    const detach = attachInspector(actor, { inspect: (e) => events.push(e as never) });
    await actor.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payments' });
    detach();
    await actor.send({ type: 'DEPENDENCY_RESOLVED' });
    expect(events.map((e) => e['type'])).toEqual([
      '@xstate.actor',
      '@xstate.event',
      '@xstate.snapshot',
    ]);
    expect(events[0]?.['actorRef'].getSnapshot().value).toBe('running');
    expect(events[0]?.['actorRef'].logic).toBe(task.machine);
    expect(events[2]?.['snapshot'].value).toBe('blocked');
    await getRuntime(store).close();
    await store.close();
  });

  test('the inspect option of createDurableActor reports every committed transition', async () => {
    const events: Array<Record<string, any>> = [];
    const store = openStore('memory:');
    const actor = await createDurableActor(task.machine, {
      id: 'refund-8',
      store,
      input: { taskId: 'refund-8' },
      inspect: { inspect: (e) => events.push(e as never) },
    });
    await actor.send({ type: 'START' });
    await actor.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'limit', requestedAt: 0 });
    expect(events.map((e) => e['type'])).toEqual([
      '@xstate.actor',
      '@xstate.event',
      '@xstate.snapshot',
      '@xstate.event',
      '@xstate.snapshot',
    ]);
    expect(events[0]?.['actorRef'].logic).toBe(task.machine);
    expect(
      events.filter((e) => e['type'] === '@xstate.snapshot').map((e) => e['snapshot'].value),
    ).toEqual(['running', 'paused']);
    await getRuntime(store).close();
    await store.close();
  });

  test('`inspect` shows actors another process wrote: their whole trail, then new transitions', async () => {
    const inspectorSide = await inspectorServer();
    const file = join(dir, 'inspect.db');
    const worker = openStore(`sqlite:${file}`);
    const watcher = openStore(`sqlite:${file}`);
    const inspector = createWebSocketInspector({ url: inspectorSide.url });
    const actor = await createDurableActor(task.machine, {
      id: 'refund-99',
      store: worker,
      input: { taskId: 'refund-99' },
      schemas: task.events,
    });
    await actor.send({ type: 'START' });
    await actor.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payments' });
    const inspection = inspectStore(watcher, { chart: task, inspector, pollMs: 20 });
    try {
      await inspection.ready;
      expect([...inspection.actors]).toEqual(['refund-99']);
      await actor.send({ type: 'DEPENDENCY_RESOLVED' });
      await actor.send({ type: 'COMPLETE' });
      const history = await actor.history();
      await inspectorSide.until(
        (events) =>
          ofSession(events, 'refund-99').filter((e) => e.type === '@xstate.snapshot').length ===
          history.length,
      );
      const events = ofSession(inspectorSide.received, 'refund-99');
      expect(definitionOf(events[0])['id']).toBe('task-lifecycle');
      const snapshots = events.filter((e) => e.type === '@xstate.snapshot') as Array<
        StatelyInspectionEvent & { snapshot: { value: unknown }; event: { type: string } }
      >;
      expect(snapshots.map((s) => [s.event.type, s.snapshot.value])).toEqual(
        history.map((row) => [row.eventType, row.toState]),
      );
    } finally {
      inspection.stop();
      inspector.stop();
      inspectorSide.stop();
      for (const s of [worker, watcher] as Store[]) {
        await getRuntime(s).close();
        await s.close();
      }
    }
  });
});
