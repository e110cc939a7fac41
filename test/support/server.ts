import { charts } from '../../machines/index.ts';
import { createServer, type AgentchartsServer } from '../../src/server/app.ts';
import type { ServerOptions } from '../../src/server/options.ts';
import type { Store } from '../../src/store/types.ts';

/**
 * A server on `store` with the six charts, read token `token`, no signing keys,
 * no polling and no request logs; `extra` adds or overrides options.
 */
export function readOnlyServer(
  store: Store,
  token: string,
  extra: Partial<ServerOptions> = {},
): AgentchartsServer {
  return createServer({
    store,
    charts,
    keys: [],
    accessToken: token,
    pollMs: 0,
    requestLogs: false,
    ...extra,
  });
}
