/* eslint-disable @typescript-eslint/no-explicit-any -- parsed JSON bodies: their shape is what the expectations check */
/**
 * Every move is attributed: a transition's trail row names the principal that
 * caused it — the signing key over HTTP, the approver's key from the dashboard,
 * the session's key over MCP, the server for the chart's own timers — and the
 * identity fields a chart binds to its sender (ADD_COMMENT's `author` among
 * them) are the key's, whatever the body or the model says. Who may create
 * actors over MCP is a role rule (operator keys), and an MCP failure that is
 * not a typed refusal says nothing of its cause.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catalog, charts } from '../machines/index.ts';
import { createMcpServer } from '../src/agents/mcp.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { createLogger } from '../src/observe/logging.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import type { ApiKey } from '../src/server/auth.ts';
import { principalOf } from '../src/server/http.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { pausedTasks } from './support/actors.ts';
import { approverSession, signedPost } from './support/principals.ts';
import { inMemoryClient } from './support/mcp.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const TOKEN = 'attr-token-0123456789abcdef';
const MANAGER: ApiKey = { id: 'manager', secret: 'manager-secret-0123456789ab', role: 'approver' };
const BOT: ApiKey = { id: 'bot', secret: 'bot-secret-0123456789abcdef', role: 'agent' };
const OPERATOR: ApiKey = { id: 'ops', secret: 'ops-secret-0123456789abcdef', role: 'operator' };

const dir = suiteTempDir('agentcharts-attr-');
let store: Store;
let http: ListeningServer;
let url: string;

/** A plan-workflow actor waiting for its plan's approval. */
async function planAwaitingApproval(id: string): Promise<void> {
  const plan = catalog['plan-workflow'];
  const actor = await createDurableActor(plan.machine, {
    id,
    store,
    input: plan.defaultInput,
    schemas: plan.events,
  });
  await actor.send({ type: 'START', request: 'r', mode: 'interactive' } as never);
  await actor.send({ type: 'PLAN_CREATED', plan: 'p' } as never);
}

beforeAll(async () => {
  store = openStore(`sqlite:${join(dir(), 'attr.db')}`);
  await planAwaitingApproval('plan-1');
  await pausedTasks(store, ['refund-1', 'refund-2']);
  http = await listen(
    createServer({
      store,
      charts,
      keys: [MANAGER, BOT, OPERATOR],
      accessToken: TOKEN,
      pollMs: 0,
      requestLogs: false,
    }),
  );
  url = http.url;
});

afterAll(async () => {
  await http.close();
  await getRuntime(store).close();
  await store.close();
});

/** The last trail entry of an actor, as the API shows it. */
async function lastMove(actorId: string): Promise<Record<string, any>> {
  const response = await fetch(`${url}/api/actors/${actorId}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return ((await response.json()) as { trail: Array<Record<string, any>> }).trail.at(-1)!;
}

async function mcpClient(key: ApiKey): Promise<Client> {
  const client = new Client({ name: 'attribution', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key.id}.${key.secret}` } },
    }),
  );
  return client;
}

const post = (path: string, body: string, key: ApiKey) => signedPost(url, key, path, body);

describe('every move names who made it', () => {
  test('a PLAN_APPROVED over /mcp is recorded with the key, as an HTTP approval and a dashboard decision are', async () => {
    const manager = await mcpClient(MANAGER);
    try {
      await manager.callTool({ name: 'bind_actor', arguments: { actorId: 'plan-1' } });
      const approved = await manager.callTool({ name: 'PLAN_APPROVED', arguments: {} });
      expect(approved.isError).not.toBe(true);
    } finally {
      await manager.close();
    }
    expect(await lastMove('plan-1')).toMatchObject({
      eventType: 'PLAN_APPROVED',
      keyId: 'manager',
      via: 'mcp',
      by: 'manager',
    });
    const callback = JSON.stringify({
      task_id: 'refund-1',
      decision: 'approved',
      approver: 'manager',
      timestamp: 1,
    });
    expect((await post('/api/approval-callback', callback, MANAGER)).status).toBe(200);
    expect(await lastMove('refund-1')).toMatchObject({
      keyId: 'manager',
      via: 'http',
      by: 'manager',
    });
    const cookie = await approverSession(url, MANAGER);
    const decided = await fetch(`${url}/dashboard/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, origin: url },
      body: JSON.stringify({ actorId: 'refund-2', decision: 'denied' }),
    });
    expect(decided.status).toBe(200);
    expect(await lastMove('refund-2')).toMatchObject({
      eventType: 'APPROVAL_DENIED',
      by: 'manager',
    });
  });

  test("the chart's own timers and the runtime's moves are the server's; a local caller's are no one's", () => {
    expect(principalOf({ source: 'timer', delay: 'approvalTimeout' })).toBe('server');
    expect(principalOf({ source: 'recover' })).toBe('server');
    expect(principalOf({ source: 'send', via: 'http', keyId: 'manager' })).toBe('manager');
    expect(principalOf({ source: 'send' })).toBeNull();
  });
});

describe("identity fields are the key's, ADD_COMMENT's author included", () => {
  test('over HTTP: a body naming another author is 403; without one the key is the author', async () => {
    const forged = JSON.stringify({
      actorId: 'plan-1',
      event: { type: 'ADD_COMMENT', author: 'the-ceo', text: 'ship it' },
    });
    const refused = await post('/api/events', forged, BOT);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ reason: 'identity_mismatch', field: 'author' });
    const own = JSON.stringify({
      actorId: 'plan-1',
      event: { type: 'ADD_COMMENT', text: 'on it' },
    });
    expect((await post('/api/events', own, BOT)).status).toBe(200);
    expect(await lastMove('plan-1')).toMatchObject({
      event: { type: 'ADD_COMMENT', author: 'bot', text: 'on it' },
      by: 'bot',
    });
  });

  test('over MCP: the tool has no author to fill, and one the model adds is replaced by the key', async () => {
    const bot = await mcpClient(BOT);
    try {
      await bot.callTool({ name: 'bind_actor', arguments: { actorId: 'plan-1' } });
      const tool = (await bot.listTools()).tools.find((t) => t.name === 'ADD_COMMENT');
      expect(Object.keys((tool?.inputSchema.properties ?? {}) as object)).not.toContain('author');
      await bot.callTool({ name: 'ADD_COMMENT', arguments: { text: 'hi', author: 'the-ceo' } });
    } finally {
      await bot.close();
    }
    expect(await lastMove('plan-1')).toMatchObject({
      event: { type: 'ADD_COMMENT', author: 'bot' },
      via: 'mcp',
    });
  });
});

describe('who may create actors over /mcp is a role rule', () => {
  test("an agent key is neither offered create_actor nor allowed it; an operator's creation is recorded with its key", async () => {
    const args = {
      machine: 'team-workflow',
      actorId: 'team-1',
      input: { members: [{ id: 'bot', role: 'developer' }] },
    };
    const bot = await mcpClient(BOT);
    try {
      expect((await bot.listTools()).tools.map((t) => t.name)).not.toContain('create_actor');
      const refused = await bot.callTool({ name: 'create_actor', arguments: args });
      expect(refused).toMatchObject({
        isError: true,
        structuredContent: { error: { kind: 'role_may_not_create' } },
      });
      expect(await store.loadActor('team-1')).toBeUndefined();
    } finally {
      await bot.close();
    }
    const ops = await mcpClient(OPERATOR);
    try {
      expect((await ops.listTools()).tools.map((t) => t.name)).toContain('create_actor');
      const created = await ops.callTool({
        name: 'create_actor',
        arguments: { ...args, input: catalog['team-workflow'].defaultInput },
      });
      expect(created.isError).not.toBe(true);
    } finally {
      await ops.close();
    }
    const first = (await store.history('team-1'))[0];
    expect(JSON.parse(first?.metadata ?? '{}')).toMatchObject({
      source: 'create',
      via: 'mcp',
      keyId: 'ops',
    });
  });
});

describe('an MCP session on a failing store', () => {
  test('a failure that is not a typed refusal is "internal" with a request id; its message stays in the log', async () => {
    const failing = Object.create(store) as Store;
    failing.listActors = () =>
      Promise.reject(new Error('connect ECONNREFUSED db:5432 password=hunter2'));
    const logged: string[] = [];
    const mcp = createMcpServer({
      store: failing,
      charts,
      logger: createLogger({
        level: 'error',
        destination: { write: (s: string) => logged.push(s) },
      }),
    });
    const { client, close } = await inMemoryClient(mcp);
    try {
      const listed = await client.callTool({ name: 'list_actors', arguments: {} });
      expect(listed).toMatchObject({
        isError: true,
        structuredContent: { ok: false, error: { kind: 'internal', message: 'internal error' } },
      });
      expect(JSON.stringify(listed)).not.toContain('hunter2');
      const requestId = (listed.structuredContent as any).error.requestId as string;
      expect(logged.join('')).toContain(requestId);
      expect(logged.join('')).toContain('hunter2');
      const resources = await client.listResources().catch((e: unknown) => e);
      expect(resources).toMatchObject({ code: -32603 });
      expect(String(resources)).not.toContain('hunter2');
      // A typed refusal keeps its own words beside it.
      expect(await client.callTool({ name: 'read_actor', arguments: {} })).toMatchObject({
        isError: true,
        structuredContent: { error: { kind: 'not_bound' } },
      });
    } finally {
      await close();
    }
  });

  test('read_actor without an id reads the bound actor', async () => {
    const mcp = createMcpServer({ store, charts, bind: 'refund-1' });
    const { client, close } = await inMemoryClient(mcp);
    try {
      const read = await client.callTool({ name: 'read_actor', arguments: {} });
      expect(read).toMatchObject({ structuredContent: { ok: true, actorId: 'refund-1' } });
    } finally {
      await close();
    }
  });
});
