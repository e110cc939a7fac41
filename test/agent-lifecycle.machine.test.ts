import { describe, expect, it } from 'vitest';
import { createActor, initialTransition, transition, type SnapshotFrom } from 'xstate';
import {
  createStrictActor,
  InvalidEventError,
  InvalidTransitionError,
  stateLabel,
  validateEvent,
} from '../src/index.ts';
import { exploreMachine } from '../src/testing/explore.ts';
import {
  ACTIVE_STATES,
  AGENT_STATES,
  STALE_AFTER_MS,
  TERMINAL_STATES,
  agentState,
  chart,
  createRecoveryPolicy,
  events,
  machine,
  serializeState,
  type ActiveState,
  type AgentLifecycleEmitted,
  type AgentLifecycleEvent,
  type AgentState,
} from '../machines/agent-lifecycle/index.ts';

type Snap = SnapshotFrom<typeof machine>;

const input = chart.defaultInput;

// ---------------------------------------------------------------------------
// Seed 000, transcribed. `VALID_TRANSITIONS` verbatim.
const VALID_TRANSITIONS: Record<AgentState, AgentState[]> = {
  idle: ['initializing'],
  initializing: ['planning', 'failed', 'paused', 'cancelled'],
  planning: ['executing', 'failed', 'paused', 'cancelled'],
  executing: ['evaluating', 'waiting_input', 'waiting_agent', 'failed', 'paused', 'cancelled'],
  evaluating: ['executing', 'adapting', 'succeeded', 'failed', 'paused', 'cancelled'],
  adapting: ['executing', 'failed', 'paused', 'cancelled'],
  waiting_input: ['executing', 'failed', 'paused', 'cancelled'],
  waiting_agent: ['executing', 'failed', 'paused', 'cancelled'],
  succeeded: ['idle'],
  failed: ['idle'],
  paused: [
    'initializing',
    'planning',
    'executing',
    'evaluating',
    'adapting',
    'waiting_input',
    'waiting_agent',
    'cancelled',
  ],
  cancelled: ['idle'],
};

/** The seed's `TransitionEvent` types. */
const SEED_EVENT_TYPES = [
  'START',
  'INIT_COMPLETE',
  'PLAN_COMPLETE',
  'STEP_COMPLETE',
  'STEP_FAILED',
  'EVALUATION_PASS',
  'EVALUATION_FAIL',
  'ADAPTATION_COMPLETE',
  'INPUT_RECEIVED',
  'AGENT_COMPLETE',
  'TIMEOUT',
  'MAX_ITERATIONS',
  'PAUSE',
  'RESUME',
  'CANCEL',
] as const;

type SeedEventType = (typeof SEED_EVENT_TYPES)[number];

/** The seed's `getTargetState`, verbatim apart from taking its state as arguments. */
function getTargetState(
  state: AgentState,
  type: SeedEventType,
  pausedFromState: AgentState | undefined,
): AgentState | null {
  switch (type) {
    case 'START':
      return state === 'idle' ? 'initializing' : null;
    case 'INIT_COMPLETE':
      return state === 'initializing' ? 'planning' : null;
    case 'PLAN_COMPLETE':
      return state === 'planning' ? 'executing' : null;
    case 'STEP_COMPLETE':
      return state === 'executing' ? 'evaluating' : null;
    case 'STEP_FAILED':
      return 'failed';
    case 'EVALUATION_PASS':
      return state === 'evaluating' ? 'succeeded' : null;
    case 'EVALUATION_FAIL':
      return state === 'evaluating' ? 'adapting' : null;
    case 'ADAPTATION_COMPLETE':
      return state === 'adapting' ? 'executing' : null;
    case 'INPUT_RECEIVED':
      return state === 'waiting_input' ? 'executing' : null;
    case 'AGENT_COMPLETE':
      return state === 'waiting_agent' ? 'executing' : null;
    case 'TIMEOUT':
    case 'MAX_ITERATIONS':
      return 'failed';
    case 'PAUSE':
      return 'paused';
    case 'RESUME':
      return pausedFromState || 'idle';
    case 'CANCEL':
      return 'cancelled';
  }
}

/** The seed's `transition()`: the target of `getTargetState` must pass `canTransition`. */
function seedTarget(
  state: AgentState,
  type: SeedEventType,
  pausedFromState: AgentState | undefined,
): AgentState | null {
  const target = getTargetState(state, type, pausedFromState);
  return target !== null && VALID_TRANSITIONS[state].includes(target) ? target : null;
}

// Decisions recorded in machines/agent-lifecycle/README.md.
/** Events named for pairs the seed allows but triggers with no event. */
const NAMED_EVENT_ROWS = [
  'executing --WAIT_FOR_INPUT--> waiting_input',
  'executing --WAIT_FOR_AGENT--> waiting_agent',
  'evaluating --NEXT_STEP--> executing',
  'succeeded --CLEANUP--> idle',
  'failed --CLEANUP--> idle',
  'cancelled --CLEANUP--> idle',
];
/**
 * The seed's `RESUME` falls back to `idle` when nothing was paused, which makes it
 * a cleanup event of the terminal states by accident; cleanup is `CLEANUP` only.
 */
const DROPPED_SEED_ROWS = [
  'succeeded --RESUME--> idle',
  'failed --RESUME--> idle',
  'cancelled --RESUME--> idle',
];

// ---------------------------------------------------------------------------
// The machine, explored.

const HISTORY_NODE_ID = 'agent-lifecycle.active.history';

/** Where the history node of `active` points, as recorded by XState. */
function historyTarget(snapshot: Snap): string {
  const nodes = (snapshot.historyValue as Record<string, Array<{ key: string }> | undefined>)[
    HISTORY_NODE_ID
  ];
  return (nodes ?? []).map((n) => n.key).join(',');
}

/**
 * Identity for the traversal: the state label, and in `paused` both the history
 * and `paused_from_state` (so each pause origin is its own state). Context beyond
 * that is left out: `iteration` grows without bound on adapt loops.
 */
function identity(snapshot: Snap): string {
  const label = stateLabel(snapshot.value);
  if (label !== 'paused') return label;
  return `paused(history=${historyTarget(snapshot)},from=${snapshot.context.paused_from_state})`;
}

const graph = exploreMachine(machine, {
  events: chart.eventSamples,
  input,
  serializeState: identity,
});

const snapshotOf = (key: string): Snap => {
  const snap = graph.states.get(key);
  if (!snap) throw new Error(`no explored state ${key}`);
  return snap;
};

/** The pause origin of each explored paused state, from the PAUSE edges into it. */
const pausedFrom = new Map<string, AgentState>();
for (const edge of graph.edges) {
  if (edge.event.type === 'PAUSE') pausedFrom.set(edge.to, agentState(snapshotOf(edge.from)));
}

const allSamples: AgentLifecycleEvent[] = Object.values(chart.eventSamples).flatMap(
  (list) => (list ?? []) as AgentLifecycleEvent[],
);

function sample<T extends AgentLifecycleEvent['type']>(
  type: T,
): Extract<AgentLifecycleEvent, { type: T }> {
  const found = allSamples.find((e) => e.type === type);
  if (!found) throw new Error(`no sample for ${type}`);
  return found as Extract<AgentLifecycleEvent, { type: T }>;
}

/** Event sequences from idle to each active state. */
const PATH_TO: Record<ActiveState, AgentLifecycleEvent[]> = {
  initializing: [sample('START')],
  planning: [sample('START'), sample('INIT_COMPLETE')],
  executing: [sample('START'), sample('INIT_COMPLETE'), sample('PLAN_COMPLETE')],
  evaluating: [
    sample('START'),
    sample('INIT_COMPLETE'),
    sample('PLAN_COMPLETE'),
    sample('STEP_COMPLETE'),
  ],
  adapting: [
    sample('START'),
    sample('INIT_COMPLETE'),
    sample('PLAN_COMPLETE'),
    sample('STEP_COMPLETE'),
    sample('EVALUATION_FAIL'),
  ],
  waiting_input: [
    sample('START'),
    sample('INIT_COMPLETE'),
    sample('PLAN_COMPLETE'),
    sample('WAIT_FOR_INPUT'),
  ],
  waiting_agent: [
    sample('START'),
    sample('INIT_COMPLETE'),
    sample('PLAN_COMPLETE'),
    sample('WAIT_FOR_AGENT'),
  ],
};

function strictActorAt(state: ActiveState) {
  const actor = createStrictActor(machine, { input, id: 'agent-1' }).start();
  for (const event of PATH_TO[state]) actor.send(event);
  return actor;
}

function restore(snapshot: Snap) {
  const persisted: unknown = JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot)));
  return createActor(machine, { input, snapshot: persisted as Snap }).start();
}

// ---------------------------------------------------------------------------

describe('agent-lifecycle conformance with seed 000', () => {
  it('reaches all twelve seed states and pauses from each of the seven active states', () => {
    const reached = new Set([...graph.states.values()].map((s) => agentState(s)));
    expect([...reached].sort()).toEqual([...AGENT_STATES].sort());
    expect([...new Set(pausedFrom.values())].sort()).toEqual([...ACTIVE_STATES].sort());
  });

  it('allows exactly the (from, to) pairs of VALID_TRANSITIONS', () => {
    const derived = new Set(
      graph.edges.map(
        (e) => `${agentState(snapshotOf(e.from))} -> ${agentState(snapshotOf(e.to))}`,
      ),
    );
    const expected = new Set(
      Object.entries(VALID_TRANSITIONS).flatMap(([from, targets]) =>
        targets.map((to) => `${from} -> ${to}`),
      ),
    );
    expect([...derived].sort()).toEqual([...expected].sort());
  });

  it('sends every event where getTargetState says, with only the recorded decisions differing', () => {
    const label = (key: string): string => {
      const name = agentState(snapshotOf(key));
      return name === 'paused' ? `paused(from ${pausedFrom.get(key)})` : name;
    };
    const derived = new Set(
      graph.edges.map(
        (e) => `${label(e.from)} --${e.event.type}--> ${agentState(snapshotOf(e.to))}`,
      ),
    );
    const expected = new Set<string>();
    for (const key of graph.states.keys()) {
      const state = agentState(snapshotOf(key));
      for (const type of SEED_EVENT_TYPES) {
        const target = seedTarget(state, type, pausedFrom.get(key));
        if (target !== null) expected.add(`${label(key)} --${type}--> ${target}`);
      }
    }
    for (const row of DROPPED_SEED_ROWS) {
      expect(expected.delete(row)).toBe(true);
    }
    for (const row of NAMED_EVENT_ROWS) expected.add(row);
    expect([...derived].sort()).toEqual([...expected].sort());
  });

  it('resumes each paused state to the state it was paused from, as paused_from_state says', () => {
    for (const [key, origin] of pausedFrom) {
      const paused = snapshotOf(key);
      expect(paused.context.paused_from_state).toBe(origin);
      const [next] = transition(machine, paused, sample('RESUME'));
      expect(agentState(next)).toBe(origin);
      expect(next.context.paused_from_state).toBeNull();
    }
  });

  it('covers every event type with samples that pass the event schemas', () => {
    expect(Object.keys(chart.eventSamples).sort()).toEqual(Object.keys(events).sort());
    for (const event of allSamples) {
      expect(validateEvent(machine, event)).toEqual(event);
    }
  });
});

describe('agent-lifecycle strict validation', () => {
  it('rejects every illegal (state, event) pair with InvalidTransitionError and leaves the snapshot unchanged', () => {
    expect(graph.rejected.length).toBeGreaterThan(0);
    for (const { from, event } of graph.rejected) {
      const snapshot = snapshotOf(from);
      const actor = createStrictActor(machine, {
        input,
        id: 'agent-1',
        snapshot: machine.getPersistedSnapshot(snapshot),
      }).start();
      const before = JSON.stringify(actor.getPersistedSnapshot());
      let error: unknown;
      try {
        actor.send(event as AgentLifecycleEvent);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidTransitionError);
      expect(error).toMatchObject({
        machineId: 'agent-lifecycle',
        actorId: 'agent-1',
        state: stateLabel(snapshot.value),
        eventType: event.type,
      });
      expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
    }
  });

  it('rejects PAUSE in idle, paused and the terminal states, and failure events while paused', () => {
    const idle = createStrictActor(machine, { input }).start();
    expect(() => idle.send(sample('PAUSE'))).toThrow(InvalidTransitionError);
    expect(() => idle.send(sample('CANCEL'))).toThrow(InvalidTransitionError);

    const paused = strictActorAt('executing');
    paused.send(sample('PAUSE'));
    for (const event of [
      sample('PAUSE'),
      sample('STEP_FAILED'),
      sample('TIMEOUT'),
      sample('MAX_ITERATIONS'),
      sample('STEP_COMPLETE'),
    ]) {
      expect(() => paused.send(event)).toThrow(InvalidTransitionError);
    }
    expect(agentState(paused.getSnapshot())).toBe('paused');
  });

  const secret = 'SECRET-7f3a';
  const illFormed: Array<{
    name: string;
    event: unknown;
    reason: string;
    field: string | undefined;
    hidden: string;
  }> = [
    {
      name: 'an unknown type',
      event: { type: 'LAUNCH', payload: { task_id: secret } },
      reason: 'unknown_type',
      field: undefined,
      hidden: secret,
    },
    {
      name: 'a missing payload',
      event: { type: 'START' },
      reason: 'missing_field',
      field: 'payload',
      hidden: secret,
    },
    {
      name: 'a missing field',
      event: { type: 'STEP_COMPLETE', payload: { step_id: secret } },
      reason: 'missing_field',
      field: 'payload.output',
      hidden: secret,
    },
    {
      name: 'a field of the wrong type',
      event: { type: 'START', payload: { task_id: 4242 } },
      reason: 'invalid_field',
      field: 'payload.task_id',
      hidden: '4242',
    },
    {
      name: 'an empty id',
      event: { type: 'START', payload: { task_id: '' } },
      reason: 'invalid_field',
      field: 'payload.task_id',
      hidden: secret,
    },
    {
      name: 'a confidence above 1',
      event: { type: 'EVALUATION_PASS', payload: { confidence: 1.75 } },
      reason: 'invalid_field',
      field: 'payload.confidence',
      hidden: '1.75',
    },
    {
      name: 'a fractional duration',
      event: { type: 'TIMEOUT', payload: { duration_ms: 12.5 } },
      reason: 'invalid_field',
      field: 'payload.duration_ms',
      hidden: '12.5',
    },
    {
      name: 'an extra top-level key',
      event: { type: 'START', payload: { task_id: 't1' }, token: secret },
      reason: 'unexpected_field',
      field: 'token',
      hidden: secret,
    },
    {
      name: 'an extra payload key',
      event: { type: 'RESUME', payload: { note: secret } },
      reason: 'unexpected_field',
      field: 'payload.note',
      hidden: secret,
    },
    {
      name: 'a __proto__ key from JSON.parse',
      event: JSON.parse(
        `{"type":"START","payload":{"task_id":"t1","__proto__":{"polluted":"${secret}"}}}`,
      ) as unknown,
      reason: 'forbidden_key',
      field: 'payload.__proto__',
      hidden: secret,
    },
  ];

  for (const { name, event, reason, field, hidden } of illFormed) {
    it(`rejects ${name} with InvalidEventError naming the field, without the payload in the message`, () => {
      const actor = createStrictActor(machine, { input, id: 'agent-1' }).start();
      const before = JSON.stringify(actor.getPersistedSnapshot());
      let error: unknown;
      try {
        actor.send(event as AgentLifecycleEvent);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'agent-lifecycle', reason, field });
      expect((error as Error).message).not.toContain(hidden);
      expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
    });
  }
});

describe('agent-lifecycle round trip', () => {
  it('restores a JSON round-tripped snapshot of every reachable state to an actor that behaves the same', () => {
    expect(graph.states.size).toBeGreaterThanOrEqual(
      AGENT_STATES.length + ACTIVE_STATES.length - 1,
    );
    for (const snapshot of graph.states.values()) {
      const restored = restore(snapshot).getSnapshot();
      expect(restored.value).toEqual(snapshot.value);
      expect(restored.context).toEqual(snapshot.context);
      expect(historyTarget(restored)).toBe(historyTarget(snapshot));
      for (const event of allSamples) {
        expect(restored.can(event)).toBe(snapshot.can(event));
        if (!snapshot.can(event)) continue;
        const [expected] = transition(machine, snapshot, event);
        const [actual] = transition(machine, restored, event);
        expect(actual.value).toEqual(expected.value);
        expect(actual.context).toEqual(expected.context);
      }
    }
  });

  it('resumes a restored paused actor to the state it was paused from', () => {
    const actor = strictActorAt('waiting_agent');
    actor.send(sample('PAUSE'));
    const restored = restore(actor.getSnapshot());
    expect(restored.getSnapshot().context.paused_from_state).toBe('waiting_agent');
    restored.send(sample('RESUME'));
    expect(agentState(restored.getSnapshot())).toBe('waiting_agent');
    expect(restored.getSnapshot().context.waiting_for).toBe('researcher');
  });

  it('rebuilds the same snapshot when the same events are replayed through transition()', () => {
    const replay = (): string => {
      let [snapshot] = initialTransition(machine, input);
      for (const event of [...PATH_TO.adapting, sample('ADAPTATION_COMPLETE'), sample('PAUSE')]) {
        [snapshot] = transition(machine, snapshot, event);
      }
      return JSON.stringify(machine.getPersistedSnapshot(snapshot));
    };
    expect(replay()).toBe(replay());
  });
});

describe('agent-lifecycle behaviour', () => {
  it('runs a task from idle to succeeded and records the seed metadata on the way', () => {
    const actor = createStrictActor(machine, {
      input: { agent_name: 'interviewer', user_id: 'user-9' },
    }).start();
    actor.send({ type: 'START', payload: { task_id: 'interview-1' } });
    actor.send({ type: 'INIT_COMPLETE', payload: { context_loaded: true } });
    actor.send({ type: 'PLAN_COMPLETE', payload: { plan_id: 'p1', steps: 2 } });
    actor.send({ type: 'STEP_COMPLETE', payload: { step_id: 's1', output: 'draft' } });
    actor.send({ type: 'EVALUATION_FAIL', payload: { confidence: 0.5, reason: 'thin' } });
    expect(agentState(actor.getSnapshot())).toBe('adapting');
    actor.send({ type: 'ADAPTATION_COMPLETE', payload: { new_plan_id: 'p2' } });
    actor.send({ type: 'STEP_COMPLETE', payload: { step_id: 's2', output: null } });
    actor.send({ type: 'NEXT_STEP', payload: { confidence: 0.7 } });
    actor.send({ type: 'STEP_COMPLETE', payload: { step_id: 's3', output: 42 } });
    actor.send({ type: 'EVALUATION_PASS', payload: { confidence: 0.92 } });
    const done = actor.getSnapshot();
    expect(agentState(done)).toBe('succeeded');
    expect(done.context).toEqual({
      agent_name: 'interviewer',
      user_id: 'user-9',
      task_id: 'interview-1',
      plan_id: 'p2',
      current_step_id: 's3',
      iteration: 1,
      confidence: 0.92,
      error: null,
      waiting_for: null,
      paused_from_state: null,
      // Seed 000's `extra` and `current_state`, kept since issue 12.
      extra: null,
      current_state: 'succeeded',
    });
  });

  it('keeps START extra as seed 000 metadata and names the state left in AGENT_STATE_CHANGED', () => {
    const actor = createActor(machine, { input: { agent_name: 'interviewer' } });
    const changes: Array<{ from_state: unknown; to_state: unknown }> = [];
    actor.on('AGENT_STATE_CHANGED', (e) =>
      changes.push({ from_state: e.from_state, to_state: e.to_state }),
    );
    actor.start();
    actor.send({ type: 'START', payload: { task_id: 't1', extra: { ticket: 'T-9' } } });
    expect(actor.getSnapshot().context.extra).toEqual({ ticket: 'T-9' });
    actor.send({ type: 'INIT_COMPLETE', payload: { context_loaded: true } });
    actor.send({ type: 'PLAN_COMPLETE', payload: { plan_id: 'p', steps: 1 } });
    actor.send({ type: 'WAIT_FOR_INPUT', payload: { waiting_for: 'ok?' } });
    actor.send({ type: 'PAUSE', payload: { reason: 'lunch' } });
    actor.send({ type: 'RESUME', payload: {} });
    actor.send({ type: 'TIMEOUT', payload: { duration_ms: 1 } });
    expect(changes).toEqual([
      { from_state: 'executing', to_state: 'waiting_input' },
      { from_state: 'paused', to_state: 'waiting_input' },
      { from_state: 'waiting_input', to_state: 'failed' },
    ]);
  });

  for (const state of ACTIVE_STATES) {
    it(`pauses from ${state} and resumes to ${state} with the rest of the context intact`, () => {
      const actor = strictActorAt(state);
      const before = actor.getSnapshot().context;
      actor.send(sample('PAUSE'));
      expect(agentState(actor.getSnapshot())).toBe('paused');
      expect(actor.getSnapshot().context).toEqual({
        ...before,
        paused_from_state: state,
        current_state: 'paused',
      });
      actor.send(sample('RESUME'));
      expect(agentState(actor.getSnapshot())).toBe(state);
      expect(actor.getSnapshot().context).toEqual({ ...before, paused_from_state: null });
    });
  }

  it('records what a waiting state waits for and clears it when the input or agent arrives', () => {
    const input1 = strictActorAt('waiting_input');
    expect(input1.getSnapshot().context.waiting_for).toBe('user approval');
    input1.send(sample('INPUT_RECEIVED'));
    expect(agentState(input1.getSnapshot())).toBe('executing');
    expect(input1.getSnapshot().context.waiting_for).toBeNull();

    const agent = strictActorAt('waiting_agent');
    expect(agent.getSnapshot().context.waiting_for).toBe('researcher');
    agent.send(sample('AGENT_COMPLETE'));
    expect(agent.getSnapshot().context.waiting_for).toBeNull();
  });

  it('cancels a paused agent and clears paused_from_state', () => {
    const actor = strictActorAt('evaluating');
    actor.send(sample('PAUSE'));
    actor.send(sample('CANCEL'));
    expect(agentState(actor.getSnapshot())).toBe('cancelled');
    expect(actor.getSnapshot().context.paused_from_state).toBeNull();
    expect(() => actor.send(sample('RESUME'))).toThrow(InvalidTransitionError);
  });

  it('counts one iteration per adapt → execute loop', () => {
    const actor = strictActorAt('executing');
    for (let loop = 1; loop <= 3; loop += 1) {
      actor.send(sample('STEP_COMPLETE'));
      actor.send(sample('EVALUATION_FAIL'));
      actor.send({ type: 'ADAPTATION_COMPLETE', payload: { new_plan_id: `plan-${loop + 1}` } });
      expect(actor.getSnapshot().context).toMatchObject({
        iteration: loop,
        plan_id: `plan-${loop + 1}`,
      });
    }
  });

  for (const state of ACTIVE_STATES) {
    it(`fails from ${state} on STEP_FAILED, TIMEOUT and MAX_ITERATIONS and records the cause`, () => {
      const cases: Array<[AgentLifecycleEvent, string]> = [
        [
          { type: 'STEP_FAILED', payload: { step_id: 's1', error: 'tool crashed' } },
          'tool crashed',
        ],
        [{ type: 'TIMEOUT', payload: { duration_ms: 5000 } }, 'timeout after 5000 ms'],
        [{ type: 'MAX_ITERATIONS', payload: { iterations: 7 } }, 'max iterations reached (7)'],
      ];
      for (const [event, error] of cases) {
        const actor = strictActorAt(state);
        actor.send(event);
        expect(agentState(actor.getSnapshot())).toBe('failed');
        expect(actor.getSnapshot().context.error).toBe(error);
      }
    });
  }

  it('tags the terminal states and leaves them only through CLEANUP, which clears the task', () => {
    const finished: Record<(typeof TERMINAL_STATES)[number], AgentLifecycleEvent[]> = {
      succeeded: [...PATH_TO.evaluating, sample('EVALUATION_PASS')],
      failed: [...PATH_TO.planning, sample('STEP_FAILED')],
      cancelled: [...PATH_TO.executing, sample('CANCEL')],
    };
    for (const state of TERMINAL_STATES) {
      const actor = createStrictActor(machine, { input }).start();
      for (const event of finished[state]) actor.send(event);
      const snapshot = actor.getSnapshot();
      expect(agentState(snapshot)).toBe(state);
      expect(snapshot.hasTag('terminal')).toBe(true);
      expect(snapshot.status).toBe('active');
      for (const event of allSamples.filter((e) => e.type !== 'CLEANUP')) {
        expect(actor.can(event)).toBe(false);
      }
      actor.send(sample('CLEANUP'));
      expect(agentState(actor.getSnapshot())).toBe('idle');
      expect(actor.getSnapshot().context).toEqual(
        createActor(machine, { input }).getSnapshot().context,
      );
    }
  });

  it('emits AGENT_STATE_CHANGED on entering succeeded, failed, waiting_input and waiting_agent', () => {
    const emitted: AgentLifecycleEmitted[] = [];
    const actor = createStrictActor(machine, { input }).start();
    actor.ref.on('AGENT_STATE_CHANGED', (event) => emitted.push(event));
    for (const event of [...PATH_TO.waiting_input, sample('INPUT_RECEIVED')]) actor.send(event);
    actor.send(sample('WAIT_FOR_AGENT'));
    actor.send(sample('AGENT_COMPLETE'));
    actor.send(sample('STEP_COMPLETE'));
    actor.send(sample('EVALUATION_PASS'));
    expect(emitted.map((e) => [e.to_state, e.trigger_event])).toEqual([
      ['waiting_input', 'WAIT_FOR_INPUT'],
      ['waiting_agent', 'WAIT_FOR_AGENT'],
      ['succeeded', 'EVALUATION_PASS'],
    ]);
    expect(emitted[2]).toMatchObject({ agent_name: 'planner', task_id: 'task-1', user_id: null });
  });
});

describe('agent-lifecycle recovery policy', () => {
  const now = 1_750_000_000_000;
  const decide = (snapshot: Snap, ageMs: number, policy = chart.recovery) =>
    policy({
      actorId: 'agent-1',
      state: stateLabel(snapshot.value),
      snapshot,
      updatedAt: now - ageMs,
      now,
    });
  const representative = (state: AgentState): Snap => {
    const found = [...graph.states.values()].find((s) => agentState(s) === state);
    if (!found) throw new Error(`no explored ${state}`);
    return found;
  };

  it('resumes idle, waiting, paused and terminal states however old they are', () => {
    for (const state of [
      'idle',
      'waiting_input',
      'waiting_agent',
      'paused',
      ...TERMINAL_STATES,
    ] as const) {
      expect(decide(representative(state), 365 * 24 * 3_600_000).action).toBe('resume');
    }
  });

  for (const [state, budget] of Object.entries(STALE_AFTER_MS)) {
    it(`resumes ${state} within ${budget} ms and fails it with a legal TIMEOUT after`, () => {
      const snapshot = representative(state as AgentState);
      expect(decide(snapshot, budget - 1).action).toBe('resume');
      const late = decide(snapshot, budget + 10);
      expect(late).toMatchObject({
        action: 'send',
        event: { type: 'TIMEOUT', payload: { duration_ms: budget + 10 } },
      });
      if (late.action !== 'send') return;
      const actor = createStrictActor(machine, {
        input,
        snapshot: machine.getPersistedSnapshot(snapshot),
      }).start();
      actor.send(late.event as AgentLifecycleEvent);
      expect(agentState(actor.getSnapshot())).toBe('failed');
    });
  }

  it('honours per-state budgets and treats a clock behind the last transition as fresh', () => {
    const executing = representative('executing');
    const strict = createRecoveryPolicy({ executing: 1000 });
    expect(decide(executing, 1500, strict).action).toBe('send');
    expect(decide(executing, 500, strict).action).toBe('resume');
    expect(decide(executing, -60_000).action).toBe('resume');
  });
});

describe('agent-lifecycle exploration identity', () => {
  it('keeps the full-context exploration finite and reaches every pause origin', () => {
    const full = exploreMachine(machine, {
      events: chart.eventSamples,
      input,
      serializeState,
      limit: 20_000,
    });
    const origins = new Set(
      [...full.states.values()].flatMap((s) => s.context.paused_from_state ?? []),
    );
    expect([...origins].sort()).toEqual([...ACTIVE_STATES].sort());
    expect(new Set([...full.states.values()].map((s) => agentState(s))).size).toBe(12);
  });
});
