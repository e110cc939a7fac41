import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { toMermaid } from '../src/inspect/mermaid.ts';
import { highlightedDiagram } from '../src/server/diagram.ts';
import { runCli } from './support/cli.ts';

const task = catalog['task-lifecycle'];

describe('timer edges named by the chart', () => {
  test('timerEvents labels after-edges with meta.event; the default keeps the delay', () => {
    const named = toMermaid(task.machine, { timerEvents: true });
    expect(named).toContain('retrying --> retrying : RETRY (after retryBackoff) [canRetry]');
    expect(named).toContain('MAX_RETRIES_EXCEEDED (after retryBackoff) [else]');
    expect(named).not.toMatch(/xstate\.after/);
    expect(toMermaid(task.machine)).toContain('after retryBackoff [canRetry]');
  });

  test('the dashboard draws the chart with the timer event names', () => {
    const { mermaid } = highlightedDiagram(task.machine, 'retrying', '#eab308');
    expect(mermaid).toContain('RETRY (after retryBackoff)');
  });

  test('agentcharts diagram --timer-events prints the same', async () => {
    const result = await runCli(['diagram', 'task-lifecycle', '--timer-events']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(toMermaid(task.machine, { timerEvents: true }));
  });
});
