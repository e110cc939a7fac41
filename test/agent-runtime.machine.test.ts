import { readFileSync } from 'node:fs';
import { createActor, type SnapshotFrom } from 'xstate';
import { describe, expect, it } from 'vitest';
import {
  chart,
  eventSamples,
  machine,
  recovery,
  serializeState,
  type AgentRuntimeEmitted,
  type AgentRuntimeEvent,
  type AgentRuntimeInput,
} from '../machines/agent-runtime/index.ts';
import { InvalidEventError, InvalidTransitionError } from '../src/core/errors.ts';
import { stateLabel } from '../src/core/state.ts';
import { checkEvent, createStrictActor } from '../src/strict/strict-actor.ts';
import { roundTripDifferences } from '../src/testing/round-trip.ts';
import { exploreMachine, transitionTable } from '../src/testing/explore.ts';

type Snapshot = SnapshotFrom<typeof machine>;

const withController: AgentRuntimeInput = { agentId: 'agent-1', hasController: true };
const headless: AgentRuntimeInput = { agentId: 'agent-1', hasController: false };

/**
 * Seed 002's diagram and key events, transcribed. The diagram's `spawn_next_step`
 * edge is the key event `StartThinking` ("Running → Processing", brain) and its
 * `spawn_tools` edge is `StartTools` (tools); "user input" is `UserInput`;
 * "completion/error" from Paused is `TaskCompleted`/`TaskFailed`; the terminal box
 * holds Cancelled, reached by `CancelTask` ("Cancel current operation").
 */
const SEED_WITH_CONTROLLER = [
  'Starting --AgentInitialized--> Running',
  'Starting --AgentInitialized--> Paused', // "Moves from Starting to Running/Paused"
  'Running --StartThinking--> Processing.brain', // spawn_next_step / StartThinking
  'Running --StartTools--> Processing.tools', // spawn_tools
  'Processing.brain --BrainResult--> Running', // BrainResult (continue)
  'Processing.tools --ToolsCompleted--> Running',
  'Processing.brain --BrainResult--> Paused', // BrainResult (pause)
  'Processing.brain --TaskCancelled--> Paused',
  'Processing.tools --TaskCancelled--> Paused',
  'Paused --UserInput--> Running', // user input
  'Paused --TaskCompleted--> Completed', // completion
  'Paused --TaskFailed--> Failed', // error
  'Paused --CancelTask--> Cancelled',
];

/** The same diagram with Paused skipped ("skipped in the absence of controller"). */
const SEED_HEADLESS = [
  'Starting --AgentInitialized--> Running',
  'Running --StartThinking--> Processing.brain',
  'Running --StartTools--> Processing.tools',
  'Processing.brain --BrainResult--> Running',
  'Processing.tools --ToolsCompleted--> Running',
  'Processing.brain --BrainResult--> Completed', // pause with nobody to yield to ends the run
  'Processing.brain --TaskCancelled--> Cancelled',
  'Processing.tools --TaskCancelled--> Cancelled',
];

/** Edges the chart adds to the seed; the README's "Extra edges" lists each one. */
const EXTRAS_WITH_CONTROLLER = [
  'Starting --CancelTask--> Cancelled',
  'Starting --TaskFailed--> Failed',
  'Running --CancelTask--> Paused',
  'Running --TaskFailed--> Failed',
  'Processing.brain --CancelTask--> Paused',
  'Processing.tools --CancelTask--> Paused',
  'Processing.brain --TaskFailed--> Failed',
  'Processing.tools --TaskFailed--> Failed',
  'Processing.brain --ProcessingInterrupted--> Running',
  'Processing.tools --ProcessingInterrupted--> Running',
  'Processing.brain --ProcessingInterrupted--> Failed',
  'Processing.tools --ProcessingInterrupted--> Failed',
];

const EXTRAS_HEADLESS = [
  'Starting --CancelTask--> Cancelled',
  'Starting --TaskFailed--> Failed',
  'Running --CancelTask--> Cancelled',
  'Running --TaskFailed--> Failed',
  'Processing.brain --CancelTask--> Cancelled',
  'Processing.tools --CancelTask--> Cancelled',
  'Processing.brain --TaskFailed--> Failed',
  'Processing.tools --TaskFailed--> Failed',
  'Processing.brain --ProcessingInterrupted--> Running',
  'Processing.tools --ProcessingInterrupted--> Running',
  'Processing.brain --ProcessingInterrupted--> Failed',
  'Processing.tools --ProcessingInterrupted--> Failed',
];

const readme = readFileSync(
  new URL('../machines/agent-runtime/README.md', import.meta.url),
  'utf8',
);

/** The `from --EVENT--> to` edges the README writes in backticks, per subsection. */
function readmeExtras(heading: string): string[] {
  const section = readme.split('### Extra edges')[1] ?? '';
  const part = section.split('## Recovery policy')[0] ?? '';
  const start = part.indexOf(heading);
  const rest = start < 0 ? '' : part.slice(start + heading.length);
  const end = rest.search(/\n\S[^\n]*:\n/);
  const block = end < 0 ? rest : rest.slice(0, end);
  return [...block.matchAll(/`([^`]+ --\w+--> [^`]+)`/g)].map((m) => m[1] ?? '');
}

const allSamples = Object.values(eventSamples).flat() as AgentRuntimeEvent[];

function explore(input: AgentRuntimeInput) {
  return exploreMachine(machine, { events: eventSamples, input, serializeState });
}

function strict(input: AgentRuntimeInput = withController) {
  return createStrictActor(machine, { input, id: 'run-1' }).start();
}

/** The error `fn` throws; fails the test when it throws nothing. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('agent-runtime conformance with seed 002', () => {
  for (const [name, input, seed, extras, heading] of [
    [
      'with a controller',
      withController,
      SEED_WITH_CONTROLLER,
      EXTRAS_WITH_CONTROLLER,
      'With a controller:',
    ],
    ['without a controller', headless, SEED_HEADLESS, EXTRAS_HEADLESS, 'Without a controller'],
  ] as const) {
    it(`has every edge of the seed's diagram ${name}`, () => {
      const table = transitionTable(machine, { events: eventSamples, input, serializeState });
      const missing = seed.filter((edge) => !table.includes(edge));
      expect(missing).toEqual([]);
    });

    it(`adds only the extra edges the README records ${name}`, () => {
      const table = transitionTable(machine, { events: eventSamples, input, serializeState });
      const extra = table.filter((edge) => !seed.includes(edge));
      expect(extra.sort()).toEqual([...extras].sort());
      expect(readmeExtras(heading).sort()).toEqual([...extras].sort());
    });
  }

  it('never enters Paused without a controller', () => {
    const graph = explore(headless);
    const labels = [...graph.states.values()].map((s) => stateLabel(s.value));
    expect(labels).not.toContain('Paused');
    expect(new Set(labels)).toEqual(
      new Set([
        'Starting',
        'Running',
        'Processing.brain',
        'Processing.tools',
        'Completed',
        'Failed',
        'Cancelled',
      ]),
    );
  });

  it('reaches every state with a controller', () => {
    const graph = explore(withController);
    const labels = new Set([...graph.states.values()].map((s) => stateLabel(s.value)));
    expect(labels).toEqual(
      new Set([
        'Starting',
        'Running',
        'Processing.brain',
        'Processing.tools',
        'Paused',
        'Completed',
        'Failed',
        'Cancelled',
      ]),
    );
  });

  it('rejects every event in the terminal states', () => {
    const graph = explore(withController);
    const terminal = [...graph.states.values()].filter((s) => s.status === 'done');
    expect(terminal.length).toBeGreaterThanOrEqual(3);
    for (const snapshot of terminal) {
      for (const event of allSamples) {
        expect(() => checkEvent(machine, snapshot, event)).toThrow(InvalidTransitionError);
      }
    }
  });
});

describe('agent-runtime behaviour', () => {
  it('runs brain and tool steps, pauses for the user and completes with an output', () => {
    const actor = strict();
    const emitted: AgentRuntimeEmitted[] = [];
    actor.ref.on('*', (e) => emitted.push(e));

    actor.send({ type: 'AgentInitialized' });
    expect(stateLabel(actor.getSnapshot())).toBe('Running');
    actor.send({ type: 'StartThinking' });
    expect(stateLabel(actor.getSnapshot())).toBe('Processing.brain');
    actor.send({
      type: 'BrainResult',
      decision: 'continue',
      toolCalls: [{ id: 'c1', name: 'grep', args: { pattern: 'TODO' } }],
    });
    expect(stateLabel(actor.getSnapshot())).toBe('Running');
    expect(() => actor.send({ type: 'StartThinking' })).toThrow(InvalidTransitionError);
    actor.send({ type: 'StartTools' });
    expect(stateLabel(actor.getSnapshot())).toBe('Processing.tools');
    actor.send({ type: 'ToolsCompleted', results: [{ toolCallId: 'c1', ok: true }] });
    expect(actor.getSnapshot().context.pendingToolCalls).toEqual([]);
    expect(() => actor.send({ type: 'StartTools' })).toThrow(InvalidTransitionError);
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'BrainResult', decision: 'pause', message: 'Found 3 TODOs. Fix them?' });
    expect(stateLabel(actor.getSnapshot())).toBe('Paused');
    actor.send({ type: 'UserInput', message: 'No, just list them.' });
    expect(stateLabel(actor.getSnapshot())).toBe('Running');
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'BrainResult', decision: 'pause', message: 'Listed.' });
    actor.send({ type: 'TaskCompleted' });

    const snapshot = actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual({
      agentId: 'agent-1',
      status: 'completed',
      steps: 3,
      result: 'Listed.',
      error: null,
      cancelReason: null,
    });
    expect(emitted).toEqual([
      { type: 'spawn_next_step', agentId: 'agent-1', step: 1 },
      {
        type: 'spawn_tools',
        agentId: 'agent-1',
        toolCalls: [{ id: 'c1', name: 'grep', args: { pattern: 'TODO' } }],
      },
      { type: 'spawn_next_step', agentId: 'agent-1', step: 2 },
      { type: 'spawn_next_step', agentId: 'agent-1', step: 3 },
    ]);
  });

  it('starts paused only when asked to wait for input and a controller is attached', () => {
    const paused = strict(withController);
    paused.send({ type: 'AgentInitialized', waitForInput: true });
    expect(stateLabel(paused.getSnapshot())).toBe('Paused');

    const running = strict(headless);
    running.send({ type: 'AgentInitialized', waitForInput: true });
    expect(stateLabel(running.getSnapshot())).toBe('Running');
  });

  it('ends a headless run in Completed when the brain yields control', () => {
    const actor = strict(headless);
    actor.send({ type: 'AgentInitialized' });
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'BrainResult', decision: 'pause', message: 'All tests pass.' });
    const snapshot = actor.getSnapshot();
    expect(stateLabel(snapshot)).toBe('Completed');
    expect(snapshot.output).toMatchObject({ status: 'completed', result: 'All tests pass.' });
  });

  it('cancels an in-flight step back to Paused with a controller and emits cancel_processing', () => {
    const actor = strict();
    const emitted: AgentRuntimeEmitted[] = [];
    actor.ref.on('cancel_processing', (e) => emitted.push(e));
    actor.send({ type: 'AgentInitialized' });
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'CancelTask', reason: 'wrong repo' });
    expect(stateLabel(actor.getSnapshot())).toBe('Paused');
    expect(emitted).toEqual([
      { type: 'cancel_processing', agentId: 'agent-1', reason: 'wrong repo' },
    ]);
    // The aborted step's late result is refused.
    expect(() => actor.send({ type: 'BrainResult', decision: 'continue' })).toThrow(
      InvalidTransitionError,
    );
    actor.send({ type: 'CancelTask' });
    expect(actor.getSnapshot().output).toMatchObject({ status: 'cancelled', cancelReason: null });
  });

  it('ends a headless run in Cancelled when its tools report cancellation', () => {
    const actor = strict(headless);
    actor.send({ type: 'AgentInitialized' });
    actor.send({ type: 'StartThinking' });
    actor.send({
      type: 'BrainResult',
      decision: 'continue',
      toolCalls: [{ id: 'c1', name: 'sh' }],
    });
    actor.send({ type: 'StartTools' });
    actor.send({ type: 'TaskCancelled', reason: 'SIGTERM' });
    expect(actor.getSnapshot().output).toMatchObject({
      status: 'cancelled',
      cancelReason: 'SIGTERM',
    });
  });

  it('records a structured error when the task fails', () => {
    const actor = strict();
    actor.send({ type: 'AgentInitialized' });
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'TaskFailed', code: 'MODEL_UNAVAILABLE', message: 'backend down' });
    expect(actor.getSnapshot().output).toMatchObject({
      status: 'failed',
      error: { code: 'MODEL_UNAVAILABLE', message: 'backend down' },
    });
  });

  it('re-plans an interrupted step from Running and fails after maxInterruptions in a row', () => {
    const actor = strict({ agentId: 'agent-1', hasController: true, maxInterruptions: 2 });
    actor.send({ type: 'AgentInitialized' });
    for (let i = 1; i <= 2; i++) {
      actor.send({ type: 'StartThinking' });
      actor.send({
        type: 'BrainResult',
        decision: 'continue',
        toolCalls: [{ id: 'c', name: 'sh' }],
      });
      actor.send({ type: 'StartTools' });
      actor.send({ type: 'ProcessingInterrupted', reason: 'crash' });
      expect(stateLabel(actor.getSnapshot())).toBe('Running');
      expect(actor.getSnapshot().context).toMatchObject({ interruptions: i, pendingToolCalls: [] });
    }
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'ProcessingInterrupted', reason: 'crash again' });
    expect(actor.getSnapshot().output).toMatchObject({
      status: 'failed',
      error: { code: 'TOO_MANY_INTERRUPTIONS' },
    });
  });

  it('resets the interruption count once a step completes', () => {
    const actor = strict({ agentId: 'agent-1', hasController: true, maxInterruptions: 1 });
    actor.send({ type: 'AgentInitialized' });
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'ProcessingInterrupted', reason: 'crash' });
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'BrainResult', decision: 'continue' });
    expect(actor.getSnapshot().context.interruptions).toBe(0);
    actor.send({ type: 'StartThinking' });
    actor.send({ type: 'ProcessingInterrupted', reason: 'crash' });
    expect(stateLabel(actor.getSnapshot())).toBe('Running');
  });

  it('fails to start on an input outside its schema', () => {
    const errors: unknown[] = [];
    const actor = createActor(machine, { input: { agentId: '', hasController: true } });
    actor.subscribe({ error: (e) => errors.push(e) });
    actor.start();
    expect(actor.getSnapshot().status).toBe('error');
    expect(errors).toHaveLength(1);
  });
});

describe('agent-runtime strict validation', () => {
  it('rejects an illegal event with InvalidTransitionError and leaves the snapshot unchanged', () => {
    const actor = strict();
    const before = actor.getPersistedSnapshot();
    const error = thrown(() =>
      actor.send({ type: 'ToolsCompleted', results: [{ toolCallId: 'x', ok: true }] }),
    );
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({
      machineId: 'agent-runtime',
      actorId: 'run-1',
      state: 'Starting',
      eventType: 'ToolsCompleted',
    });
    expect(actor.getPersistedSnapshot()).toEqual(before);
  });

  const secret = 'sk-secret-value-123';
  const cases: Array<[string, unknown, string, string | undefined]> = [
    ['an unknown type', { type: 'Explode' }, 'unknown_type', undefined],
    ['a missing field', { type: 'TaskFailed', message: secret }, 'missing_field', 'code'],
    [
      'a wrong type',
      { type: 'AgentInitialized', waitForInput: secret },
      'invalid_field',
      'waitForInput',
    ],
    [
      'a value outside its enum',
      { type: 'BrainResult', decision: secret },
      'invalid_field',
      'decision',
    ],
    ['an empty message', { type: 'UserInput', message: '' }, 'invalid_field', 'message'],
    [
      'tool calls on a pause',
      { type: 'BrainResult', decision: 'pause', toolCalls: [{ id: secret, name: 'x' }] },
      'invalid_field',
      'toolCalls',
    ],
    ['an extra key', { type: 'StartThinking', token: secret }, 'unexpected_field', 'token'],
    [
      'a __proto__ key',
      JSON.parse(`{"type":"UserInput","message":"hi","__proto__":{"polluted":"${secret}"}}`),
      'forbidden_key',
      '__proto__',
    ],
  ];
  for (const [name, event, reason, field] of cases) {
    it(`rejects ${name} with InvalidEventError naming the field, without payload values`, () => {
      const actor = strict();
      actor.send({ type: 'AgentInitialized', waitForInput: true });
      const before = actor.getPersistedSnapshot();
      const error = thrown(() => actor.send(event as AgentRuntimeEvent));
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ machineId: 'agent-runtime', reason, field });
      expect((error as Error).message).not.toContain(secret);
      expect(actor.getPersistedSnapshot()).toEqual(before);
    });
  }
});

describe('agent-runtime persistence', () => {
  for (const input of [withController, headless]) {
    it(`restores every reachable state from JSON (hasController: ${input.hasController})`, () => {
      const graph = explore(input);
      expect(graph.states.size).toBeGreaterThan(8);
      for (const snapshot of graph.states.values()) {
        expect(roundTripDifferences(machine, snapshot, allSamples)).toEqual([]);
      }
    });
  }
});

describe('agent-runtime recovery policy', () => {
  const decide = (snapshot: Snapshot) =>
    recovery({
      actorId: 'run-1',
      state: stateLabel(snapshot),
      snapshot,
      updatedAt: 1_000,
      now: 61_000,
    });

  it('sends a legal ProcessingInterrupted from Processing and resumes every other live state', () => {
    for (const input of [withController, headless]) {
      for (const snapshot of explore(input).states.values()) {
        if (snapshot.status !== 'active') continue;
        const decision = decide(snapshot);
        const label = stateLabel(snapshot);
        if (!label.startsWith('Processing.')) {
          expect(decision.action, label).toBe('resume');
          continue;
        }
        expect(decision.action).toBe('send');
        if (decision.action !== 'send') continue;
        const event = checkEvent(machine, snapshot, decision.event);
        const actor = createStrictActor(machine, {
          snapshot: machine.getPersistedSnapshot(snapshot),
        });
        actor.start().send(event);
        expect(['Running', 'Failed']).toContain(stateLabel(actor.getSnapshot()));
      }
    }
  });

  it('is the policy the catalog entry declares', () => {
    expect(chart.recovery).toBe(recovery);
    expect(chart.name).toBe('agent-runtime');
    const types = Object.keys(chart.events).sort();
    expect(Object.keys(chart.eventSamples).sort()).toEqual(types);
    expect([...machine.events].filter((t) => !t.startsWith('xstate.')).sort()).toEqual(types);
  });
});
