import { describe, expect, it } from 'vitest';
import { createActor, type SnapshotFrom } from 'xstate';
import { InvalidEventError, InvalidTransitionError } from '../src/core/errors.ts';
import { createStrictActor } from '../src/strict/strict-actor.ts';
import { stateLabel } from '../src/core/state.ts';
import { roundTripDifferences } from '../src/testing/round-trip.ts';
import { exploreMachine, transitionTable } from '../src/testing/explore.ts';
import * as planWorkflow from '../machines/plan-workflow/index.ts';
import { teamTask, type TeamTaskInput } from '../machines/team-workflow/team-task.machine.ts';
import { taskEvents, type TeamTaskEvent } from '../machines/team-workflow/team-workflow.types.ts';
import {
  chart,
  defaultInput,
  events,
  machine,
  reachesThreshold,
  recovery,
  serializeState,
  type TeamWorkflowEvent,
  type TeamWorkflowInput,
  type Threshold,
} from '../machines/team-workflow/index.ts';

type Snap = SnapshotFrom<typeof machine>;

// ---------------------------------------------------------------------------
// Seed 004, "Proposed Team State Machine", transcribed as data.
// ---------------------------------------------------------------------------

type SeedEdge = readonly [from: string, event: string, to: string];
interface SeedComposite {
  initial: string;
  states: readonly string[];
  edges: readonly SeedEdge[];
  /** Substates that end the composite: `[*]` targets, plus All_Complete (README decision). */
  finals: readonly string[];
}

const SEED_TOP: readonly SeedEdge[] = [
  ['IDLE', 'START', 'PLANNING'],
  ['PLANNING', 'PLAN_APPROVED', 'TASK_CREATION'],
  ['TASK_CREATION', 'TASKS_APPROVED', 'EXECUTION'],
  ['EXECUTION', 'WORK_COMPLETE', 'VERIFICATION'],
  ['VERIFICATION', 'VERIFIED', 'COMPLETE'],
];
const SEED_COMPOSITES: Readonly<Record<string, SeedComposite>> = {
  PLANNING: {
    initial: 'Architect_Drafts',
    states: ['Architect_Drafts', 'Team_Review'],
    edges: [
      ['Architect_Drafts', 'PLAN_DRAFTED', 'Team_Review'],
      ['Team_Review', 'CHANGES_REQUESTED', 'Architect_Drafts'],
      ['Team_Review', 'CONSENSUS_APPROVED', '[*]'],
    ],
    finals: ['[*]'],
  },
  TASK_CREATION: {
    initial: 'Architect_Decomposes',
    states: ['Architect_Decomposes', 'Team_Review'],
    edges: [
      ['Architect_Decomposes', 'TASKS_DRAFTED', 'Team_Review'],
      ['Team_Review', 'CONSENSUS_APPROVED', '[*]'],
    ],
    finals: ['[*]'],
  },
  EXECUTION: {
    initial: 'Dispatch',
    states: ['Dispatch', 'Parallel_Work', 'Blocked', 'All_Complete'],
    edges: [
      ['Dispatch', 'TASKS_ASSIGNED', 'Parallel_Work'],
      ['Parallel_Work', 'ALL_DONE', 'All_Complete'],
      ['Parallel_Work', 'BLOCKER_RAISED', 'Blocked'],
      ['Blocked', 'BLOCKER_RESOLVED', 'Parallel_Work'],
    ],
    finals: ['All_Complete'],
  },
  VERIFICATION: {
    initial: 'QA_Review',
    states: ['QA_Review', 'Cross_Review'],
    edges: [
      ['QA_Review', 'QA_PASS', 'Cross_Review'],
      ['QA_Review', 'QA_FAIL', 'EXECUTION'],
      ['Cross_Review', 'ALL_APPROVED', '[*]'],
    ],
    finals: ['[*]'],
  },
};
/**
 * Seed events that are outcomes, not messages (README "Seed events realised by
 * other events"): the machine event that produces each one.
 */
const REALISED_BY: Readonly<Record<string, readonly string[]>> = {
  // A Team Leader's decision stands in for the vote (seed 004: "Team Leader or Consensus Vote").
  CONSENSUS_APPROVED: ['VOTE', 'LEADER_DECISION'],
  CHANGES_REQUESTED: ['VOTE', 'LEADER_DECISION'],
  // Each task is its own actor; its reports reach the workflow as TASK_STATUS.
  ALL_DONE: ['TASK_STATUS'],
  BLOCKER_RAISED: ['TASK_STATUS'],
  BLOCKER_RESOLVED: ['TASK_STATUS'],
  ALL_APPROVED: ['CROSS_REVIEW'],
};

function enter(state: string): string {
  const composite = SEED_COMPOSITES[state];
  return composite ? `${state}.${composite.initial}` : state;
}

/** Seed edges between resting leaf states, completions folded into the edge that causes them. */
function flattenSeed(): SeedEdge[] {
  const out: SeedEdge[] = [];
  for (const [from, event, to] of SEED_TOP) {
    if (!SEED_COMPOSITES[from]) out.push([from, event, enter(to)]);
  }
  for (const [name, composite] of Object.entries(SEED_COMPOSITES)) {
    for (const [from, event, to] of composite.edges) {
      const source = `${name}.${from}`;
      if (composite.finals.includes(to)) {
        const completion = SEED_TOP.find(([f]) => f === name);
        if (!completion) throw new Error(`no completion edge for ${name}`);
        out.push([source, event, enter(completion[2])]);
      } else if (composite.states.includes(to)) {
        out.push([source, event, `${name}.${to}`]);
      } else {
        out.push([source, event, enter(to)]);
      }
    }
  }
  return out;
}

const SEED_ROWS = flattenSeed().flatMap(([from, event, to]) =>
  (REALISED_BY[event] ?? [event]).map((e) => `${from} --${e}--> ${to}`),
);

/** Resting states: seed leaves minus the transient finals, plus COMPLETE. */
const RESTING = [
  'IDLE',
  ...Object.entries(SEED_COMPOSITES).flatMap(([name, c]) =>
    c.states.filter((s) => !c.finals.includes(s)).map((s) => `${name}.${s}`),
  ),
  'COMPLETE',
];
// COMPLETE takes the global events too, as in plan-workflow (issue 12).
const NON_FINAL = RESTING;

/** Every edge the seed does not draw; the README's "Extra edges" lists the same. */
const EXTRAS = [
  ...NON_FINAL.flatMap((s) => [
    `${s} --ARTIFACT_ADDED--> ${s}`,
    `${s} --ADD_COMMENT--> ${s}`,
    `${s} --CLEAR_COMMENTS--> ${s}`,
    `${s} --RESET--> IDLE`,
  ]),
  'PLANNING.Team_Review --VOTE--> PLANNING.Team_Review',
  'TASK_CREATION.Team_Review --VOTE--> TASK_CREATION.Team_Review',
  'TASK_CREATION.Team_Review --VOTE--> TASK_CREATION.Architect_Decomposes',
  'TASK_CREATION.Team_Review --LEADER_DECISION--> TASK_CREATION.Architect_Decomposes',
  // A task's progress, or a second blocker, while the team works or waits.
  'EXECUTION.Parallel_Work --TASK_STATUS--> EXECUTION.Parallel_Work',
  'EXECUTION.Blocked --TASK_STATUS--> EXECUTION.Blocked',
  'VERIFICATION.Cross_Review --CROSS_REVIEW--> VERIFICATION.Cross_Review',
  'VERIFICATION.Cross_Review --CROSS_REVIEW--> EXECUTION.Dispatch',
];

// ---------------------------------------------------------------------------
// Exploration with a small team (3 voters, 2 tasks) and a finite projection.
// ---------------------------------------------------------------------------

const input: TeamWorkflowInput = defaultInput;
const samples = chart.eventSamples;
const explored = exploreMachine(machine, { events: samples, input, serializeState });
const reachable = [...explored.states.values()];

function restore(snapshot: Snap) {
  return createStrictActor(machine, {
    id: 'team-1',
    input,
    snapshot: JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot))) as Snap,
  }).start();
}

/** A step of a run: an event of the workflow, or of one of its task actors. */
type Step = TeamWorkflowEvent | TeamTaskEvent;
const TASK_EVENT_TYPES: ReadonlySet<string> = new Set(Object.keys(taskEvents));

function isTaskEvent(step: Step): step is TeamTaskEvent {
  return TASK_EVENT_TYPES.has(step.type);
}

/** Sends a task event to the task's own actor (a child of the workflow named by the task id). */
function sendToTask(
  actor: ReturnType<typeof createStrictActor<typeof machine>>,
  step: TeamTaskEvent,
) {
  const child = (actor.getSnapshot().children as Record<string, { send(e: TeamTaskEvent): void }>)[
    step.taskId
  ];
  if (!child) throw new Error(`no task actor ${step.taskId}`);
  child.send(step);
}

function drive(steps: readonly Step[], team: TeamWorkflowInput = input) {
  const actor = createStrictActor(machine, { id: 'team-1', input: team }).start();
  for (const step of steps) {
    if (isTaskEvent(step)) sendToTask(actor, step);
    else actor.send(step);
  }
  return actor;
}

const taskInput: TeamTaskInput = {
  taskId: 't1',
  title: 'Toggle',
  role: 'developer',
  assignee: 'dev',
  attempt: 1,
  maxRetries: 2,
  timeoutMs: 60_000,
};

function rejection(send: () => unknown): unknown {
  try {
    send();
  } catch (error) {
    return error;
  }
  throw new Error('expected the event to be rejected');
}

const vote = (
  voterId: string,
  decision: 'approve' | 'request_changes' = 'approve',
): TeamWorkflowEvent => ({ type: 'VOTE', voterId, decision });
/** Two of the three voters: two thirds, the default threshold. */
const approveAll: TeamWorkflowEvent[] = [vote('arch'), vote('dev')];
const twoTasks: TeamWorkflowEvent = {
  type: 'TASKS_DRAFTED',
  by: 'arch',
  tasks: [
    { taskId: 't1', title: 'Toggle', role: 'developer' },
    { taskId: 't2', title: 'Checklist', role: 'qa' },
  ],
};
const toPlanReview: TeamWorkflowEvent[] = [
  { type: 'START', request: 'Dark mode' },
  { type: 'PLAN_DRAFTED', by: 'arch', plan: 'v1' },
];
const toTaskReview: TeamWorkflowEvent[] = [...toPlanReview, ...approveAll, twoTasks];
const toExecution: TeamWorkflowEvent[] = [...toTaskReview, ...approveAll];
const dispatchBoth: TeamWorkflowEvent = {
  type: 'TASKS_ASSIGNED',
  assignments: [
    { taskId: 't1', assignee: 'dev' },
    { taskId: 't2', assignee: 'qa' },
  ],
};
const toWork: Step[] = [
  ...toExecution,
  dispatchBoth,
  { type: 'TASK_STARTED', taskId: 't1' },
  { type: 'TASK_STARTED', taskId: 't2' },
];
const toVerification: Step[] = [
  ...toWork,
  { type: 'TASK_DONE', taskId: 't1' },
  { type: 'TASK_DONE', taskId: 't2' },
];
const toCrossReview: Step[] = [...toVerification, { type: 'QA_PASS', by: 'qa' }];

describe('team-workflow conformance with seed 004 (team diagram)', () => {
  const table = transitionTable(machine, { events: samples, input, serializeState });

  it('has every edge of the seed diagram', () => {
    for (const row of SEED_ROWS) expect(table, row).toContain(row);
  });

  it('has no edge beyond the seed and the recorded extras', () => {
    expect(EXTRAS.filter((e) => SEED_ROWS.includes(e))).toEqual([]);
    expect(table).toEqual([...new Set([...SEED_ROWS, ...EXTRAS])].sort());
  });

  it('rests only in the seed states', () => {
    const labels = new Set(reachable.map((s) => stateLabel(s.value)));
    expect([...labels].sort()).toEqual([...RESTING].sort());
  });

  it('declares a schema for every event type its transitions name, and samples for each', () => {
    const named = machine.events.filter((t) => !t.startsWith('xstate.'));
    expect([...new Set(named)].sort()).toEqual(Object.keys(events).sort());
    for (const type of Object.keys(events)) {
      expect(samples[type as TeamWorkflowEvent['type']]?.length, type).toBeGreaterThan(0);
    }
  });
});

describe('team-workflow reuses the single-agent vocabulary', () => {
  it('shares the global event schemas with plan-workflow', () => {
    for (const type of ['ARTIFACT_ADDED', 'ADD_COMMENT', 'CLEAR_COMMENTS', 'RESET'] as const) {
      expect(events[type]).toBe(planWorkflow.events[type]);
    }
  });

  it("takes START from plan-workflow's START without the mode", () => {
    expect(Object.keys(events.START.shape).sort()).toEqual(
      Object.keys(planWorkflow.events.START.shape)
        .filter((k) => k !== 'mode')
        .sort(),
    );
    expect(
      events.START.safeParse({ type: 'START', request: 'r', mode: 'autonomous' }).success,
    ).toBe(false);
  });

  it('gives the global events the same effect on artifacts and comments as plan-workflow', () => {
    const steps = [
      { type: 'ARTIFACT_ADDED', artifactId: 'plan', name: 'Plan' },
      { type: 'ADD_COMMENT', author: 'dev', text: 'ok', artifactId: 'plan' },
      { type: 'ARTIFACT_ADDED', artifactId: 'plan', name: 'Plan v2', uri: 'file:///p' },
      { type: 'ADD_COMMENT', author: 'qa', text: 'fine' },
    ] as const;
    const team = drive(steps);
    const single = createStrictActor(planWorkflow.machine, { input: {} }).start();
    for (const step of steps) single.send(step);
    const t = team.getSnapshot().context;
    const p = single.getSnapshot().context;
    expect({ artifacts: t.artifacts, comments: t.comments }).toEqual({
      artifacts: p.artifacts,
      comments: p.comments,
    });
    expect(team.send({ type: 'CLEAR_COMMENTS' }).context.comments).toEqual([]);
  });
});

describe('team-workflow global events', () => {
  const active = reachable.filter((s) => s.status === 'active');

  it('add artifacts and comments and clear comments in every non-final state without leaving it', () => {
    for (const s of active) {
      const actor = restore(s);
      const before = actor.getSnapshot().context;
      const a = actor.send({ type: 'ARTIFACT_ADDED', artifactId: 'x9', name: 'Report' });
      expect(a.value).toEqual(s.value);
      expect(a.context.artifacts).toHaveLength(before.artifacts.length + 1);
      const c = actor.send({ type: 'ADD_COMMENT', author: 'qa', text: 'note' });
      expect(c.value).toEqual(s.value);
      expect(c.context.comments.at(-1)).toEqual({ author: 'qa', text: 'note', artifactId: null });
      const cleared = actor.send({ type: 'CLEAR_COMMENTS' });
      expect(cleared.context.comments).toEqual([]);
      expect(cleared.context.tasks).toEqual(before.tasks);
    }
  });

  it('resets to IDLE with the initial context, team kept, from every non-final state', () => {
    const initial = createActor(machine, { input }).getSnapshot().context;
    for (const s of active) {
      const next = restore(s).send({ type: 'RESET' });
      expect(next.value).toBe('IDLE');
      expect(next.context).toEqual(initial);
    }
  });

  it('once COMPLETE takes only the global events, and RESET starts over, as plan-workflow', () => {
    const actor = drive([
      ...toCrossReview,
      { type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'qa', decision: 'approve' },
      { type: 'CROSS_REVIEW', taskId: 't2', reviewerId: 'dev', decision: 'approve' },
    ]);
    expect(actor.getSnapshot().value).toBe('COMPLETE');
    expect(actor.getSnapshot().hasTag('terminal')).toBe(true);
    expect(rejection(() => actor.send(vote('arch')))).toBeInstanceOf(InvalidTransitionError);
    expect(actor.send({ type: 'RESET' }).value).toBe('IDLE');
  });
});

/** The fewest approvals of `voters` that reach `threshold`. */
function approvalsNeeded(voters: number, threshold: Threshold): number {
  for (let k = 1; k <= voters; k++) if (reachesThreshold(k, voters, threshold)) return k;
  return Infinity;
}

describe('team-workflow consensus votes', () => {
  it('passes with two of three voters at the default two thirds, compared exactly', () => {
    const actor = drive([...toPlanReview, vote('arch')]);
    expect(actor.getSnapshot().value).toEqual({ PLANNING: 'Team_Review' });
    expect(actor.getSnapshot().context.votes).toEqual({ arch: 'approve' });
    const next = actor.send(vote('dev'));
    expect(next.value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
    expect(next.context.votes).toEqual({});
  });

  it('needs, at 2/3, this many approvals for teams of 1 to 7 (the README table)', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => approvalsNeeded(n, '2/3'))).toEqual([
      1, 2, 2, 3, 4, 4, 5,
    ]);
    // A literal 0.67 is 67 %: 2 of 3 fall short, as the number says.
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => approvalsNeeded(n, 0.67))).toEqual([
      1, 2, 3, 3, 4, 5, 5,
    ]);
    expect(reachesThreshold(1, 2, '2/3')).toBe(false);
    expect(reachesThreshold(4, 6, '2/3')).toBe(true);
  });

  it('lets the Team Leader approve or send back instead of a vote; nobody else', () => {
    const approved = drive([
      ...toPlanReview,
      vote('arch', 'request_changes'),
      { type: 'PLAN_DRAFTED', by: 'arch', plan: 'v2' },
      { type: 'LEADER_DECISION', leaderId: 'lead', decision: 'approve', comment: 'Go' },
    ]);
    expect(approved.getSnapshot().value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
    expect(approved.getSnapshot().context.comments.at(-1)).toMatchObject({
      author: 'lead',
      text: 'Go',
    });
    const sentBack = drive([
      ...toTaskReview,
      { type: 'LEADER_DECISION', leaderId: 'lead', decision: 'request_changes' },
    ]);
    expect(sentBack.getSnapshot().value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
    expect(sentBack.getSnapshot().context.revisions).toEqual({ plan: 0, tasks: 1 });
    const notLeader = drive(toPlanReview);
    expect(
      rejection(() =>
        notLeader.send({ type: 'LEADER_DECISION', leaderId: 'arch', decision: 'approve' }),
      ),
    ).toBeInstanceOf(InvalidTransitionError);
  });

  it('approves once approvals over voters reach a lower threshold', () => {
    const actor = drive([...toPlanReview, vote('arch'), vote('dev')], { ...input, threshold: 0.5 });
    expect(actor.getSnapshot().value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
  });

  it('counts only the declared voters', () => {
    const team: TeamWorkflowInput = { ...input, voters: ['arch', 'qa'], threshold: 1 };
    const actor = drive(toPlanReview, team);
    const error = rejection(() => actor.send(vote('dev')));
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({ state: 'PLANNING.Team_Review', eventType: 'VOTE' });
    actor.send(vote('arch'));
    expect(actor.send(vote('qa')).value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
  });

  it('rejects a second vote by the same voter and a vote by a stranger', () => {
    const actor = drive([...toPlanReview, vote('arch')]);
    const before = actor.getSnapshot();
    expect(rejection(() => actor.send(vote('arch')))).toBeInstanceOf(InvalidTransitionError);
    expect(rejection(() => actor.send(vote('arch', 'request_changes')))).toBeInstanceOf(
      InvalidTransitionError,
    );
    expect(rejection(() => actor.send(vote('mallory')))).toBeInstanceOf(InvalidTransitionError);
    expect(actor.getSnapshot()).toBe(before);
  });

  it('reopens drafting on a change request and lets everyone vote again on the new draft', () => {
    const actor = drive([
      ...toPlanReview,
      vote('arch'),
      { type: 'VOTE', voterId: 'qa', decision: 'request_changes', comment: 'Add tests' },
    ]);
    const snap = actor.getSnapshot();
    expect(snap.value).toEqual({ PLANNING: 'Architect_Drafts' });
    expect(snap.context.votes).toEqual({});
    expect(snap.context.revisions).toEqual({ plan: 1, tasks: 0 });
    expect(snap.context.comments).toEqual([{ author: 'qa', text: 'Add tests', artifactId: null }]);
    actor.send({ type: 'PLAN_DRAFTED', by: 'arch', plan: 'v2' });
    for (const v of approveAll) actor.send(v);
    expect(actor.getSnapshot().value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
    expect(actor.getSnapshot().context.plan).toBe('v2');
  });

  it('reopens task decomposition on a change request to the task list', () => {
    const actor = drive([...toTaskReview, vote('dev', 'request_changes')]);
    expect(actor.getSnapshot().value).toEqual({ TASK_CREATION: 'Architect_Decomposes' });
    expect(actor.getSnapshot().context.revisions).toEqual({ plan: 0, tasks: 1 });
  });

  it('lets only the architect draft the plan and the task list', () => {
    const actor = drive([{ type: 'START', request: 'r' }]);
    expect(
      rejection(() => actor.send({ type: 'PLAN_DRAFTED', by: 'dev', plan: 'mine' })),
    ).toMatchObject({ name: 'InvalidTransitionError', state: 'PLANNING.Architect_Drafts' });
    const later = drive([...toPlanReview, ...approveAll]);
    expect(rejection(() => later.send({ ...twoTasks, by: 'qa' }))).toBeInstanceOf(
      InvalidTransitionError,
    );
  });

  it('rejects a task list with a role nobody in the team has', () => {
    const team: TeamWorkflowInput = {
      members: [
        { id: 'arch', role: 'architect' },
        { id: 'qa', role: 'qa' },
      ],
    };
    const actor = drive(
      [
        { type: 'START', request: 'r' },
        { type: 'PLAN_DRAFTED', by: 'arch', plan: 'p' },
        vote('arch'),
        vote('qa'),
      ],
      team,
    );
    expect(rejection(() => actor.send(twoTasks))).toBeInstanceOf(InvalidTransitionError);
  });
});

describe('team-workflow per-task work', () => {
  it('creates one PENDING task per drafted task when the task list is approved', () => {
    const snap = drive(toExecution).getSnapshot();
    expect(snap.value).toEqual({ EXECUTION: 'Dispatch' });
    expect(Object.values(snap.context.tasks).map((t) => [t.taskId, t.status, t.attempt])).toEqual([
      ['t1', 'PENDING', 1],
      ['t2', 'PENDING', 1],
    ]);
  });

  it('dispatches only when every pending task goes to a member of its role', () => {
    const actor = drive(toExecution);
    const partial: TeamWorkflowEvent = {
      type: 'TASKS_ASSIGNED',
      assignments: [{ taskId: 't1', assignee: 'dev' }],
    };
    const wrongRole: TeamWorkflowEvent = {
      type: 'TASKS_ASSIGNED',
      assignments: [
        { taskId: 't1', assignee: 'qa' },
        { taskId: 't2', assignee: 'dev' },
      ],
    };
    const unknown: TeamWorkflowEvent = {
      type: 'TASKS_ASSIGNED',
      assignments: [
        { taskId: 't1', assignee: 'dev' },
        { taskId: 't3', assignee: 'qa' },
      ],
    };
    for (const e of [partial, wrongRole, unknown]) {
      expect(rejection(() => actor.send(e))).toBeInstanceOf(InvalidTransitionError);
    }
    const next = actor.send(dispatchBoth);
    expect(next.value).toEqual({ EXECUTION: 'Parallel_Work' });
    expect(next.context.tasks.t1).toMatchObject({ status: 'ASSIGNED', assignee: 'dev' });
    expect(next.context.tasks.t2).toMatchObject({ status: 'ASSIGNED', assignee: 'qa' });
  });

  it('spawns one actor per assigned task, named by the task id', () => {
    const actor = drive([...toExecution, dispatchBoth]);
    const children = actor.getSnapshot().children as Record<
      string,
      { getSnapshot(): { value: unknown; context: unknown } }
    >;
    expect(Object.keys(children).sort()).toEqual(['t1', 't2']);
    expect(children.t2?.getSnapshot().value).toBe('ASSIGNED');
    expect(children.t2?.getSnapshot().context).toMatchObject({
      taskId: 't2',
      assignee: 'qa',
      role: 'qa',
      attempt: 1,
      maxRetries: 2,
      timeoutMs: 4 * 60 * 60 * 1000,
    });
  });

  it('moves a task ASSIGNED → IN_PROGRESS → DONE on its own actor, refusing moves out of order', () => {
    const task = createStrictActor(teamTask, { id: 'team-1/t1', input: taskInput }).start();
    const before = task.getSnapshot();
    const done = rejection(() => task.send({ type: 'TASK_DONE', taskId: 't1' }));
    expect(done).toBeInstanceOf(InvalidTransitionError);
    expect(done).toMatchObject({
      machineId: 'team-task',
      state: 'ASSIGNED',
      eventType: 'TASK_DONE',
    });
    expect(
      rejection(() => task.send({ type: 'TASK_FAILED', taskId: 't1', reason: 'x' })),
    ).toBeInstanceOf(InvalidTransitionError);
    expect(task.getSnapshot()).toBe(before);
    task.send({ type: 'TASK_STARTED', taskId: 't1' });
    expect(rejection(() => task.send({ type: 'TASK_STARTED', taskId: 't1' }))).toBeInstanceOf(
      InvalidTransitionError,
    );
    const next = task.send({ type: 'TASK_DONE', taskId: 't1', summary: 'merged' });
    expect(next.status).toBe('done');
    expect(next.output).toEqual({ taskId: 't1', outcome: 'merged' });
  });

  it("refuses another task's id, including inherited property names", () => {
    const task = createStrictActor(teamTask, { id: 'team-1/t1', input: taskInput }).start();
    for (const taskId of ['t9', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(rejection(() => task.send({ type: 'TASK_STARTED', taskId }))).toBeInstanceOf(
        InvalidTransitionError,
      );
    }
  });

  it('reports every change of status to the workflow, which mirrors it in its task list', () => {
    const actor = drive(toWork);
    expect(actor.getSnapshot().context.tasks.t1).toMatchObject({ status: 'IN_PROGRESS' });
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't1', summary: 'merged' });
    expect(actor.getSnapshot().context.tasks.t1).toMatchObject({
      status: 'DONE',
      outcome: 'merged',
    });
    // A report for a task that is not out (unknown, or settled) is refused by the workflow.
    for (const taskId of ['t1', 't9', 'constructor']) {
      expect(
        rejection(() =>
          actor.send({
            type: 'TASK_STATUS',
            taskId,
            status: 'DONE',
            blocker: null,
            outcome: null,
            retries: 0,
          }),
        ),
      ).toBeInstanceOf(InvalidTransitionError);
    }
  });

  it('leaves EXECUTION for QA review once every task is DONE or FAILED', () => {
    const actor = drive(toWork);
    sendToTask(actor, { type: 'TASK_FAILED', taskId: 't2', reason: 'no device' });
    expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Parallel_Work' });
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't1' });
    const next = actor.getSnapshot();
    expect(next.value).toEqual({ VERIFICATION: 'QA_Review' });
    expect(next.context.tasks.t2).toMatchObject({ status: 'FAILED', outcome: 'no device' });
  });

  it('runs any number of tasks in parallel, in any order', () => {
    const ids = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'];
    const actor = drive([
      ...toPlanReview,
      ...approveAll,
      {
        type: 'TASKS_DRAFTED',
        by: 'arch',
        tasks: ids.map((taskId) => ({ taskId, title: taskId, role: 'developer' as const })),
      },
      ...approveAll,
      {
        type: 'TASKS_ASSIGNED',
        assignments: ids.map((taskId) => ({ taskId, assignee: 'dev' })),
      },
    ]);
    for (const taskId of ids) sendToTask(actor, { type: 'TASK_STARTED', taskId });
    for (const taskId of [...ids].reverse()) {
      expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Parallel_Work' });
      sendToTask(actor, { type: 'TASK_DONE', taskId });
    }
    expect(actor.getSnapshot().value).toEqual({ VERIFICATION: 'QA_Review' });
    expect(Object.values(actor.getSnapshot().context.tasks).every((t) => t.status === 'DONE')).toBe(
      true,
    );
  });

  it('blocks the team on a blocker while other tasks keep going, until every blocker is resolved', () => {
    const actor = drive(toWork);
    sendToTask(actor, { type: 'BLOCKER_RAISED', taskId: 't1', description: 'tokens' });
    expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Blocked' });
    expect(actor.getSnapshot().context.tasks.t1?.blocker).toBe('tokens');
    sendToTask(actor, { type: 'BLOCKER_RAISED', taskId: 't2', description: 'staging' });
    sendToTask(actor, { type: 'BLOCKER_RESOLVED', taskId: 't1' });
    expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Blocked' });
    expect(actor.getSnapshot().context.tasks.t1?.blocker).toBeNull();
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't1' });
    expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Blocked' });
    sendToTask(actor, { type: 'BLOCKER_RESOLVED', taskId: 't2' });
    expect(actor.getSnapshot().value).toEqual({ EXECUTION: 'Parallel_Work' });
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't2' });
    expect(actor.getSnapshot().value).toEqual({ VERIFICATION: 'QA_Review' });
  });

  it('a blocked task refuses to finish until its blocker is resolved', () => {
    const task = createStrictActor(teamTask, { id: 'team-1/t1', input: taskInput }).start();
    task.send({ type: 'TASK_STARTED', taskId: 't1' });
    task.send({ type: 'BLOCKER_RAISED', taskId: 't1', description: 'tokens' });
    for (const event of [
      { type: 'TASK_DONE', taskId: 't1' },
      { type: 'BLOCKER_RAISED', taskId: 't1', description: 'again' },
    ] as const) {
      expect(rejection(() => task.send(event))).toBeInstanceOf(InvalidTransitionError);
    }
    expect(task.send({ type: 'BLOCKER_RESOLVED', taskId: 't1' }).value).toBe('IN_PROGRESS');
  });
});

describe('team-workflow verification', () => {
  it('lets only a qa member pass or fail the work', () => {
    const actor = drive(toVerification);
    expect(rejection(() => actor.send({ type: 'QA_PASS', by: 'dev' }))).toBeInstanceOf(
      InvalidTransitionError,
    );
    expect(
      rejection(() => actor.send({ type: 'QA_FAIL', by: 'arch', taskIds: ['t1'], report: 'r' })),
    ).toBeInstanceOf(InvalidTransitionError);
    expect(actor.send({ type: 'QA_PASS', by: 'qa', report: 'green' }).value).toEqual({
      VERIFICATION: 'Cross_Review',
    });
    expect(actor.getSnapshot().context.qaReport).toBe('green');
  });

  it('sends failed work back to EXECUTION, reopening only the listed tasks', () => {
    const actor = drive([
      ...toWork,
      { type: 'TASK_DONE', taskId: 't1' },
      { type: 'TASK_FAILED', taskId: 't2', reason: 'flaky' },
    ]);
    expect(actor.getSnapshot().context.tasks.t2).toMatchObject({ status: 'FAILED' });
    expect(rejection(() => actor.send({ type: 'QA_PASS', by: 'qa' }))).toBeInstanceOf(
      InvalidTransitionError,
    );
    expect(
      rejection(() => actor.send({ type: 'QA_FAIL', by: 'qa', taskIds: ['t1'], report: 'r' })),
    ).toBeInstanceOf(InvalidTransitionError);
    const next = actor.send({ type: 'QA_FAIL', by: 'qa', taskIds: ['t2'], report: 'redo t2' });
    expect(next.value).toEqual({ EXECUTION: 'Dispatch' });
    expect(next.context.qaReport).toBe('redo t2');
    expect(next.context.tasks.t1).toMatchObject({ status: 'DONE', attempt: 1 });
    expect(next.context.tasks.t2).toMatchObject({
      status: 'PENDING',
      attempt: 2,
      assignee: null,
      outcome: null,
    });
    expect(rejection(() => actor.send(dispatchBoth))).toBeInstanceOf(InvalidTransitionError);
    actor.send({ type: 'TASKS_ASSIGNED', assignments: [{ taskId: 't2', assignee: 'qa' }] });
    // The reopened task runs as a new actor, its second attempt.
    const again = (
      actor.getSnapshot().children as Record<
        string,
        { getSnapshot(): { value: unknown; context: unknown } }
      >
    ).t2;
    expect(again?.getSnapshot().context).toMatchObject({ attempt: 2, retries: 0 });
    sendToTask(actor, { type: 'TASK_STARTED', taskId: 't2' });
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't2' });
    expect(actor.getSnapshot().value).toEqual({ VERIFICATION: 'QA_Review' });
  });

  it("requires a cross reviewer whose role differs from the author's", () => {
    const actor = drive(toCrossReview);
    for (const [taskId, reviewerId] of [
      ['t1', 'dev'],
      ['t2', 'qa'],
      ['t1', 'mallory'],
    ] as const) {
      const error = rejection(() =>
        actor.send({ type: 'CROSS_REVIEW', taskId, reviewerId, decision: 'approve' }),
      );
      expect(error).toMatchObject({
        name: 'InvalidTransitionError',
        state: 'VERIFICATION.Cross_Review',
        eventType: 'CROSS_REVIEW',
      });
    }
    actor.send({ type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'arch', decision: 'approve' });
    expect(actor.getSnapshot().value).toEqual({ VERIFICATION: 'Cross_Review' });
    expect(actor.getSnapshot().context.tasks.t1?.reviewedBy).toBe('arch');
    expect(
      rejection(() =>
        actor.send({ type: 'CROSS_REVIEW', taskId: 't1', reviewerId: 'qa', decision: 'approve' }),
      ),
    ).toBeInstanceOf(InvalidTransitionError);
    const done = actor.send({
      type: 'CROSS_REVIEW',
      taskId: 't2',
      reviewerId: 'dev',
      decision: 'approve',
      comment: 'clear checklist',
    });
    expect(done.value).toBe('COMPLETE');
    expect(done.context.comments.at(-1)).toEqual({
      author: 'dev',
      text: 'clear checklist',
      artifactId: null,
    });
  });

  it('reopens a task that a cross reviewer requests changes on', () => {
    const actor = drive([
      ...toCrossReview,
      { type: 'CROSS_REVIEW', taskId: 't2', reviewerId: 'arch', decision: 'approve' },
    ]);
    const next = actor.send({
      type: 'CROSS_REVIEW',
      taskId: 't1',
      reviewerId: 'qa',
      decision: 'request_changes',
      comment: 'persist the choice',
    });
    expect(next.value).toEqual({ EXECUTION: 'Dispatch' });
    expect(next.context.tasks.t1).toMatchObject({
      status: 'PENDING',
      attempt: 2,
      reviewedBy: null,
    });
    expect(next.context.tasks.t2).toMatchObject({ status: 'DONE', reviewedBy: 'arch' });
    actor.send({ type: 'TASKS_ASSIGNED', assignments: [{ taskId: 't1', assignee: 'dev' }] });
    sendToTask(actor, { type: 'TASK_STARTED', taskId: 't1' });
    sendToTask(actor, { type: 'TASK_DONE', taskId: 't1' });
    actor.send({ type: 'QA_PASS', by: 'qa' });
    const done = actor.send({
      type: 'CROSS_REVIEW',
      taskId: 't1',
      reviewerId: 'qa',
      decision: 'approve',
    });
    expect(done.value).toBe('COMPLETE');
  });
});

describe('team-workflow strict validation', () => {
  it('rejects every illegal (state, event) pair met in exploration, leaving the snapshot as it was', () => {
    expect(explored.rejected.length).toBeGreaterThan(0);
    // One actor per state; each rejection must leave it untouched for the next.
    const byState = new Map<string, typeof explored.rejected>();
    for (const r of explored.rejected) byState.set(r.from, [...(byState.get(r.from) ?? []), r]);
    for (const [from, rejected] of byState) {
      const snap = explored.states.get(from);
      if (!snap) throw new Error(`unknown state ${from}`);
      const actor = restore(snap);
      const before = actor.getSnapshot();
      for (const { fromLabel, event } of rejected) {
        const error = rejection(() => actor.send(event as TeamWorkflowEvent));
        expect(error, `${fromLabel} ${event.type}`).toBeInstanceOf(InvalidTransitionError);
        expect(error).toMatchObject({ state: fromLabel, eventType: event.type });
        expect(actor.getSnapshot()).toBe(before);
      }
    }
  });

  const badEvents: Array<[string, unknown, string, string | undefined]> = [
    ['an unknown type', { type: 'CONSENSUS_APPROVED' }, 'unknown_type', undefined],
    ['a missing voter', { type: 'VOTE', decision: 'approve' }, 'missing_field', 'voterId'],
    [
      'an unknown decision',
      { type: 'VOTE', voterId: 'arch', decision: 'hunter2' },
      'invalid_field',
      'decision',
    ],
    ['a numeric task id', { type: 'TASK_STATUS', taskId: 7 }, 'invalid_field', 'taskId'],
    [
      'a __proto__ task id',
      {
        type: 'TASK_STATUS',
        taskId: '__proto__',
        status: 'DONE',
        blocker: null,
        outcome: null,
        retries: 0,
      },
      'invalid_field',
      'taskId',
    ],
    ['an extra key', { type: 'QA_PASS', by: 'qa', token: 'hunter2' }, 'unexpected_field', 'token'],
    [
      'a __proto__ key',
      JSON.parse(
        '{"type":"VOTE","voterId":"arch","decision":"approve","__proto__":{"x":"hunter2"}}',
      ),
      'forbidden_key',
      '__proto__',
    ],
    [
      'an extra key in a drafted task',
      {
        type: 'TASKS_DRAFTED',
        by: 'arch',
        tasks: [{ taskId: 't1', title: 'A', role: 'qa', secret: 'hunter2' }],
      },
      'unexpected_field',
      'tasks.0.secret',
    ],
    [
      'an unknown role',
      { type: 'TASKS_DRAFTED', by: 'arch', tasks: [{ taskId: 't1', title: 'A', role: 'boss' }] },
      'invalid_field',
      'tasks.0.role',
    ],
    [
      'a task assigned twice',
      {
        type: 'TASKS_ASSIGNED',
        assignments: [
          { taskId: 't1', assignee: 'dev' },
          { taskId: 't1', assignee: 'qa' },
        ],
      },
      'invalid_field',
      'assignments',
    ],
    [
      'an empty reopen list',
      { type: 'QA_FAIL', by: 'qa', taskIds: [], report: 'r' },
      'invalid_field',
      'taskIds',
    ],
    [
      'a mode on START',
      { type: 'START', request: 'r', mode: 'autonomous' },
      'unexpected_field',
      'mode',
    ],
  ];

  it.each(badEvents)(
    'rejects %s with InvalidEventError naming the field, without payload values',
    (_name, event, reason, field) => {
      const actor = drive(toWork);
      const before = actor.getSnapshot();
      const error = rejection(() => actor.send(event as TeamWorkflowEvent));
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'team-workflow', reason, field });
      expect((error as Error).message).not.toContain('hunter2');
      expect(actor.getSnapshot()).toBe(before);
    },
  );

  it.each<[string, unknown, string, string | undefined]>([
    ['a numeric task id', { type: 'TASK_DONE', taskId: 7 }, 'invalid_field', 'taskId'],
    [
      'a __proto__ task id',
      { type: 'TASK_STARTED', taskId: '__proto__' },
      'invalid_field',
      'taskId',
    ],
    [
      'an extra key',
      { type: 'TASK_STARTED', taskId: 't1', token: 'hunter2' },
      'unexpected_field',
      'token',
    ],
    [
      'a non-boolean retryable',
      { type: 'TASK_FAILED', taskId: 't1', reason: 'x', retryable: 'yes' },
      'invalid_field',
      'retryable',
    ],
  ])('a task actor rejects %s with InvalidEventError', (_name, event, reason, field) => {
    const task = createStrictActor(teamTask, { id: 'team-1/t1', input: taskInput }).start();
    const before = task.getSnapshot();
    const error = rejection(() => task.send(event as TeamTaskEvent));
    expect(error).toBeInstanceOf(InvalidEventError);
    expect(error).toMatchObject({ machineId: 'team-task', reason, field });
    expect((error as Error).message).not.toContain('hunter2');
    expect(task.getSnapshot()).toBe(before);
  });

  it.each<[string, unknown]>([
    ['no architect', { members: [{ id: 'qa', role: 'qa' }] }],
    ['no qa member', { members: [{ id: 'arch', role: 'architect' }] }],
    [
      'duplicate member ids',
      {
        members: [
          { id: 'a', role: 'architect' },
          { id: 'a', role: 'qa' },
        ],
      },
    ],
    ['a voter who is not a member', { ...defaultInput, voters: ['arch', 'zed'] }],
    ['a threshold above 1', { ...defaultInput, threshold: 1.5 }],
    ['a zero threshold', { ...defaultInput, threshold: 0 }],
  ])('puts an actor whose team has %s into the error status', (_name, team) => {
    const actor = createActor(machine, { input: team as TeamWorkflowInput });
    expect(actor.getSnapshot().status).toBe('error');
  });
});

describe('team-workflow persistence', () => {
  it('restores every reachable state from JSON with the same value, context and next events', () => {
    const sampleList = Object.values(samples).flat() as TeamWorkflowEvent[];
    for (const s of reachable) {
      expect(roundTripDifferences(machine, s, sampleList)).toEqual([]);
    }
  });
});

describe('team-workflow recovery policy', () => {
  it('resumes every non-final state with a reason naming what it waits for', () => {
    const labels = new Set(
      reachable.filter((s) => s.status === 'active').map((s) => stateLabel(s.value)),
    );
    for (const state of labels) {
      const snapshot = reachable.find((s) => stateLabel(s.value) === state);
      if (!snapshot) throw new Error(state);
      const decision = recovery({ actorId: 'team-1', state, snapshot, updatedAt: 0, now: 1e12 });
      expect(decision.action).toBe('resume');
      expect(decision.reason, state).not.toBe('no in-flight work is held by the chart');
    }
    expect(chart.recovery).toBe(recovery);
  });
});
