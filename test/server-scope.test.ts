/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies: their shape is what the expectations check */
/**
 * Every principal has one scope, applied to every read: a key limited to
 * `refund-*`, the dashboard session of an approver whose key is limited so, the
 * stream tickets either mints and an MCP session of such a key. Per read route,
 * an out-of-scope actor is refused or absent (not an id, a count or a state of it
 * shows), and an in-scope actor beside it is served.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { createMcpServer } from '../src/agents/mcp.ts';
import { coversActor, listInScope } from '../src/core/scope.ts';
import { getRuntime } from '../src/index.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import type { ApiKey } from '../src/server/auth.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { taskActor } from './support/actors.ts';
import { approverSession, readerSession, signed, signedGet } from './support/principals.ts';
import { readSse } from './support/sse.ts';
import { inMemoryClient } from './support/mcp.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const TOKEN = 'scope-token-0123456789abcdef';
const SCOPE = ['refund-*'];
const KEY: ApiKey = {
  id: 'refund-bot',
  secret: 'refund-bot-secret-0123456789',
  role: 'agent',
  actors: SCOPE,
};
const APPROVER: ApiKey = {
  id: 'refund-lead',
  secret: 'refund-lead-secret-012345678',
  role: 'approver',
  actors: SCOPE,
};
/** Ids around the scope in store order: `refund,zz` and `refund` sort just before `refund-`, `refund_x` after. */
const OUT = ['a-first', 'billing-1', 'billing-2', 'refund', 'refund,zz', 'refund_x', 'zz-last'];
const IN = ['refund-1', 'refund-2', 'refund-3'];
const PAUSED = new Set(['billing-1', 'refund-1', 'refund-3', 'refund,zz', 'zz-last']);

const dir = suiteTempDir('agentcharts-scope-');
let store: Store;
let http: ListeningServer;
let url: string;
let session: string;

beforeAll(async () => {
  store = openStore(`sqlite:${join(dir(), 'scope.db')}`);
  for (const id of [...OUT, ...IN]) {
    const task = await taskActor(store, id);
    await task.send({ type: 'START' });
    if (PAUSED.has(id)) {
      await task.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'r', requestedAt: 0 });
    }
  }
  http = await listen(
    createServer({
      store,
      charts,
      keys: [KEY, APPROVER],
      accessToken: TOKEN,
      pollMs: 0,
      requestLogs: false,
    }),
  );
  url = http.url;
  session = await approverSession(url, APPROVER);
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await store.close();
});

/** The two scoped principals: a signed key, and an approver's dashboard session. */
const PRINCIPALS = {
  key: (path: string) => signedGet(url, KEY, path),
  session: (path: string) => fetch(`${url}${path}`, { headers: { cookie: session } }),
} as const;
const asToken = (path: string) =>
  fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
const json = async (response: Response) => ({
  status: response.status,
  body: (await response.json()) as Record<string, any>,
});

describe.each(Object.entries(PRINCIPALS))('a principal scoped to refund-* (%s)', (_, read) => {
  test('GET /api/actors walked one by one: every id and every cursor is in scope, filters included', async () => {
    for (const filter of ['', '&state=paused', '&machine=task-lifecycle', '&status=active']) {
      const ids: string[] = [];
      const cursors: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await json(
          await read(
            `/api/actors?limit=1${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          ),
        );
        expect(page.status).toBe(200);
        ids.push(...page.body.actors.map((a: { id: string }) => a.id));
        cursor = page.body.nextCursor as string | null;
        if (cursor !== null) cursors.push(cursor);
      } while (cursor !== null);
      const expected = IN.filter((id) => filter !== '&state=paused' || PAUSED.has(id));
      expect(ids, filter).toEqual(expected);
      expect(
        cursors.every((c) => coversActor(SCOPE, c)),
        filter,
      ).toBe(true);
    }
    // The control: the read token lists the others too.
    const all = await json(await asToken('/api/actors?limit=100'));
    expect(all.body.actors.map((a: { id: string }) => a.id)).toEqual([...OUT, ...IN].sort());
  });

  test('GET /api/counts counts its own actors only', async () => {
    const mine = await json(await read('/api/counts'));
    expect(mine.status).toBe(200);
    expect(mine.body.total).toBe(IN.length);
    expect(mine.body.states).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ state: 'paused', count: 2 }),
        expect.objectContaining({ state: 'running', count: 1 }),
      ]),
    );
    expect((await json(await asToken('/api/counts'))).body.total).toBe(IN.length + OUT.length);
  });

  test('an actor, its history and its steps: 403 out of scope (whether it exists or not), served in scope', async () => {
    for (const path of ['', '/history', '/steps/2']) {
      for (const other of ['billing-1', 'no-such-actor']) {
        const refused = await json(await read(`/api/actors/${other}${path}`));
        expect(refused.status, `${other}${path}`).toBe(403);
        expect(refused.body).toMatchObject({ reason: 'actor_not_allowed_for_key', actorId: other });
      }
      expect((await read(`/api/actors/refund-1${path}`)).status, `refund-1${path}`).toBe(200);
    }
  });

  test('reads that cannot be cut to a scope are refused: metrics, agents status, inspections', async () => {
    for (const path of [
      '/metrics',
      '/api/agents/status?userId=u',
      '/api/inspections',
      '/api/inspections/1~x',
      '/api/inspections/stream',
    ]) {
      const refused = await json(await read(path));
      expect(refused.status, path).toBe(403);
      expect(refused.body, path).toMatchObject({ reason: 'scope_too_narrow' });
      const control = await asToken(path);
      expect(control.status, path).not.toBe(403);
      await control.body?.cancel();
    }
  });

  test('the stream: another actor is 403; the whole stream and a resume from 0 carry only its actors', async () => {
    expect((await read('/api/stream?actor=billing-2')).status).toBe(403);
    const live = readSse(await read('/api/stream'));
    const runtime = getRuntime(store);
    // billing-2 moves first, refund-2 after: the stream is in order, so once refund-2's
    // message is there, billing-2's would have come before it.
    await (await runtime.actor('billing-2')).send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'x' });
    await (await runtime.actor('refund-2')).send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'x' });
    await live.until((f) => (f.data as any).agent_id === 'refund-2');
    expect(
      live.frames.map((f) => (f.data as any).agent_id).filter((id) => !coversActor(SCOPE, id)),
    ).toEqual([]);
    void live.close();
    await (await runtime.actor('billing-2')).send({ type: 'DEPENDENCY_RESOLVED' });
    await (await runtime.actor('refund-2')).send({ type: 'DEPENDENCY_RESOLVED' });
    // A resume from 0 replays the buffer through the same scope.
    const replay = readSse(
      await fetch(`${url}/api/stream`, {
        headers: { ...headersOf(read), 'last-event-id': '0' },
      }),
    );
    await replay.until(
      (f) =>
        (f.data as any).agent_id === 'refund-2' && (f.data as any).event === 'DEPENDENCY_RESOLVED',
    );
    const agents = replay.frames.map((f) => (f.data as any).agent_id as string);
    expect(agents.length).toBeGreaterThan(0);
    expect(agents.every((id) => coversActor(SCOPE, id))).toBe(true);
    void replay.close();
  });
});

/** The credential headers a `read` function sends (for a request it does not make itself). */
function headersOf(read: (path: string) => Promise<Response>): Record<string, string> {
  return read === PRINCIPALS.session ? { cookie: session } : signed(KEY, 'GET', '/api/stream');
}

describe('stream tickets carry the scope and filter they were minted for', () => {
  const mint = async (body: string, headers: Record<string, string>) =>
    json(
      await fetch(`${url}/api/stream-tickets`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      }),
    );

  test("a signed request's body is read once: its filter is honoured, another actor is refused", async () => {
    const body = JSON.stringify({ actor: 'billing-1' });
    const refused = await mint(body, signed(KEY, 'POST', '/api/stream-tickets', body));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      reason: 'actor_not_allowed_for_key',
      actorId: 'billing-1',
    });
    const mine = JSON.stringify({ actor: 'refund-3' });
    const issued = await mint(mine, signed(KEY, 'POST', '/api/stream-tickets', mine));
    expect(issued.status).toBe(200);
    const stream = readSse(await fetch(`${url}/api/stream?ticket=${issued.body.ticket as string}`));
    const runtime = getRuntime(store);
    // refund-1 (in scope, not in the ticket's filter) moves first, refund-3 after.
    await (await runtime.actor('refund-1')).send({ type: 'APPROVAL_GRANTED', approver: 'x' });
    await (await runtime.actor('refund-3')).send({ type: 'APPROVAL_GRANTED', approver: 'x' });
    await stream.until((f) => (f.data as any).agent_id === 'refund-3');
    expect(new Set(stream.frames.map((f) => (f.data as any).agent_id))).toEqual(
      new Set(['refund-3']),
    );
    void stream.close();
  });

  test("a session's tickets end when it logs out; one minted by the token lives on", async () => {
    const reader = await readerSession(url, TOKEN);
    const fromSession = await mint('{}', { cookie: reader });
    const fromToken = await mint('{}', { authorization: `Bearer ${TOKEN}` });
    expect(fromSession.status).toBe(200);
    const logout = await fetch(`${url}/logout`, {
      method: 'POST',
      headers: { cookie: reader, origin: url },
      redirect: 'manual',
    });
    expect(logout.status).toBe(303);
    expect(
      (await fetch(`${url}/api/stream?ticket=${fromSession.body.ticket as string}`)).status,
    ).toBe(401);
    const open = await fetch(`${url}/api/stream?ticket=${fromToken.body.ticket as string}`);
    expect(open.status).toBe(200);
    await open.body?.cancel();
  });
});

describe('an MCP session of a scoped key', () => {
  test('lists, reads and offers as resources only its actors', async () => {
    const mcp = createMcpServer({ store, charts, role: 'agent', actors: SCOPE });
    const { client, close } = await inMemoryClient(mcp);
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: args });
        return { isError: r.isError === true, body: r.structuredContent as Record<string, any> };
      };
      const listed = await call('list_actors', { limit: 100 });
      expect(listed.body['actors'].map((x: { id: string }) => x.id)).toEqual(IN);
      expect(await call('read_actor', { actorId: 'billing-1' })).toMatchObject({
        isError: true,
        body: { error: { kind: 'actor_not_in_scope' } },
      });
      expect(await call('read_actor', { actorId: 'refund-1' })).toMatchObject({ isError: false });
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.name)).toEqual(IN);
      await expect(client.readResource({ uri: 'agentcharts://actors/billing-1' })).rejects.toThrow(
        /outside this session's scope/,
      );
      const mine = await client.readResource({ uri: 'agentcharts://actors/refund-1' });
      expect(JSON.parse((mine.contents[0] as { text: string }).text)).toMatchObject({
        actorId: 'refund-1',
      });
    } finally {
      await close();
    }
  });
});

describe('listInScope', () => {
  test('jumps from range to range: the rows between cost no reads, and the cursor is always ours', async () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => `m-${String(i).padStart(4, '0')}`).concat([
      'refund-a',
      'refund-b',
      'x-1',
      'z-9',
    ]);
    ids.sort();
    const reads: Array<string | undefined> = [];
    const list = (afterId: string | undefined, limit: number) => {
      reads.push(afterId);
      return Promise.resolve(
        ids
          .filter((id) => afterId === undefined || id > afterId)
          .slice(0, limit)
          .map((id) => ({ id })),
      );
    };
    const page = await listInScope(list, ['refund-*', 'x-1', 'a-*'], { limit: 10 });
    expect(page).toEqual({
      rows: [{ id: 'refund-a' }, { id: 'refund-b' }, { id: 'x-1' }],
      next: undefined,
    });
    // One read per range at most (a-* is empty, refund-* and x-1 each one), never the 2,000 m-… rows.
    expect(reads.length).toBeLessThanOrEqual(3);
    const first = await listInScope(list, ['refund-*', 'x-1'], { limit: 1 });
    expect(first).toEqual({ rows: [{ id: 'refund-a' }], next: 'refund-a' });
  });
});
