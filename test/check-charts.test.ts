import { describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { taskChart } from '../machines/team-workflow/index.ts';
import type { ChartDefinition } from '../src/core/chart.ts';
import type { ChartProperty } from '../src/core/properties.ts';
import { checkChart, type ChartCheck, type PropertyResult } from '../src/check/check-chart.ts';
import { editState, mutant, withEdge, withoutGuard, withoutTimer } from './support/mutate.ts';

const charts = Object.values(catalog) as ChartDefinition[];

/** The source document's title each chart's description cites (“…”, with “(v1.0)” where the chart has it). */
const TITLES =
  /“(Agent State Machine Design|Agent State Machine|Agent Status Models|Agent Workflow State Machine)”/;

describe('the built-in charts state their documents’ promises', () => {
  test.each([...charts, taskChart].map((c) => [c.name, c] as const))(
    '%s declares properties, each citing its source document by title',
    (_name, chart) => {
      const properties = (chart.properties ?? []) as readonly ChartProperty[];
      expect(properties.length).toBeGreaterThanOrEqual(5);
      for (const p of properties) expect(p.description).toMatch(TITLES);
      // The kinds the chart uses, at least the structural three.
      const kinds = new Set(properties.map((p) => p.kind));
      expect(kinds).toContain('noDeadEnd');
      expect(kinds).toContain('terminates');
      expect(kinds).toContain('only');
    },
  );

  test('between them they use every kind of property', () => {
    const kinds = new Set(
      [...charts, taskChart]
        .flatMap((c) => (c.properties ?? []) as readonly ChartProperty[])
        .map((p) => p.kind),
    );
    expect([...kinds].sort()).toEqual(
      [
        'before',
        'bounded',
        'noDeadEnd',
        'only',
        'reachable',
        'terminates',
        'waitsHaveTimeout',
      ].sort(),
    );
  });

  test.each(charts.map((c) => [c.name, c] as const))(
    '%s: every property is proven over the whole state space',
    (_name, chart) => {
      const report = checkChart(chart);
      const all = [report, ...report.children];
      for (const r of all) {
        expect(r.complete).toBe(true);
        expect(r.properties.filter((p) => p.status !== 'proven').map((p) => p.title)).toEqual([]);
      }
      expect(report.notes).toEqual([]);
    },
  );

  test('team-workflow checks its task machine with it, and the task reports what the workflow samples', () => {
    const report = checkChart(catalog['team-workflow']);
    expect(report.children.map((c) => c.machineId)).toEqual(['team-task']);
    expect(report.children[0]?.toParent).toEqual(['TASK_STATUS']);
  });
});

/** The one refuted property of a mutant's check (children included). */
function refutedOf(report: ChartCheck): PropertyResult[] {
  return [report, ...report.children].flatMap((r) =>
    r.properties.filter((p) => p.status === 'refuted'),
  );
}

const labels = (p: PropertyResult | undefined) => p?.counterexample?.steps.map((s) => s.label);

describe('a mutated chart is refuted with its shortest counterexample', () => {
  test('task-lifecycle, guard canRetry removed: retries are no longer bounded', () => {
    const chart = catalog['task-lifecycle'];
    // retry_count now grows without end: the space is infinite, yet the refutation is found.
    const report = checkChart(mutant(chart, withoutGuard(chart.machine, 'canRetry')), {
      limit: 2_000,
    });
    expect(report.complete).toBe(false);
    const [p, ...rest] = refutedOf(report);
    expect(rest.map((r) => r.title)).toEqual([]);
    expect(p?.title).toBe('bounded(RETRY ≤ context.max_retries)');
    expect(labels(p)).toEqual([
      'START',
      ...['TRANSIENT_ERROR', 'RETRY', 'TRANSIENT_ERROR', 'RETRY', 'TRANSIENT_ERROR', 'RETRY'],
      'TRANSIENT_ERROR',
      'RETRY',
    ]);
    expect(p?.counterexample?.steps[1]?.event).toEqual(chart.eventSamples.TRANSIENT_ERROR?.[0]);
  });

  test('task-lifecycle, approval timer dropped: paused waits for a person forever', () => {
    const chart = catalog['task-lifecycle'];
    const machine = editState(chart.machine, 'paused', withoutTimer('approvalTimeout'));
    const refuted = refutedOf(checkChart(mutant(chart, machine)));
    expect(refuted.map((r) => r.title)).toEqual(['waitsHaveTimeout(paused)']);
    expect(labels(refuted[0])).toEqual(['START', 'PAUSE_FOR_APPROVAL']);
    expect(refuted[0]?.counterexample?.states).toEqual(['planned', 'running', 'paused']);
  });

  test('task-lifecycle, bypass edge paused → running: the approval can be skipped', () => {
    const chart = catalog['task-lifecycle'];
    const machine = editState(chart.machine, 'paused', withEdge('DEPENDENCY_RESOLVED', 'running'));
    const refuted = refutedOf(checkChart(mutant(chart, machine)));
    expect(refuted.map((r) => r.title)).toEqual([
      'only(paused → running via APPROVAL_GRANTED)',
      'only(paused → * via APPROVAL_GRANTED, APPROVAL_DENIED, TIMEOUT)',
    ]);
    expect(labels(refuted[0])).toEqual(['START', 'PAUSE_FOR_APPROVAL', 'DEPENDENCY_RESOLVED']);
  });

  test('agent-lifecycle, bypass edge planning → evaluating: a step completes before the plan', () => {
    const chart = catalog['agent-lifecycle'];
    const machine = editState(
      chart.machine,
      'active.planning',
      withEdge('STEP_COMPLETE', 'evaluating'),
    );
    const refuted = refutedOf(checkChart(mutant(chart, machine)));
    expect(refuted.map((r) => r.title)).toEqual([
      'before(PLAN_COMPLETE, STEP_COMPLETE, reset by START)',
    ]);
    expect(labels(refuted[0])).toEqual(['START', 'INIT_COMPLETE', 'STEP_COMPLETE']);
  });

  test('agent-runtime, bypass edge Paused → Running: the run resumes without the user', () => {
    const chart = catalog['agent-runtime'];
    const machine = editState(chart.machine, 'Paused', withEdge('StartThinking', 'Running'));
    const refuted = refutedOf(checkChart(mutant(chart, machine)));
    expect(refuted.map((r) => r.title)).toEqual(['only(Paused → Running via UserInput)']);
    expect(refuted[0]?.counterexample?.steps.map((s) => s.event)).toEqual([
      { type: 'AgentInitialized', waitForInput: true },
      { type: 'StartThinking' },
    ]);
  });

  test('agent-status, guard isStatus removed: an agent runs before it initialized', () => {
    const chart = catalog['agent-status'];
    const refuted = refutedOf(checkChart(mutant(chart, withoutGuard(chart.machine, 'isStatus'))));
    const before = refuted.find((r) => r.property.kind === 'before');
    expect(before?.counterexample?.steps.map((s) => s.event)).toEqual([
      chart.eventSamples.STATUS_UPDATE?.find((e) => e.status === 'running'),
    ]);
  });

  test('plan-workflow, bypass edge PLANNING → AWAITING_TASKS_APPROVAL: tasks before the plan is approved', () => {
    const chart = catalog['plan-workflow'];
    const machine = editState(
      chart.machine,
      'PLANNING',
      withEdge('TASKS_CREATED', 'AWAITING_TASKS_APPROVAL'),
    );
    const refuted = refutedOf(checkChart(mutant(chart, machine)));
    expect(refuted.map((r) => r.title)).toEqual([
      'before(PLAN_APPROVED, TASKS_CREATED, reset by RESET)',
    ]);
    expect(labels(refuted[0])).toEqual(['START', 'TASKS_CREATED']);
  });

  test('team-workflow, guard isApproval removed: a request for changes approves the plan', () => {
    const chart = catalog['team-workflow'];
    const refuted = refutedOf(checkChart(mutant(chart, withoutGuard(chart.machine, 'isApproval'))));
    const plan = refuted.find((r) => r.title.startsWith('only(PLANNING → TASK_CREATION'));
    expect(labels(plan)).toEqual(['START', 'PLAN_DRAFTED', 'LEADER_DECISION']);
    expect(plan?.counterexample?.steps[2]?.event).toMatchObject({
      type: 'LEADER_DECISION',
      decision: 'request_changes',
    });
  });

  test('team-workflow, its task’s timeout dropped: the child chart is refuted with it', () => {
    const chart = catalog['team-workflow'];
    const task = mutant(
      taskChart,
      editState(taskChart.machine, 'IN_PROGRESS', withoutTimer('taskTimeout')),
    );
    const refuted = refutedOf(checkChart({ ...chart, children: [task] } as ChartDefinition));
    expect(refuted.map((r) => r.title)).toEqual(['waitsHaveTimeout(IN_PROGRESS)']);
    expect(labels(refuted[0])).toEqual(['TASK_STARTED']);
  });
});
