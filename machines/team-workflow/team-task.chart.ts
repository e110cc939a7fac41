/**
 * The chart of one team task (team-task.machine.ts) as a child of team-workflow:
 * its samples, an input and its properties, so that `agentcharts check
 * team-workflow` proves the task's promises with the workflow's.
 */
import { defineChart } from '../../src/core/chart.ts';
import { teamTask } from './team-task.machine.ts';
import { taskProperties } from './team-task.properties.ts';

export const taskChart = defineChart(teamTask, {
  name: 'team-task',
  description:
    'One task of a team workflow (“Agent Workflow State Machine”: ASSIGNED → IN_PROGRESS → DONE / FAILED), with blockers, bounded retries and a timeout.',
  eventSamples: {
    TASK_STARTED: [
      { type: 'TASK_STARTED', taskId: 't1' },
      { type: 'TASK_STARTED', taskId: 't2' },
    ],
    TASK_DONE: [{ type: 'TASK_DONE', taskId: 't1', summary: 'Toggle merged' }],
    TASK_FAILED: [
      { type: 'TASK_FAILED', taskId: 't1', reason: 'Flaky CI', retryable: true },
      { type: 'TASK_FAILED', taskId: 't1', reason: 'Design rejected' },
    ],
    BLOCKER_RAISED: [{ type: 'BLOCKER_RAISED', taskId: 't1', description: 'Waiting on tokens' }],
    BLOCKER_RESOLVED: [{ type: 'BLOCKER_RESOLVED', taskId: 't1' }],
  },
  defaultInput: {
    taskId: 't1',
    title: 'Toggle component',
    role: 'developer',
    assignee: 'dev',
    attempt: 1,
    maxRetries: 2,
    timeoutMs: 4 * 60 * 60 * 1000,
  },
  properties: taskProperties,
});
