import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getRuntime } from '../src/index.ts';
import { diffJson } from '../src/inspect/json-diff.ts';
import type { AgentchartsServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { readOnlyServer } from './support/server.ts';
import { taskActor } from './support/actors.ts';

const TOKEN = 'time-travel-token-0123456789';
let dir: string;
let file: string;
let store: Store;
let server: AgentchartsServer;

interface Step {
  seq: number;
  last: number;
  eventType: string;
  to: string;
  value: unknown;
  context: Record<string, unknown> | null;
  diff: Array<{ path: string; kind: string; before?: unknown; after?: unknown }>;
  path: Array<{ seq: number; state: string }>;
  snapshotCheck: string;
  chainIntact: boolean;
  diagram: { mermaid: string; active: string[]; visited: string[] };
}

async function step(actorId: string, seq: string | number) {
  const response = await server.app.request(`http://127.0.0.1/api/actors/${actorId}/steps/${seq}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return { status: response.status, body: (await response.json()) as Step & { error?: string } };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-time-travel-'));
  file = join(dir, 'tt.db');
  store = openStore(`sqlite:${file}`);
  const actor = await taskActor(store, 'refund-7');
  await actor.send({ type: 'START' });
  await actor.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund_approval', requestedAt: 1_000 });
  await actor.send({ type: 'APPROVAL_GRANTED', approver: 'manager@example.com' });
  await actor.send({ type: 'COMPLETE' });
  server = readOnlyServer(store, TOKEN);
});

afterAll(async () => {
  await server?.close();
  if (store) {
    await getRuntime(store).close();
    await store.close();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('time travel through a trail', () => {
  test('every step is replayed from the log and matches the snapshot hash its row recorded', async () => {
    const states = [];
    for (let seq = 1; seq <= 5; seq++) {
      const { status, body } = await step('refund-7', seq);
      expect(status).toBe(200);
      expect(body.seq).toBe(seq);
      expect(body.last).toBe(5);
      expect(body.snapshotCheck).toBe('match');
      expect(body.chainIntact).toBe(true);
      expect(body.path.map((p) => p.seq)).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
      states.push(body.to);
    }
    expect(states).toEqual(['planned', 'running', 'paused', 'running', 'done']);
  });

  test('a step shows the context, its diff to the step before, and the path so far on the chart', async () => {
    const { body } = await step('refund-7', 3);
    expect(body.eventType).toBe('PAUSE_FOR_APPROVAL');
    expect(body.value).toBe('paused');
    expect(body.context?.['approval']).toMatchObject({
      reason: 'refund_approval',
      status: 'pending',
    });
    expect(body.diff).toContainEqual({
      path: 'approval',
      kind: 'changed',
      before: null,
      after: expect.objectContaining({ reason: 'refund_approval' }) as unknown,
    });
    expect(body.diagram.active).toEqual(['paused']);
    expect(body.diagram.visited.sort()).toEqual(['planned', 'running']);
    expect(body.diagram.mermaid).toContain('class paused current');
    expect(body.diagram.mermaid).toMatch(/class (planned,running|running,planned) visited/);
  });

  test('a step outside the trail is 404, a malformed one 400', async () => {
    expect((await step('refund-7', 6)).status).toBe(404);
    expect((await step('refund-7', 0)).status).toBe(404);
    expect((await step('refund-7', 'x')).status).toBe(400);
    expect((await step('nobody', 1)).status).toBe(404);
  });

  test('an edited row breaks the chain from that step on, and its replay no longer matches', async () => {
    const db = new Database(file);
    db.exec('DROP TRIGGER transitions_no_update');
    db.prepare("UPDATE transitions SET event = ? WHERE actor_id = 'refund-7' AND seq = 3").run(
      JSON.stringify({ type: 'PAUSE_FOR_APPROVAL', reason: 'forged', requestedAt: 1_000 }),
    );
    db.close();
    expect((await step('refund-7', 2)).body.chainIntact).toBe(true);
    const edited = (await step('refund-7', 3)).body;
    expect(edited.chainIntact).toBe(false);
    expect(edited.snapshotCheck).toBe('mismatch');
    expect(edited.context?.['approval']).toMatchObject({ reason: 'forged' });
  });
});

describe('diffJson', () => {
  test('names added, removed and changed paths, nested and in arrays', () => {
    expect(
      diffJson({ a: 1, b: { c: [1, 2] }, d: 'x' }, { a: 2, b: { c: [1, 3, 4] }, e: true }),
    ).toEqual([
      { path: 'a', kind: 'changed', before: 1, after: 2 },
      { path: 'b.c.1', kind: 'changed', before: 2, after: 3 },
      { path: 'b.c.2', kind: 'added', after: 4 },
      { path: 'd', kind: 'removed', before: 'x' },
      { path: 'e', kind: 'added', after: true },
    ]);
    expect(diffJson(null, { a: 1 })).toEqual([
      { path: '(context)', kind: 'changed', before: null, after: { a: 1 } },
    ]);
    expect(diffJson({ a: 1 }, { a: 1 })).toEqual([]);
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i]));
    expect(diffJson({}, many)).toHaveLength(200);
  });
});
