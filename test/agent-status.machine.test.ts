import { createActor, initialTransition, transition, type SnapshotFrom } from 'xstate';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AGENT_STATUSES,
  chart,
  eventSamples,
  machine,
  recovery,
  serializeState,
  type AgentStatus,
  type AgentStatusEvent,
  type AgentStatusInput,
} from '../machines/agent-status/index.ts';
import { InvalidEventError, InvalidTransitionError } from '../src/core/errors.ts';
import { stateLabel } from '../src/core/state.ts';
import { checkEvent, createStrictActor } from '../src/strict/strict-actor.ts';
import { roundTripDifferences } from '../src/testing/round-trip.ts';
import { exploreMachine, transitionTable } from '../src/testing/explore.ts';

type Snapshot = SnapshotFrom<typeof machine>;

const input: AgentStatusInput = {
  agentId: 'agent-7',
  name: 'code-analyzer',
  task: 'Analyze codebase structure',
  modelBackend: 'anthropic',
  createdAt: '2025-11-24T05:50:00Z',
};

/**
 * Seed 003 §1 "Valid Transitions", transcribed:
 *   Idle → Initializing, Terminated
 *   Initializing → Running, Thinking, Failed, Terminated
 *   Running ⟷ Thinking, Paused, Completed, Failed, Terminated
 *   Paused → Running, Thinking, Failed, Terminated
 * The third line: running and thinking reach each other, and both reach paused,
 * completed, failed and terminated.
 */
const SEED_VALID_TRANSITIONS: Array<[AgentStatus, AgentStatus[]]> = [
  ['idle', ['initializing', 'terminated']],
  ['initializing', ['running', 'thinking', 'failed', 'terminated']],
  ['running', ['thinking', 'paused', 'completed', 'failed', 'terminated']],
  ['thinking', ['running', 'paused', 'completed', 'failed', 'terminated']],
  ['paused', ['running', 'thinking', 'failed', 'terminated']],
];
const SEED_TABLE = SEED_VALID_TRANSITIONS.flatMap(([from, targets]) =>
  targets.map((to) => `${from} --STATUS_UPDATE--> ${to}`),
);
const NON_TERMINAL: AgentStatus[] = ['idle', 'initializing', 'running', 'thinking', 'paused'];
const TERMINAL: AgentStatus[] = ['completed', 'failed', 'terminated'];

/** Update events stay in their status: thought only while thinking, the rest in every live status. */
const UPDATE_SELF_LOOPS = [
  'thinking --THOUGHT_UPDATE--> thinking',
  ...NON_TERMINAL.flatMap((s) =>
    ['PROGRESS_UPDATE', 'ERROR', 'OUTPUT', 'METADATA_UPDATE'].map((e) => `${s} --${e}--> ${s}`),
  ),
];

const allSamples = Object.values(eventSamples).flat() as AgentStatusEvent[];

function strict(overrides: Partial<AgentStatusInput> = {}) {
  return createStrictActor(machine, { input: { ...input, ...overrides }, id: 'status-1' }).start();
}

/** UTC ISO time `seconds` after 2025-11-24T05:53:00Z. */
function at(seconds: number): string {
  return new Date(Date.UTC(2025, 10, 24, 5, 53, seconds)).toISOString();
}

/** A strict actor driven through `path` (status names), one second apart. */
function drive(path: AgentStatus[], overrides: Partial<AgentStatusInput> = {}) {
  const actor = strict(overrides);
  path.forEach((status, i) => actor.send({ type: 'STATUS_UPDATE', status, at: at(i) }));
  return actor;
}

/** A path from idle to each non-terminal status, along seed transitions. */
const PATH_TO: Record<AgentStatus, AgentStatus[]> = {
  idle: [],
  initializing: ['initializing'],
  running: ['initializing', 'running'],
  thinking: ['initializing', 'thinking'],
  paused: ['initializing', 'running', 'paused'],
  completed: ['initializing', 'running', 'completed'],
  failed: ['initializing', 'failed'],
  terminated: ['terminated'],
};

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

function explore() {
  return exploreMachine(machine, { events: eventSamples, input, serializeState });
}

describe('agent-status conformance with seed 003', () => {
  it("changes status exactly along the seed's valid-transition list", () => {
    const table = transitionTable(machine, { events: eventSamples, input, serializeState });
    expect(table.filter((row) => row.includes('--STATUS_UPDATE-->'))).toEqual(
      [...SEED_TABLE].sort(),
    );
  });

  it('has no other edges than the seed transitions and the update self-loops', () => {
    const table = transitionTable(machine, { events: eventSamples, input, serializeState });
    expect(table).toEqual([...SEED_TABLE, ...UPDATE_SELF_LOOPS].sort());
  });

  it('rejects every status change the seed does not list, self-transitions included', () => {
    for (const from of NON_TERMINAL) {
      const allowed = SEED_VALID_TRANSITIONS.find(([s]) => s === from)?.[1] ?? [];
      for (const to of AGENT_STATUSES) {
        const actor = drive(PATH_TO[from]);
        const event = { type: 'STATUS_UPDATE', status: to, at: at(30) } as const;
        if (allowed.includes(to)) {
          actor.send(event);
          expect(stateLabel(actor.getSnapshot())).toBe(to);
        } else {
          const error = thrown(() => actor.send(event));
          expect(error, `${from} → ${to}`).toBeInstanceOf(InvalidTransitionError);
        }
      }
    }
  });

  it('makes the three terminal statuses final and accepts nothing in them', () => {
    for (const status of TERMINAL) {
      const snapshot = drive(PATH_TO[status]).getSnapshot();
      expect(snapshot.status).toBe('done');
      expect(snapshot.output?.status).toBe(status);
      for (const event of allSamples) {
        expect(() => checkEvent(machine, snapshot, event)).toThrow(InvalidTransitionError);
      }
    }
  });
});

describe('agent-status thought, progress, error and timeline', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sets the current thought only while thinking and clears it on leaving', () => {
    for (const to of ['running', 'paused', 'completed', 'failed', 'terminated'] as const) {
      const actor = drive(['initializing', 'thinking']);
      actor.send({
        type: 'THOUGHT_UPDATE',
        thought: 'Found 5 potential optimizations...',
        at: at(5),
      });
      expect(actor.getSnapshot().context.currentThought).toBe('Found 5 potential optimizations...');
      actor.send({ type: 'STATUS_UPDATE', status: to, at: at(6) });
      expect(actor.getSnapshot().context.currentThought, to).toBeNull();
    }
    for (const status of ['idle', 'initializing', 'running', 'paused'] as const) {
      const actor = drive(PATH_TO[status]);
      const error = thrown(() =>
        actor.send({ type: 'THOUGHT_UPDATE', thought: 'stray', at: at(9) }),
      );
      expect(error, status).toBeInstanceOf(InvalidTransitionError);
    }
  });

  it('computes the percentage from steps and keeps a given percentage', () => {
    const actor = drive(['initializing', 'running']);
    actor.send({
      type: 'PROGRESS_UPDATE',
      currentStep: 5,
      totalSteps: 11,
      message: 'file 5 of 11',
      at: at(3),
    });
    expect(actor.getSnapshot().context.progress).toEqual({
      percentage: (5 / 11) * 100,
      currentStep: 5,
      totalSteps: 11,
      message: 'file 5 of 11',
      details: {},
    });
    actor.send({ type: 'PROGRESS_UPDATE', currentStep: 0, totalSteps: 4, at: at(4) });
    expect(actor.getSnapshot().context.progress?.percentage).toBe(0);
    actor.send({ type: 'PROGRESS_UPDATE', percentage: 35.5, details: { files: 7 }, at: at(5) });
    expect(actor.getSnapshot().context.progress).toEqual({
      percentage: 35.5,
      currentStep: null,
      totalSteps: null,
      message: null,
      details: { files: 7 },
    });
  });

  it('records a structured error with its timestamp and keeps it into the failed output', () => {
    const actor = drive(['initializing', 'running']);
    actor.send({
      type: 'ERROR',
      error: { code: 'RATE_LIMITED', message: 'slow down', recoverable: true },
      at: 1763963600000,
    });
    expect(stateLabel(actor.getSnapshot())).toBe('running');
    expect(actor.getSnapshot().context.error).toEqual({
      code: 'RATE_LIMITED',
      message: 'slow down',
      details: null,
      timestamp: '2025-11-24T05:53:20.000Z',
      recoverable: true,
    });
    actor.send({
      type: 'STATUS_UPDATE',
      status: 'failed',
      reason: 'backend gone',
      at: '2025-11-24T07:00:00+01:00',
      error: { code: 'MODEL_ERROR', message: '500', details: 'trace…', recoverable: false },
    });
    expect(actor.getSnapshot().output).toEqual({
      agentId: 'agent-7',
      status: 'failed',
      error: {
        code: 'MODEL_ERROR',
        message: '500',
        details: 'trace…',
        timestamp: '2025-11-24T06:00:00.000Z',
        recoverable: false,
      },
      progress: null,
      startedAt: at(0),
      completedAt: '2025-11-24T06:00:00.000Z',
    });
  });

  it('appends one timeline entry with reason per transition and none per update', () => {
    const actor = strict();
    actor.send({
      type: 'STATUS_UPDATE',
      status: 'initializing',
      reason: 'Loading context',
      at: at(0),
    });
    actor.send({ type: 'OUTPUT', stream: 'stdout', content: 'booting', at: at(1) });
    actor.send({ type: 'STATUS_UPDATE', status: 'thinking', at: at(2) });
    actor.send({ type: 'THOUGHT_UPDATE', thought: 'hmm', at: at(3) });
    actor.send({
      type: 'STATUS_UPDATE',
      status: 'running',
      reason: 'Started execution',
      at: at(4),
    });
    const context = actor.getSnapshot().context;
    expect(context.timeline).toEqual([
      { from: null, to: 'idle', timestamp: '2025-11-24T05:50:00.000Z', reason: 'Agent created' },
      { from: 'idle', to: 'initializing', timestamp: at(0), reason: 'Loading context' },
      { from: 'initializing', to: 'thinking', timestamp: at(2), reason: null },
      { from: 'thinking', to: 'running', timestamp: at(4), reason: 'Started execution' },
    ]);
    expect(context.startedAt).toBe(at(0));
    expect(context.updatedAt).toBe(at(4));
    expect(context.lastOutput).toEqual({ stream: 'stdout', content: 'booting', timestamp: at(1) });
  });

  it('keeps only the last timelineLimit entries', () => {
    const actor = drive(['initializing', 'running', 'thinking', 'running', 'paused'], {
      timelineLimit: 3,
    });
    expect(actor.getSnapshot().context.timeline.map((e) => `${e.from}→${e.to}`)).toEqual([
      'running→thinking',
      'thinking→running',
      'running→paused',
    ]);
  });

  it('gives the same snapshots on replay whatever the wall clock says', () => {
    const events: AgentStatusEvent[] = [
      { type: 'STATUS_UPDATE', status: 'initializing', at: 1763963580000 },
      { type: 'STATUS_UPDATE', status: 'thinking', at: '2025-11-24T05:53:01Z' },
      { type: 'THOUGHT_UPDATE', thought: 'plan', at: '2025-11-24T05:53:02Z' },
      { type: 'PROGRESS_UPDATE', currentStep: 1, totalSteps: 3, at: '2025-11-24T05:53:03Z' },
      { type: 'STATUS_UPDATE', status: 'completed', at: '2025-11-24T05:53:04Z' },
    ];
    const replay = () => {
      let [snapshot] = initialTransition(machine, input);
      for (const event of events) [snapshot] = transition(machine, snapshot, event);
      return JSON.stringify(machine.getPersistedSnapshot(snapshot));
    };
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2001-01-01T00:00:00Z'));
    const first = replay();
    vi.setSystemTime(new Date('2039-06-06T12:00:00Z'));
    const second = replay();
    expect(second).toBe(first);
    expect(JSON.parse(first)).toMatchObject({ status: 'done', output: { status: 'completed' } });
  });
});

describe('agent-status strict validation', () => {
  it('rejects an illegal event with InvalidTransitionError and leaves the snapshot unchanged', () => {
    const actor = drive(['initializing']);
    const before = actor.getPersistedSnapshot();
    const error = thrown(() =>
      actor.send({ type: 'STATUS_UPDATE', status: 'completed', at: at(9) }),
    );
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({
      machineId: 'agent-status',
      actorId: 'status-1',
      state: 'initializing',
      eventType: 'STATUS_UPDATE',
    });
    expect(actor.getPersistedSnapshot()).toEqual(before);
  });

  const secret = 'sk-secret-value-123';
  const cases: Array<[string, unknown, string, string | undefined]> = [
    ['an unknown type', { type: 'HEARTBEAT', at: at(1) }, 'unknown_type', undefined],
    ['a missing timestamp', { type: 'STATUS_UPDATE', status: 'running' }, 'missing_field', 'at'],
    [
      'an unknown status',
      { type: 'STATUS_UPDATE', status: secret, at: at(1) },
      'invalid_field',
      'status',
    ],
    [
      'a malformed timestamp',
      { type: 'OUTPUT', stream: 'stdout', content: 'x', at: secret },
      'invalid_field',
      'at',
    ],
    [
      'a wrong type',
      { type: 'PROGRESS_UPDATE', percentage: secret, at: at(1) },
      'invalid_field',
      'percentage',
    ],
    [
      'a percentage over 100',
      { type: 'PROGRESS_UPDATE', percentage: 101, at: at(1) },
      'invalid_field',
      'percentage',
    ],
    [
      'both progress forms',
      { type: 'PROGRESS_UPDATE', percentage: 5, currentStep: 1, totalSteps: 2, at: at(1) },
      'invalid_field',
      'percentage',
    ],
    [
      'no progress at all',
      { type: 'PROGRESS_UPDATE', message: secret, at: at(1) },
      'missing_field',
      'percentage',
    ],
    [
      'steps without a total',
      { type: 'PROGRESS_UPDATE', currentStep: 2, at: at(1) },
      'missing_field',
      'totalSteps',
    ],
    [
      'a step past the total',
      { type: 'PROGRESS_UPDATE', currentStep: 3, totalSteps: 2, at: at(1) },
      'invalid_field',
      'currentStep',
    ],
    [
      'an error without recoverable',
      { type: 'ERROR', error: { code: 'X', message: secret }, at: at(1) },
      'missing_field',
      'error.recoverable',
    ],
    [
      'an error on a non-failed status',
      {
        type: 'STATUS_UPDATE',
        status: 'running',
        at: at(1),
        error: { code: 'X', message: secret, recoverable: true },
      },
      'invalid_field',
      'error',
    ],
    [
      'an extra key',
      { type: 'OUTPUT', stream: 'stdout', content: 'x', at: at(1), pid: secret },
      'unexpected_field',
      'pid',
    ],
    [
      'a __proto__ key',
      JSON.parse(
        `{"type":"ERROR","at":1,"error":{"code":"X","message":"m","recoverable":true,"__proto__":{"p":"${secret}"}}}`,
      ),
      'forbidden_key',
      'error.__proto__',
    ],
  ];
  for (const [name, event, reason, field] of cases) {
    it(`rejects ${name} with InvalidEventError naming the field, without payload values`, () => {
      const actor = drive(['initializing', 'running']);
      const before = actor.getPersistedSnapshot();
      const error = thrown(() => actor.send(event as AgentStatusEvent));
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'agent-status', reason, field });
      expect((error as Error).message).not.toContain(secret);
      expect(actor.getPersistedSnapshot()).toEqual(before);
    });
  }
});

describe('agent-status persistence', () => {
  it('restores every reachable state from JSON and accepts the same next events', () => {
    const graph = explore();
    expect(graph.states.size).toBeGreaterThanOrEqual(9);
    for (const snapshot of graph.states.values()) {
      expect(roundTripDifferences(machine, snapshot, allSamples)).toEqual([]);
    }
  });
});

describe('agent-status recovery policy', () => {
  const decide = (snapshot: Snapshot) =>
    recovery({
      actorId: 'status-1',
      state: stateLabel(snapshot),
      snapshot,
      updatedAt: Date.UTC(2025, 10, 24, 6, 0, 0),
      now: Date.UTC(2025, 10, 24, 6, 5, 0),
    });

  it('records a recoverable MONITOR_RESTARTED error in active statuses without changing them', () => {
    for (const status of ['initializing', 'running', 'thinking'] as const) {
      const actor = drive(PATH_TO[status]);
      const decision = decide(actor.getSnapshot());
      expect(decision.action).toBe('send');
      if (decision.action !== 'send') continue;
      actor.send(decision.event as AgentStatusEvent);
      const snapshot = actor.getSnapshot();
      expect(stateLabel(snapshot)).toBe(status);
      expect(snapshot.context.error).toMatchObject({
        code: 'MONITOR_RESTARTED',
        recoverable: true,
        timestamp: '2025-11-24T06:05:00.000Z',
      });
      expect(snapshot.context.timeline).toHaveLength(PATH_TO[status].length + 1);
    }
  });

  it('resumes idle and paused agents as they are', () => {
    for (const status of ['idle', 'paused'] as const) {
      expect(decide(drive(PATH_TO[status]).getSnapshot()).action).toBe('resume');
    }
  });

  it('is the policy the catalog entry declares', () => {
    expect(chart.recovery).toBe(recovery);
    expect(chart.name).toBe('agent-status');
    const types = Object.keys(chart.events).sort();
    expect(Object.keys(chart.eventSamples).sort()).toEqual(types);
    expect([...machine.events].filter((t) => !t.startsWith('xstate.')).sort()).toEqual(types);
  });
});

describe("seed 003's pid and metadata", () => {
  it('come from the input, METADATA_UPDATE merges metadata and sets the pid, in any live status', () => {
    const actor = createActor(machine, {
      input: { ...chart.defaultInput, pid: 100, metadata: { team: 'search' } },
    }).start();
    expect(actor.getSnapshot().context).toMatchObject({ pid: 100, metadata: { team: 'search' } });
    actor.send({ type: 'METADATA_UPDATE', metadata: { region: 'eu' }, pid: 4242, at: 1 });
    expect(actor.getSnapshot().context).toMatchObject({
      pid: 4242,
      metadata: { team: 'search', region: 'eu' },
    });
    actor.send({ type: 'METADATA_UPDATE', pid: null, at: 2 });
    expect(actor.getSnapshot().context.pid).toBeNull();
    expect(actor.getSnapshot().value).toBe('idle');
  });
});
