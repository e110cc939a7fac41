/**
 * MCP over Streamable HTTP at `/mcp`, with the same keys and roles as the rest
 * of the server: a client authenticates with `Authorization: Bearer
 * <key id>.<secret>` (MCP clients send headers, they do not sign bodies), and
 * its session acts for the key's role, as the key's identity, within the key's
 * actor list; an agent key is never offered an approval, and only an operator's
 * key creates actors. Every move is recorded with the key (`via: 'mcp'`). Wrong
 * secrets are throttled per client and per key. Sessions are per key, bounded
 * in number, and end after an idle hour. The MCP SDK is an optional peer
 * dependency, loaded on the first request (501 without it).
 */
import type { Context, Hono } from 'hono';
import { randomUUID } from 'node:crypto';
import type { ApiKey } from '../auth.ts';
import { clientAddress } from '../client-address.ts';
import { sameToken } from '../http.ts';
import type { ServerKit } from '../kit.ts';
import { tooManyFailures, type ServerEnv } from '../middleware/auth.ts';
import { toMermaid } from '../../inspect/mermaid.ts';

interface Session {
  keyId: string;
  handle: (request: Request) => Promise<Response>;
  close: () => Promise<void>;
  lastUsed: number;
}

const MAX_SESSIONS_PER_KEY = 32;
const MAX_SESSIONS = 1_000;
const IDLE_MS = 60 * 60 * 1000;

async function loadSdk() {
  try {
    const [{ createMcpServer, CREATOR_ROLES }, { WebStandardStreamableHTTPServerTransport }] =
      await Promise.all([
        import('../../agents/mcp.ts'),
        import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
      ]);
    return { createMcpServer, CREATOR_ROLES, WebStandardStreamableHTTPServerTransport };
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

export function registerMcpRoute(app: Hono<ServerEnv>, kit: ServerKit): () => Promise<void> {
  const { options, chartList, verifier, fail, logger, throttle } = kit;
  const sessions = new Map<string, Session>();
  let sdk: Awaited<ReturnType<typeof loadSdk>> | null = null;

  /**
   * The keys `Bearer <key id>.<secret>` may name. A key id may itself hold dots
   * (`team.lead`): each dot is tried as the separator, so every valid key id works.
   */
  const namedKeys = (token: string): ApiKey[] => {
    const keys: ApiKey[] = [];
    for (let dot = token.indexOf('.'); dot > 0; dot = token.indexOf('.', dot + 1)) {
      const key = verifier.key(token.slice(0, dot));
      if (key) keys.push(key);
    }
    return keys;
  };

  const unauthorized = (c: Context) =>
    c.json({ error: 'unauthorized', hint: 'Authorization: Bearer <key id>.<secret>' }, 401, {
      'www-authenticate': 'Bearer',
    });

  const sweep = async (now: number): Promise<void> => {
    for (const [id, s] of sessions) {
      if (now - s.lastUsed > IDLE_MS) {
        sessions.delete(id);
        await s.close();
      }
    }
  };

  app.all('/mcp', async (c) => {
    const header = c.req.header('authorization');
    if (!header?.startsWith('Bearer ')) return unauthorized(c);
    const token = header.slice(7).trim();
    const candidates = namedKeys(token);
    // Guesses are throttled per client and per key named (its owner, elsewhere, still gets in).
    const client = clientAddress(c, options.trustProxy === true).address;
    const named = candidates[0]?.id ?? token.split('.')[0] ?? '';
    const wait = throttle.check(client, named);
    if (wait !== undefined) return tooManyFailures(c, wait);
    const key = candidates.find((k) => sameToken(token.slice(k.id.length + 1), k.secret));
    if (!key) {
      throttle.fail(client, named);
      return unauthorized(c);
    }
    sdk ??= await loadSdk();
    if (!sdk) {
      return fail(c, 501, {
        error: 'mcp_unavailable',
        reason: 'install @modelcontextprotocol/sdk (an optional peer dependency)',
      });
    }
    const now = Date.now();
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session || now - session.lastUsed > IDLE_MS) {
        return fail(c, 404, { error: 'mcp_session_not_found' });
      }
      // A session belongs to the key that opened it.
      if (session.keyId !== key.id)
        return fail(c, 403, { error: 'forbidden', reason: 'session_of_another_key' });
      session.lastUsed = now;
      const response = await session.handle(c.req.raw);
      if (c.req.method === 'DELETE') sessions.delete(sessionId);
      return response;
    }
    // A new session (the transport answers 400 to anything but `initialize`); idle
    // sessions end here, so the cap counts only live ones.
    await sweep(now);
    const mine = [...sessions.values()].filter((s) => s.keyId === key.id).length;
    if (mine >= MAX_SESSIONS_PER_KEY || sessions.size >= MAX_SESSIONS) {
      return fail(c, 429, { error: 'too_many_mcp_sessions', retryable: true });
    }
    const mcp = sdk.createMcpServer({
      store: options.store,
      charts: chartList,
      role: key.role,
      identity: key.id,
      actors: key.actors,
      diagram: (machine) => toMermaid(machine),
      // Who may create actors is a role rule (docs/agents.md); every move names its key.
      mayCreate: sdk.CREATOR_ROLES.includes(key.role),
      metadata: { via: 'mcp', keyId: key.id },
      logger,
    });
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, {
          keyId: key.id,
          handle: (request) => transport.handleRequest(request),
          close: () => mcp.close(),
          lastUsed: Date.now(),
        });
        logger.info({ keyId: key.id, role: key.role }, 'MCP session opened');
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    await mcp.server.connect(transport);
    const response = await transport.handleRequest(c.req.raw);
    // Not an initialize (or a refused one): nothing to keep.
    if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) await mcp.close();
    return response;
  });

  return async () => {
    for (const s of sessions.values()) await s.close();
    sessions.clear();
  };
}
