/**
 * `agentcharts mcp`: serves a store to an MCP client (Claude Desktop, an IDE, an
 * agent framework) over stdio. The model gets the bound actor's legal moves as
 * its tools, and nothing else it could send. See docs/agents.md.
 */
import type { Command } from 'commander';
import { checkStoredVersions } from './stored-versions.ts';
import { chartsFor, withChartsOption, type ChartsOption } from './charts-option.ts';
import { CliOptionError } from './paths.ts';
import { storeCommand, storeUrlFor } from './store-option.ts';
import { ROLES } from '../core/meta.ts';
import { getRuntime } from '../durable/open.ts';
import { importOptional } from '../core/optional.ts';
import { toMermaid } from '../inspect/mermaid.ts';
import { openStore } from '../store/open.ts';

interface McpOptions extends ChartsOption {
  store?: string;
  db?: string;
  actor?: string;
  role: string;
  identity?: string;
  scope?: string[];
}

/** The SDK is an optional peer dependency: a clear line when it is missing. */
async function loadMcp() {
  const [{ createMcpServer }, { StdioServerTransport }] = await importOptional(
    () =>
      Promise.all([
        import('../agents/mcp.ts'),
        import('@modelcontextprotocol/sdk/server/stdio.js'),
      ]),
    'agentcharts mcp',
    ['@modelcontextprotocol/sdk'],
  );
  return { createMcpServer, StdioServerTransport };
}

export function registerMcp(program: Command): void {
  const command = storeCommand(program, 'mcp')
    .description(
      "Serve the store to an MCP client over stdio: the bound actor's legal moves are the model's tools",
    )
    .option('--actor <id>', 'bind the session to this actor at start')
    .option('--role <role>', `the role the session acts for (${ROLES.join(', ')})`, 'agent')
    .option('--identity <id>', 'who the session acts as (fills voter or approver fields)')
    .option('--scope <pattern...>', 'actor ids the session may see and drive (exact, or prefix*)');
  withChartsOption(command).action(async (opts: McpOptions): Promise<void> => {
    if (opts.db !== undefined && opts.store !== undefined) {
      throw new CliOptionError('--db', 'give --db <file> or --store <url>, not both');
    }
    if (!(ROLES as readonly string[]).includes(opts.role)) {
      throw new CliOptionError('--role', `must be one of ${ROLES.join(', ')}`);
    }
    const charts = await chartsFor(opts);
    const { createMcpServer, StdioServerTransport } = await loadMcp();
    const store = openStore(storeUrlFor(opts));
    try {
      await checkStoredVersions(store, charts);
    } catch (error) {
      await store.close();
      throw error;
    }
    const mcp = createMcpServer({
      store,
      charts,
      role: opts.role,
      identity: opts.identity,
      actors: opts.scope,
      bind: opts.actor,
      diagram: (machine) => toMermaid(machine),
      version: program.version(),
    });
    const transport = new StdioServerTransport();
    // stdout is the protocol's: nothing else may be written there.
    const closed = new Promise<void>((resolve) => {
      mcp.server.onclose = () => resolve();
      process.stdin.once('end', () => resolve());
    });
    await mcp.server.connect(transport);
    await closed;
    await mcp.close();
    await getRuntime(store).close();
    await store.close();
  });
}
