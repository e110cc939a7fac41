import { afterEach, describe, expect, test } from 'vitest';
import { agentStatus, taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { ManualClock } from '../src/core/clock.ts';
import { getRuntime } from '../src/durable/open.ts';
import { type DurableRuntime } from '../src/durable/runtime.ts';
import {
  NdjsonWriter,
  feedRowTransition,
  parseNdjson,
  streamMessageSchema,
  toStreamMessages,
  type ParsedLine,
  type StreamMessage,
} from '../src/observe/stream.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';

const T0 = Date.parse('2026-03-01T09:00:00.000Z');
const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) {
    await getRuntime(store).close();
    await store.close();
  }
});

/** A store and its runtime on a manual clock, with an NDJSON writer capturing every line. */
function setup(options: { heartbeatMs?: number } = {}) {
  const store = openStore('sqlite::memory:');
  stores.push(store);
  const clock = new ManualClock(T0);
  const runtime = getRuntime(store, { clock });
  const lines: string[] = [];
  const writer = new NdjsonWriter({ write: (chunk: string) => lines.push(chunk) }, options);
  writer.attach(runtime);
  const messages = () => lines.map((l) => JSON.parse(l) as StreamMessage);
  return { store, clock, runtime, writer, lines, messages };
}

async function settle(runtime: DurableRuntime): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
  await runtime.drain();
}

async function collect(source: Iterable<string | Uint8Array>): Promise<ParsedLine[]> {
  const out: ParsedLine[] = [];
  for await (const r of parseNdjson(source)) out.push(r);
  return out;
}

const at = '2026-03-01T09:00:00Z';
const agentInput = {
  agentId: 'agent-7',
  name: 'code-analyzer',
  task: 'Analyze codebase structure',
  modelBackend: 'anthropic',
  createdAt: at,
};

describe('the seed 003 message schemas', () => {
  test('accept the seed examples verbatim', () => {
    const examples = [
      {
        type: 'status_update',
        agent_id: '550e8400-e29b-41d4-a716-446655440000',
        status: 'thinking',
        timestamp: '2025-11-24T05:53:00Z',
      },
      {
        type: 'thought_update',
        agent_id: '550e8400-e29b-41d4-a716-446655440000',
        thought: 'Analyzing the codebase structure...',
        timestamp: '2025-11-24T05:53:01Z',
      },
      {
        type: 'progress_update',
        agent_id: '550e8400-e29b-41d4-a716-446655440000',
        progress: {
          percentage: 45.5,
          current_step: 5,
          total_steps: 11,
          message: 'Processing file 5 of 11',
        },
        timestamp: '2025-11-24T05:53:02Z',
      },
    ];
    for (const example of examples) expect(streamMessageSchema.parse(example)).toEqual(example);
  });

  test('require agent_id and timestamp on every type, heartbeat included', () => {
    for (const type of ['heartbeat', 'lifecycle', 'status_update']) {
      expect(
        streamMessageSchema.safeParse({ type, timestamp: at, event: 'x', status: 'x' }).success,
      ).toBe(false);
      expect(
        streamMessageSchema.safeParse({ type, agent_id: 'a', event: 'x', status: 'x' }).success,
      ).toBe(false);
    }
    expect(
      streamMessageSchema.safeParse({ type: 'heartbeat', agent_id: 'a', timestamp: at }),
    ).toMatchObject({ success: true });
  });
});

describe('durable actors on the stream', () => {
  test('an agent-status actor streams its status, thought, progress, output, error and lifecycle', async () => {
    const { store, clock, messages } = setup();
    const agent = await createDurableActor(agentStatus.machine, {
      id: 'agent-7',
      store,
      input: agentInput,
      clock,
    });
    await agent.send({ type: 'STATUS_UPDATE', status: 'initializing', at });
    clock.advance(1000);
    await agent.send({ type: 'STATUS_UPDATE', status: 'thinking', at });
    await agent.send({ type: 'THOUGHT_UPDATE', thought: 'Reading the README', at });
    await agent.send({
      type: 'PROGRESS_UPDATE',
      currentStep: 5,
      totalSteps: 20,
      message: 'file 5 of 20',
      at,
    });
    await agent.send({ type: 'OUTPUT', stream: 'stderr', content: 'warning: x', at });
    await agent.send({
      type: 'STATUS_UPDATE',
      status: 'failed',
      at,
      error: { code: 'MODEL_ERROR', message: 'backend 500', recoverable: false },
    });

    const got = messages();
    expect(got.map((m) => m.type)).toEqual([
      'lifecycle',
      'status_update',
      'status_update',
      'lifecycle',
      'status_update',
      'thought_update',
      'progress_update',
      'output',
      'status_update',
      'error',
      'lifecycle',
    ]);
    expect(got[0]).toMatchObject({ event: 'spawned', agent_id: 'agent-7' });
    expect(got[1]).toMatchObject({ status: 'idle', previous_status: null });
    expect(got[3]).toMatchObject({ event: 'started' });
    expect(got[4]).toMatchObject({
      status: 'thinking',
      previous_status: 'initializing',
      event: 'STATUS_UPDATE',
      timestamp: new Date(T0 + 1000).toISOString(),
    });
    expect(got[5]).toMatchObject({ thought: 'Reading the README' });
    expect(got[6]).toMatchObject({
      progress: { percentage: 25, current_step: 5, total_steps: 20, message: 'file 5 of 20' },
    });
    expect(got[7]).toMatchObject({ stream: 'stderr', content: 'warning: x' });
    expect(got[9]).toMatchObject({
      error: {
        code: 'MODEL_ERROR',
        message: 'backend 500',
        details: null,
        recoverable: false,
        timestamp: '2026-03-01T09:00:00.000Z',
      },
    });
    expect(got[10]).toMatchObject({ event: 'failed' });
    for (const m of got) {
      expect(m.agent_id).toBe('agent-7');
      expect(m.machine_id).toBe('agent-status');
      expect(streamMessageSchema.safeParse(m).success).toBe(true);
    }
  });

  test('any chart streams status changes, lifecycle events and its emitted events', async () => {
    const { store, clock, runtime, messages } = setup();
    const task = await createDurableActor(taskLifecycle.machine, {
      id: 'task-1',
      store,
      input: { taskId: 'task-1', approvalTimeoutMs: 60_000 },
      clock,
    });
    await task.send({ type: 'START' });
    await task.send({ type: 'PAUSE_FOR_APPROVAL', reason: 'refund', requestedAt: T0 });
    clock.advance(30_000); // the approval reminder (half the wait) is emitted
    await settle(runtime);
    await task.send({ type: 'APPROVAL_GRANTED', approver: 'ops' });
    await task.send({ type: 'COMPLETE' });
    const got = messages().map((m) =>
      m.type === 'status_update' ? `status ${m.status}` : m.type === 'lifecycle' ? m.event : m.type,
    );
    expect(got).toEqual([
      'spawned',
      'status planned',
      'status running',
      'started',
      'status paused',
      'paused',
      'APPROVAL_REMINDER',
      'status running',
      'resumed',
      'status done',
      'completed',
    ]);
  });

  test('tail reading the store yields the same messages as the live writer, emitted events aside', async () => {
    const { store, clock, runtime, messages } = setup();
    const agent = await createDurableActor(agentStatus.machine, {
      id: 'a1',
      store,
      input: agentInput,
      clock,
    });
    const task = await createDurableActor(taskLifecycle.machine, {
      id: 't1',
      store,
      input: { taskId: 't1' },
      clock,
    });
    await agent.send({ type: 'STATUS_UPDATE', status: 'initializing', at });
    clock.advance(5);
    await task.send({ type: 'START' });
    await agent.send({ type: 'STATUS_UPDATE', status: 'running', at });
    clock.advance(5);
    await agent.send({ type: 'PROGRESS_UPDATE', percentage: 12.5, at });
    await task.send({ type: 'TRANSIENT_ERROR', error: 'HTTP 503' });
    await agent.send({ type: 'ERROR', error: { code: 'E', message: 'm', recoverable: true }, at });
    await settle(runtime);

    const fromStore = (await store.transitionsSince({ since: 0 }))
      .flatMap((row) => toStreamMessages(feedRowTransition(row)))
      .sort((x, y) => x.agent_id.localeCompare(y.agent_id));
    const live = messages()
      .filter((m) => !(m.type === 'lifecycle' && /^[A-Z_]+$/.test(m.event)))
      .sort((x, y) => x.agent_id.localeCompare(y.agent_id));
    expect(fromStore).toEqual(live);
    expect(live.length).toBeGreaterThan(8);
  });

  test('an actor that stays in its state and changes no content writes nothing', () => {
    expect(
      toStreamMessages({
        actorId: 'p',
        machineId: 'plan-workflow',
        from: 'PLANNING',
        to: 'PLANNING',
        event: { type: 'ADD_COMMENT' },
        at: T0,
      }),
    ).toEqual([]);
  });
});

describe('the NDJSON writer', () => {
  test('writes one JSON object per line and drops a message that fails its schema', () => {
    const lines: string[] = [];
    const writer = new NdjsonWriter({ write: (c: string) => lines.push(c) });
    expect(writer.write({ type: 'heartbeat', agent_id: 'a', timestamp: at })).toBe(true);
    const bad = { type: 'heartbeat', agent_id: '', timestamp: at } as StreamMessage;
    expect(writer.write(bad)).toBe(false);
    expect(lines).toEqual([`{"type":"heartbeat","agent_id":"a","timestamp":"${at}"}\n`]);
    expect({ written: writer.written, invalid: writer.invalid }).toEqual({
      written: 1,
      invalid: 1,
    });
  });

  test('sends heartbeats only for unfinished agents that have been quiet for the interval', async () => {
    const { store, clock, runtime, messages } = setup({ heartbeatMs: 10_000 });
    const quiet = await createDurableActor(taskLifecycle.machine, {
      id: 'quiet',
      store,
      input: { taskId: 'quiet' },
      clock,
    });
    const done = await createDurableActor(taskLifecycle.machine, {
      id: 'done',
      store,
      input: { taskId: 'done' },
      clock,
    });
    await quiet.send({ type: 'START' });
    await done.send({ type: 'START' });
    await done.send({ type: 'COMPLETE' });
    clock.advance(6_000);
    const busy = await createDurableActor(taskLifecycle.machine, {
      id: 'busy',
      store,
      input: { taskId: 'busy' },
      clock,
    });
    clock.advance(4_000); // quiet for 10 s, busy for 4 s
    await settle(runtime);
    const beats = () =>
      messages()
        .filter((m) => m.type === 'heartbeat')
        .map((m) => `${m.agent_id}@${(Date.parse(m.timestamp) - T0) / 1000}`);
    expect(beats()).toEqual(['quiet@10']);
    clock.advance(10_000);
    expect(beats()).toEqual(['quiet@10', 'quiet@20', 'busy@20']);
    void busy;
  });
});

describe('parseNdjson', () => {
  test('reports each bad line by number and keeps reading the stream', async () => {
    const good = (id: string) => JSON.stringify({ type: 'heartbeat', agent_id: id, timestamp: at });
    const text = [
      good('a'),
      '{"type":"heartbeat","agent_id":"s3cr3t-token"', // truncated JSON
      JSON.stringify({ type: 'telemetry', agent_id: 'x', timestamp: at }),
      JSON.stringify({ type: 'status_update', status: 'running', timestamp: at }),
      JSON.stringify({
        type: 'progress_update',
        agent_id: 'x',
        timestamp: at,
        progress: { percentage: 150 },
      }),
      '',
      JSON.stringify({ type: 'heartbeat', agent_id: 'x', timestamp: at, password: 'hunter2' }),
      '[1,2]',
      good('b'),
    ].join('\n');
    const results = await collect([text]);
    expect(results.map((r) => r.line)).toEqual([1, 2, 3, 4, 5, 7, 8, 9]);
    expect(results.map((r) => ('message' in r ? r.message.agent_id : r.error))).toEqual([
      'a',
      'not valid JSON',
      'unknown message type',
      expect.stringMatching(/^invalid status_update: agent_id: /),
      expect.stringMatching(/^invalid progress_update: progress\.percentage: /),
      expect.stringMatching(/^invalid heartbeat: .*password/),
      'not a JSON object',
      'b',
    ]);
    const errors = results.flatMap((r) => ('error' in r ? [r.error] : []));
    expect(errors.join('\n')).not.toMatch(/s3cr3t|hunter2|150/);
  });

  test('reassembles lines split across chunks, multi-byte characters and CRLF endings', async () => {
    const line = JSON.stringify({
      type: 'thought_update',
      agent_id: 'ä',
      thought: 'naïve → ok',
      timestamp: at,
    });
    const bytes = Buffer.from(`${line}\r\n${line}`);
    const cut = bytes.indexOf(Buffer.from('→')) + 1; // in the middle of a 3-byte character
    const results = await collect([
      bytes.subarray(0, 7),
      bytes.subarray(7, cut),
      bytes.subarray(cut),
    ]);
    expect(results).toEqual([
      { line: 1, message: JSON.parse(line) as StreamMessage },
      { line: 2, message: JSON.parse(line) as StreamMessage },
    ]);
  });

  test('reports an overlong line without buffering it and parses the next one', async () => {
    const good = JSON.stringify({ type: 'heartbeat', agent_id: 'a', timestamp: at });
    const long = `{"type":"heartbeat","agent_id":"${'x'.repeat(5000)}"`;
    const chunks = [long.slice(0, 2000), long.slice(2000), `\n${good}\n`];
    const results: ParsedLine[] = [];
    for await (const r of parseNdjson(chunks, { maxLineLength: 1000 })) results.push(r);
    expect(results).toEqual([
      { line: 1, error: 'line longer than 1000 characters' },
      { line: 2, message: JSON.parse(good) as StreamMessage },
    ]);
  });
});
