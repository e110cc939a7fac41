/**
 * The legal moves as Vercel AI SDK tools, driven by the SDK's own mock language
 * model (`ai/test`): the model calls a move that is not legal, an ill-formed
 * one, then legal ones; each refusal comes back as the tool's result with the
 * typed reason and the moves legal now, and the model recovers to finish the task.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import { aiActiveTools, aiTools } from '../src/agents/ai-sdk.ts';
import { createDurableActor, getRuntime, openStore } from '../src/index.ts';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const callTool = (id: string, toolName: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});

test('a mock model tries an illegal and an ill-formed move, reads the refusals, and finishes the task', async () => {
  const store = openStore('memory:');
  const task = await createDurableActor(taskLifecycle.machine, {
    id: 'refund-ai',
    store,
    input: { taskId: 'refund-ai' },
    schemas: taskLifecycle.events,
  });
  const catalog = { schemas: taskLifecycle.events, samples: taskLifecycle.chart.eventSamples };
  const activeAtStep: string[][] = [];
  const model = new MockLanguageModelV3({
    doGenerate: [
      callTool('1', 'COMPLETE', {}), // not legal while planned
      callTool('2', 'START', {}),
      callTool('3', 'PAUSE_FOR_APPROVAL', { reason: 7 }), // ill-formed
      callTool('4', 'APPROVAL_GRANTED', { approver: 'me' }), // never an agent's move
      callTool('5', 'COMPLETE', { result: 'refunded' }),
      {
        content: [{ type: 'text' as const, text: 'Refund done.' }],
        finishReason: { unified: 'stop' as const, raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });
  const result = await generateText({
    model,
    tools: aiTools(task, catalog),
    prepareStep: () => {
      const activeTools = aiActiveTools(task, catalog);
      activeAtStep.push(activeTools);
      return { activeTools };
    },
    stopWhen: stepCountIs(10),
    prompt: 'Refund order 42.',
  });
  expect(result.text).toBe('Refund done.');
  expect(task.getSnapshot().value).toBe('done');
  // The model was shown only the moves legal at each step.
  expect(activeAtStep[0]).toEqual(['START']);
  expect(activeAtStep[2]).toEqual([
    'BLOCK_ON_DEPENDENCY',
    'COMPLETE',
    'FATAL_ERROR',
    'PAUSE_FOR_APPROVAL',
    'TRANSIENT_ERROR',
  ]);
  const outputs = result.steps.flatMap((s) =>
    s.content.flatMap((c) =>
      c.type === 'tool-result' || c.type === 'tool-error'
        ? [{ tool: c.toolName, type: c.type, output: 'output' in c ? c.output : c.error }]
        : [],
    ),
  );
  // An inactive tool name is refused by the SDK itself or by the tool, never executed.
  expect(outputs[0]?.tool).toBe('COMPLETE');
  expect(
    outputs[0]?.type === 'tool-error' || (outputs[0]?.output as { ok?: boolean }).ok === false,
  ).toBe(true);
  expect(outputs[1]).toMatchObject({ tool: 'START', type: 'tool-result', output: { ok: true } });
  expect(outputs[2]).toMatchObject({
    tool: 'PAUSE_FOR_APPROVAL',
    output: { ok: false, error: { kind: 'invalid_event' } },
  });
  expect(outputs[3]?.tool).toBe('APPROVAL_GRANTED');
  expect(outputs[3]?.type).toBe('tool-error'); // not in this agent's tool set at all
  expect(outputs[4]).toMatchObject({ tool: 'COMPLETE', output: { ok: true, state: 'done' } });
  // Only START and COMPLETE reached the log.
  expect((await store.history('refund-ai')).map((r) => r.eventType)).toEqual([
    'xstate.init',
    'START',
    'COMPLETE',
  ]);
  await getRuntime(store).close();
});
