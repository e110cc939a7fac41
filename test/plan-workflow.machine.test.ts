import { describe, expect, it } from 'vitest';
import { createActor, type SnapshotFrom } from 'xstate';
import { InvalidEventError, InvalidTransitionError } from '../src/core/errors.ts';
import { createStrictActor } from '../src/strict/strict-actor.ts';
import { stateLabel } from '../src/core/state.ts';
import { roundTripDifferences } from '../src/testing/round-trip.ts';
import { exploreMachine, transitionTable } from '../src/testing/explore.ts';
import {
  chart,
  events,
  machine,
  recovery,
  serializeState,
  type PlanWorkflowEvent,
  type PlanWorkflowInput,
} from '../machines/plan-workflow/index.ts';

type Snap = SnapshotFrom<typeof machine>;

/** Seed 004, first diagram, transcribed edge by edge (guards in brackets dropped). */
const SEED_EDGES = [
  'IDLE --START--> PLANNING', // START [interactive]
  'IDLE --START--> EXECUTION', // START [autonomous]
  'PLANNING --PLAN_CREATED--> AWAITING_PLAN_APPROVAL',
  'AWAITING_PLAN_APPROVAL --PLAN_APPROVED--> CREATING_TASKS',
  'AWAITING_PLAN_APPROVAL --CHANGES_REQUESTED--> PLANNING',
  'CREATING_TASKS --TASKS_CREATED--> AWAITING_TASKS_APPROVAL',
  'AWAITING_TASKS_APPROVAL --TASKS_APPROVED--> EXECUTION',
  'AWAITING_TASKS_APPROVAL --CHANGES_REQUESTED--> CREATING_TASKS',
  'EXECUTION --IMPLEMENTATION_COMPLETE--> VERIFICATION',
  'VERIFICATION --TESTS_PASS--> COMPLETE',
  'VERIFICATION --CHANGES_REQUESTED--> EXECUTION',
];
/** The seed's states. COMPLETE --> [*] ends the work; the chart keeps it open to the global events. */
const SEED_STATES = [
  'IDLE',
  'PLANNING',
  'AWAITING_PLAN_APPROVAL',
  'CREATING_TASKS',
  'AWAITING_TASKS_APPROVAL',
  'EXECUTION',
  'VERIFICATION',
  'COMPLETE',
];
const GLOBAL_SELF_LOOPS = ['ARTIFACT_ADDED', 'ADD_COMMENT', 'CLEAR_COMMENTS'];
/** Extra edges, recorded in the README: the global events in every state. */
const EXTRAS = SEED_STATES.flatMap((s) => [
  ...GLOBAL_SELF_LOOPS.map((e) => `${s} --${e}--> ${s}`),
  `${s} --RESET--> IDLE`,
]);

const input: PlanWorkflowInput = { workflowId: 'wf-1', mode: 'interactive' };
const samples = chart.eventSamples;
const explored = exploreMachine(machine, { events: samples, input, serializeState });
const reachable = [...explored.states.values()];

function actorAt(snapshot: Snap) {
  return createStrictActor(machine, {
    id: 'pw-1',
    input,
    snapshot: JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot))) as Snap,
  }).start();
}

function drive(steps: PlanWorkflowEvent[], options: PlanWorkflowInput = input) {
  const actor = createStrictActor(machine, { id: 'pw-1', input: options }).start();
  for (const step of steps) actor.send(step);
  return actor;
}

const toVerification: PlanWorkflowEvent[] = [
  { type: 'START', request: 'Add dark mode', mode: 'interactive' },
  { type: 'PLAN_CREATED', plan: 'theme context, toggle' },
  { type: 'PLAN_APPROVED' },
  { type: 'TASKS_CREATED', tasks: [{ taskId: 't1', title: 'Theme context' }] },
  { type: 'TASKS_APPROVED' },
  { type: 'IMPLEMENTATION_COMPLETE', summary: 'done' },
];

describe('plan-workflow conformance with seed 004', () => {
  it('has every edge of the seed diagram and only the recorded extras', () => {
    const table = transitionTable(machine, { events: samples, input, serializeState });
    expect(table).toEqual([...new Set([...SEED_EDGES, ...EXTRAS])].sort());
  });

  it('reaches every seed state and no other', () => {
    const labels = new Set(reachable.map((s) => stateLabel(s.value)));
    expect([...labels].sort()).toEqual([...SEED_STATES].sort());
  });

  it('declares a schema for every event type its transitions name', () => {
    const named = machine.events.filter((t) => !t.startsWith('xstate.'));
    expect([...new Set(named)].sort()).toEqual(Object.keys(events).sort());
  });

  it('gives the catalog a sample of every event type', () => {
    for (const type of Object.keys(events)) {
      expect(samples[type as PlanWorkflowEvent['type']]?.length, type).toBeGreaterThan(0);
    }
  });
});

describe('plan-workflow START guard', () => {
  it('goes to PLANNING when START says interactive', () => {
    const actor = drive([{ type: 'START', request: 'r', mode: 'interactive' }], {
      mode: 'autonomous',
    });
    expect(actor.getSnapshot().value).toBe('PLANNING');
    expect(actor.getSnapshot().context.mode).toBe('interactive');
  });

  it('goes straight to EXECUTION when START says autonomous', () => {
    const actor = drive([{ type: 'START', request: 'r', mode: 'autonomous' }]);
    expect(actor.getSnapshot().value).toBe('EXECUTION');
    expect(actor.getSnapshot().context).toMatchObject({ mode: 'autonomous', request: 'r' });
  });

  it('falls back to the input mode when START names none', () => {
    expect(
      drive([{ type: 'START', request: 'r' }], { mode: 'autonomous' }).getSnapshot().value,
    ).toBe('EXECUTION');
    expect(drive([{ type: 'START', request: 'r' }], {}).getSnapshot().value).toBe('PLANNING');
  });
});

describe('plan-workflow global events', () => {
  const active = reachable.filter((s) => s.status === 'active');

  it('adds an artifact in every state without leaving it', () => {
    expect(new Set(active.map((s) => stateLabel(s.value)))).toEqual(new Set(SEED_STATES));
    for (const s of active) {
      const actor = actorAt(s);
      const before = actor.getSnapshot().context.artifacts.length;
      const next = actor.send({ type: 'ARTIFACT_ADDED', artifactId: 'new-a', name: 'Report' });
      expect(next.value).toEqual(s.value);
      expect(next.context.artifacts).toHaveLength(before + 1);
      expect(next.context.artifacts.at(-1)).toEqual({
        artifactId: 'new-a',
        name: 'Report',
        uri: null,
      });
    }
  });

  it('appends a comment and clears comments in every state without leaving it', () => {
    for (const s of active) {
      const actor = actorAt(s);
      const before = actor.getSnapshot().context;
      const commented = actor.send({ type: 'ADD_COMMENT', author: 'user', text: 'why?' });
      expect(commented.value).toEqual(s.value);
      expect(commented.context.comments).toEqual([
        ...before.comments,
        { author: 'user', text: 'why?', artifactId: null },
      ]);
      const cleared = actor.send({ type: 'CLEAR_COMMENTS' });
      expect(cleared.value).toEqual(s.value);
      expect(cleared.context).toEqual({ ...before, comments: [] });
    }
  });

  it('resets to IDLE with the initial context from every state, COMPLETE included', () => {
    const initial = createActor(machine, { input }).getSnapshot().context;
    for (const s of active) {
      const next = actorAt(s).send({ type: 'RESET' });
      expect(next.value).toBe('IDLE');
      expect(next.context).toEqual(initial);
    }
  });

  it('replaces an artifact added again under the same id, keeping its position', () => {
    const actor = drive([
      { type: 'ARTIFACT_ADDED', artifactId: 'plan', name: 'Plan v1' },
      { type: 'ARTIFACT_ADDED', artifactId: 'tasks', name: 'Tasks' },
      { type: 'ARTIFACT_ADDED', artifactId: 'plan', name: 'Plan v2', uri: 'file:///p.md' },
    ]);
    expect(actor.getSnapshot().context.artifacts).toEqual([
      { artifactId: 'plan', name: 'Plan v2', uri: 'file:///p.md' },
      { artifactId: 'tasks', name: 'Tasks', uri: null },
    ]);
  });

  it('keeps the workflow id and default mode across RESET', () => {
    const actor = drive([{ type: 'START', request: 'r' }], {
      workflowId: 'wf-9',
      mode: 'autonomous',
    });
    const reset = actor.send({ type: 'RESET' });
    expect(reset.context).toMatchObject({
      workflowId: 'wf-9',
      defaultMode: 'autonomous',
      mode: null,
    });
  });

  it('accepts only the global events once COMPLETE, and RESET starts over', () => {
    const actor = drive([...toVerification, { type: 'TESTS_PASS', report: 'ok' }]);
    expect(actor.getSnapshot().value).toBe('COMPLETE');
    expect(actor.getSnapshot().hasTag('terminal')).toBe(true);
    expect(actor.getSnapshot().context.report).toBe('ok');
    for (const event of [{ type: 'START', request: 'again' }, { type: 'TESTS_PASS' }] as const) {
      expect(() => actor.send(event)).toThrow(InvalidTransitionError);
    }
    expect(actor.send({ type: 'ADD_COMMENT', author: 'user', text: 'thanks' }).value).toBe(
      'COMPLETE',
    );
    expect(actor.send({ type: 'RESET' }).value).toBe('IDLE');
  });
});

describe('plan-workflow context', () => {
  it('records the plan, the task list, the summary and every change request', () => {
    const actor = drive([
      { type: 'START', request: 'Add dark mode' },
      { type: 'PLAN_CREATED', plan: 'v1' },
      { type: 'CHANGES_REQUESTED', feedback: 'more detail' },
      { type: 'PLAN_CREATED', plan: 'v2' },
      { type: 'PLAN_APPROVED' },
      { type: 'TASKS_CREATED', tasks: [{ taskId: 't1', title: 'A' }] },
      { type: 'TASKS_APPROVED' },
      { type: 'IMPLEMENTATION_COMPLETE', summary: 'first try' },
      { type: 'CHANGES_REQUESTED', feedback: 'tests fail' },
    ]);
    const snap = actor.getSnapshot();
    expect(snap.value).toBe('EXECUTION');
    expect(snap.context).toMatchObject({
      request: 'Add dark mode',
      plan: 'v2',
      tasks: [{ taskId: 't1', title: 'A' }],
      summary: 'first try',
      feedback: 'tests fail',
      changeRequests: 2,
    });
  });
});

describe('plan-workflow strict validation', () => {
  it('rejects every illegal (state, event) pair with InvalidTransitionError and no change', () => {
    expect(explored.rejected.length).toBeGreaterThan(0);
    for (const { from, fromLabel, event } of explored.rejected) {
      const snap = explored.states.get(from);
      if (!snap) throw new Error(`unknown state ${from}`);
      const actor = actorAt(snap);
      const before = actor.getSnapshot();
      let error: unknown;
      try {
        actor.send(event as PlanWorkflowEvent);
      } catch (e) {
        error = e;
      }
      expect(error, `${fromLabel} ${event.type}`).toBeInstanceOf(InvalidTransitionError);
      expect(error).toMatchObject({
        machineId: 'plan-workflow',
        actorId: 'pw-1',
        state: fromLabel,
        eventType: event.type,
      });
      expect(actor.getSnapshot()).toBe(before);
    }
  });

  it('rejects TESTS_PASS while PLANNING, naming machine, state and event', () => {
    const actor = drive([{ type: 'START', request: 'r' }]);
    expect(() => actor.send({ type: 'TESTS_PASS' })).toThrow(
      expect.objectContaining({
        name: 'InvalidTransitionError',
        machineId: 'plan-workflow',
        state: 'PLANNING',
        eventType: 'TESTS_PASS',
      }),
    );
  });

  const badEvents: Array<[string, unknown, string, string | undefined]> = [
    ['an unknown type', { type: 'LAUNCH' }, 'unknown_type', undefined],
    ['a missing request', { type: 'START' }, 'missing_field', 'request'],
    ['a blank request', { type: 'START', request: '   ' }, 'invalid_field', 'request'],
    ['an unknown mode', { type: 'START', request: 'r', mode: 'turbo' }, 'invalid_field', 'mode'],
    ['a wrong type', { type: 'START', request: 42 }, 'invalid_field', 'request'],
    [
      'an extra key',
      { type: 'START', request: 'r', secret: 'hunter2' },
      'unexpected_field',
      'secret',
    ],
    [
      'a __proto__ key',
      JSON.parse('{"type":"START","request":"r","__proto__":{"polluted":"hunter2"}}'),
      'forbidden_key',
      '__proto__',
    ],
    [
      'duplicate task ids',
      {
        type: 'TASKS_CREATED',
        tasks: [
          { taskId: 't1', title: 'hunter2' },
          { taskId: 't1', title: 'B' },
        ],
      },
      'invalid_field',
      'tasks',
    ],
    ['an empty task list', { type: 'TASKS_CREATED', tasks: [] }, 'invalid_field', 'tasks'],
    [
      'an artifact id that could pollute a prototype',
      { type: 'ARTIFACT_ADDED', artifactId: '__proto__', name: 'x' },
      'invalid_field',
      'artifactId',
    ],
  ];

  it.each(badEvents)(
    'rejects %s with InvalidEventError naming the field, without payload values',
    (_name, event, reason, field) => {
      const actor = drive([]);
      const before = actor.getSnapshot();
      let error: unknown;
      try {
        actor.send(event as PlanWorkflowEvent);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'plan-workflow', reason, field });
      expect((error as Error).message).not.toContain('hunter2');
      expect((error as Error).message).not.toContain('turbo');
      expect(actor.getSnapshot()).toBe(before);
    },
  );

  it('puts an actor given an invalid input into the error status', () => {
    const actor = createActor(machine, {
      input: { mode: 'turbo' } as unknown as PlanWorkflowInput,
    });
    expect(actor.getSnapshot().status).toBe('error');
  });
});

describe('plan-workflow persistence', () => {
  it('restores every reachable state from JSON with the same value, context and next events', () => {
    const sampleList = Object.values(samples).flat() as PlanWorkflowEvent[];
    for (const s of reachable) {
      expect(roundTripDifferences(machine, s, sampleList)).toEqual([]);
    }
  });
});

describe('plan-workflow recovery policy', () => {
  it('resumes every state with a reason naming what it waits for', () => {
    for (const s of reachable.filter((r) => r.status === 'active')) {
      const state = stateLabel(s.value);
      const decision = recovery({ actorId: 'pw-1', state, snapshot: s, updatedAt: 0, now: 1e12 });
      expect(decision.action).toBe('resume');
      expect(decision.reason).not.toBe('no in-flight work is held by the chart');
    }
    expect(chart.recovery).toBe(recovery);
  });
});
