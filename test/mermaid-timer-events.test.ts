import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { toMermaid } from '../src/inspect/mermaid.ts';
import { highlightedDiagram } from '../src/server/diagram.ts';
import { runCli } from './support/cli.ts';

const task = catalog['task-lifecycle'];

describe('timer edges named by the chart', () => {
  test('after-edges are labelled with meta.event by default; timerEvents: false keeps the delay only', () => {
    const named = toMermaid(task.machine);
    expect(named).toContain('retrying --> retrying : RETRY (after retryBackoff) [canRetry]');
    expect(named).toContain('MAX_RETRIES_EXCEEDED (after retryBackoff) [else]');
    expect(named).not.toMatch(/xstate\.after/);
    expect(toMermaid(task.machine, { timerEvents: false })).toContain(
      'retrying --> retrying : after retryBackoff [canRetry]',
    );
  });

  test('the dashboard draws the chart with the timer event names', () => {
    const { mermaid } = highlightedDiagram(task.machine, 'retrying', '#eab308');
    expect(mermaid).toContain('RETRY (after retryBackoff)');
  });

  test('agentcharts diagram prints the same; --no-timer-events the delays only', async () => {
    const result = await runCli(['diagram', 'task-lifecycle']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(toMermaid(task.machine));
    const delays = await runCli(['diagram', 'task-lifecycle', '--no-timer-events']);
    expect(delays.stdout).toBe(toMermaid(task.machine, { timerEvents: false }));
  });
});
