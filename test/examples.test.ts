/** The examples run as shown (with their mock model: no network). */
import { expect, test } from 'vitest';
import { runAgent } from '../examples/mcp-agent/agent.ts';

test('examples/mcp-agent: the agent finishes the refund task; its illegal move is refused', async () => {
  const previous = process.env['AI_GATEWAY_API_KEY'];
  delete process.env['AI_GATEWAY_API_KEY'];
  const lines: string[] = [];
  try {
    expect(await runAgent((line) => lines.push(line))).toBe('done');
  } finally {
    if (previous !== undefined) process.env['AI_GATEWAY_API_KEY'] = previous;
  }
  expect(lines.map((l) => l.split(' ')[0])).toEqual([
    'create_actor',
    'START',
    'DEPENDENCY_RESOLVED',
    'COMPLETE',
    'Refund',
  ]);
  expect(lines[2]).toContain('refused');
});
