/**
 * An agent loop over MCP on the refund task (the lifecycle of “Agent State Machine
 * Design”): the model's only tools are the moves `agentcharts mcp` lists for the
 * bound actor, and the list is read again before every step, so an illegal move is
 * never on offer.
 *
 *   npx tsx examples/mcp-agent/agent.ts            # a scripted mock model, no network
 *   AI_GATEWAY_API_KEY=… AGENT_MODEL=openai/gpt-4o-mini npx tsx examples/mcp-agent/agent.ts
 *
 * With `AI_GATEWAY_API_KEY` set, the AI SDK's gateway provider runs the model
 * named by `AGENT_MODEL`; otherwise a mock model plays a script that includes a
 * move the task does not accept, to show the refusal the model reads.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { dynamicTool, generateText, jsonSchema, stepCountIs, type LanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { charts, taskLifecycle } from '../../machines/index.ts';
import { aiMoveTools } from '../../src/agents/ai-sdk.ts';
import { createMcpServer } from '../../src/agents/mcp.ts';
import { getRuntime } from '../../src/durable/open.ts';
import { openStore } from '../../src/store/open.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const step = (toolName: string, input: unknown) => ({
  content: [
    { type: 'tool-call' as const, toolCallId: toolName, toolName, input: JSON.stringify(input) },
  ],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});

/** The script: open the task, start it, try to finish before the refund is made (refused), finish. */
function mockModel(): LanguageModel {
  return new MockLanguageModelV3({
    doGenerate: [
      step('create_actor', {
        machine: 'task-lifecycle',
        actorId: 'refund-42',
        input: { taskId: 'refund-42' },
      }),
      step('START', {}),
      step('DEPENDENCY_RESOLVED', {}),
      step('COMPLETE', { result: { refunded: 42 } }),
      {
        content: [{ type: 'text' as const, text: 'Refund 42 is done.' }],
        finishReason: { unified: 'stop' as const, raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });
}

export async function runAgent(log: (line: string) => void = console.log): Promise<string> {
  const store = openStore('memory:');
  const mcp = createMcpServer({ store, charts });
  const client = new Client({ name: 'refund-agent', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  await client.connect(clientSide);

  // The AI SDK takes its tools once: every tool the session could list (the fixed
  // ones, and each move an agent could make on the chart), each calling the MCP
  // server. `prepareStep` then activates only what the server lists now.
  const call = async (name: string, input: unknown) => {
    const result = await client.callTool({ name, arguments: input as Record<string, unknown> });
    log(`${name} → ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent;
  };
  const fixed = Object.fromEntries(
    (await client.listTools()).tools.map((t) => [
      t.name,
      dynamicTool({
        description: t.description ?? t.name,
        inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
        execute: (input) => call(t.name, input),
      }),
    ]),
  );
  const tools = {
    ...fixed,
    ...aiMoveTools(taskLifecycle.machine, { schemas: taskLifecycle.events }, call),
  };
  const listed = async () => (await client.listTools()).tools.map((t) => t.name);
  const gateway = process.env['AI_GATEWAY_API_KEY'];
  const model: LanguageModel = gateway
    ? (process.env['AGENT_MODEL'] ?? 'openai/gpt-4o-mini')
    : mockModel();
  const result = await generateText({
    model,
    system:
      'You run refund tasks. Use only the tools you are given; they are the moves the task accepts now.',
    prompt: 'Open task refund-42 (task-lifecycle), run it and complete it with the refund result.',
    tools,
    // The menu follows the task's state: read it again before each step.
    prepareStep: async () => ({ activeTools: await listed() }),
    // A move that was not on the menu never reaches the task: the model reads why.
    onStepFinish: ({ content }) => {
      for (const part of content) {
        if (part.type === 'tool-error') log(`${part.toolName} refused: ${String(part.error)}`);
      }
    },
    stopWhen: stepCountIs(12),
  });
  log(result.text);
  await client.close();
  await mcp.close();
  const final = (await store.loadActor('refund-42'))?.state ?? 'missing';
  await getRuntime(store).close();
  await store.close();
  return final;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(`refund-42 ended in ${await runAgent()}`);
}
