import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { createMcpServer } from '../../src/agents/mcp.ts';

/** The MCP SDK's client connected in memory to `mcp`; `close` ends both. */
export async function inMemoryClient(mcp: ReturnType<typeof createMcpServer>) {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  await client.connect(clientSide);
  return {
    client,
    close: async () => {
      await client.close();
      await mcp.close();
    },
  };
}
