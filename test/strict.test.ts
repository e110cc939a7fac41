import { describe, expect, test } from 'vitest';
import { emit, setup } from 'xstate';
import * as z from 'zod';
import {
  InvalidEventError,
  InvalidInputError,
  InvalidTransitionError,
  MAX_EVENT_PROBLEMS,
  createStrictActor,
  eventSchema,
  getMachineEventTypes,
  stateLabel,
  validateEvent,
  type EventFromSchemas,
} from '../src/index.ts';
import { taskLifecycle } from '../machines/index.ts';
import { walkJson } from '../src/core/json.ts';

const events = {
  GO: eventSchema('GO', { amount: z.number().int().positive(), note: z.string().optional() }),
  STOP: eventSchema('STOP'),
};
const input = z.strictObject({ owner: z.string().min(1) });
const machine = setup({
  types: { events: {} as EventFromSchemas<typeof events>, input: {} as z.infer<typeof input> },
  schemas: { events, input },
}).createMachine({
  id: 'strict-demo',
  initial: 'idle',
  states: {
    idle: { on: { GO: 'busy' } },
    busy: { initial: 'a', states: { a: {} }, on: { STOP: 'stopped' } },
    stopped: { type: 'final' },
  },
});

/** What `run` throws (undefined when it returns). */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('the strict actor', () => {
  test('sends a legal event and returns the new snapshot', () => {
    const actor = createStrictActor(machine, { id: 's1', input: { owner: 'o' } }).start();
    expect(stateLabel(actor.send({ type: 'GO', amount: 3 }))).toBe('busy.a');
  });

  test('rejects an illegal event with the machine, actor, state and event named, snapshot unchanged', () => {
    const rejected: unknown[] = [];
    const actor = createStrictActor(machine, {
      id: 's2',
      input: { owner: 'o' },
      onRejected: (e) => rejected.push(e),
    }).start();
    const before = actor.getSnapshot();
    const error = (() => {
      try {
        actor.send({ type: 'STOP' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidTransitionError);
    expect(error).toMatchObject({
      machineId: 'strict-demo',
      actorId: 's2',
      state: 'idle',
      eventType: 'STOP',
    });
    expect((error as Error).message).toBe(
      'Machine "strict-demo" (actor "s2") in state "idle" does not accept event "STOP"',
    );
    expect(actor.getSnapshot()).toBe(before);
    expect(rejected).toEqual([error]);
  });

  test('rejects every event once the machine is done', () => {
    const actor = createStrictActor(machine, { input: { owner: 'o' } }).start();
    actor.send({ type: 'GO', amount: 1 });
    actor.send({ type: 'STOP' });
    expect(() => actor.send({ type: 'GO', amount: 1 })).toThrow(InvalidTransitionError);
  });

  test.each([
    ['not an object', 'GO', 'not_an_object', undefined],
    ['unknown type', { type: 'JUMP' }, 'unknown_type', undefined],
    ['missing field', { type: 'GO' }, 'missing_field', 'amount'],
    ['wrong type', { type: 'GO', amount: 'ten-thousand-dollars' }, 'invalid_field', 'amount'],
    ['out of range', { type: 'GO', amount: -5 }, 'invalid_field', 'amount'],
    ['extra key', { type: 'GO', amount: 1, secret: 'hunter2' }, 'unexpected_field', 'secret'],
    [
      '__proto__ key',
      JSON.parse('{"type":"GO","amount":1,"__proto__":{"admin":true}}'),
      'forbidden_key',
      '__proto__',
    ],
    ['internal event', { type: 'xstate.after.1000.strict-demo.idle' }, 'unknown_type', 'type'],
    ['oversize', { type: 'GO', amount: 1, note: 'x'.repeat(70_000) }, 'oversize', undefined],
  ])(
    'rejects an ill-formed event (%s) with InvalidEventError and no change',
    (_, event, reason, field) => {
      const actor = createStrictActor(machine, { input: { owner: 'o' } }).start();
      const before = actor.getSnapshot();
      let error: unknown;
      try {
        actor.send(event as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ reason, field });
      expect((error as Error).message).not.toMatch(/hunter2|ten-thousand|admin|xxxx/);
      expect(actor.getSnapshot()).toBe(before);
    },
  );

  test('an event with several problems names them all, the first as reason and field', () => {
    const actor = createStrictActor(machine, { input: { owner: 'o' } }).start();
    const error = thrownBy(() =>
      actor.send({ type: 'GO', note: 7, secret: 'hunter2', token: 'x' } as never),
    );
    expect(error).toBeInstanceOf(InvalidEventError);
    expect(error).toMatchObject({
      reason: 'missing_field',
      field: 'amount',
      more: [
        { reason: 'invalid_field', field: 'note', detail: 'invalid_type' },
        { reason: 'unexpected_field', field: 'secret' },
        { reason: 'unexpected_field', field: 'token' },
      ],
    });
    expect((error as Error).message).toBe(
      'Invalid event "GO" for machine "strict-demo": missing_field at field "amount"; also invalid_field at field "note": invalid_type; unexpected_field at field "secret"; unexpected_field at field "token"',
    );
    // The control: one problem gives no `more`, and the message is as it was.
    const one = thrownBy(() => actor.send({ type: 'GO' } as never));
    expect(one).toMatchObject({ reason: 'missing_field', field: 'amount' });
    expect((one as { more?: unknown }).more).toBeUndefined();
    expect((one as Error).message).toBe(
      'Invalid event "GO" for machine "strict-demo": missing_field at field "amount"',
    );
    // Bounded: 50 stray keys give the first ten problems, not fifty.
    const stray = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    const many = thrownBy(() => actor.send({ type: 'GO', amount: 1, ...stray } as never));
    expect(many).toMatchObject({ reason: 'unexpected_field', field: 'k0' });
    expect((many as { more: unknown[] }).more).toHaveLength(MAX_EVENT_PROBLEMS - 1);
  });

  test("a key a polluted Object.prototype adds is not read as the event's own", () => {
    // The walk reads each object's own keys (as JSON.stringify does): what is
    // inherited is neither validated, copied nor counted. The control: the same
    // walk without the pollution.
    const event = { type: 'GO', amount: 1 };
    const clean = walkJson(event, { copy: true, budget: 1_000 });
    Object.defineProperty(Object.prototype, 'polluted', {
      value: 'x',
      enumerable: true,
      writable: true,
      configurable: true,
    });
    try {
      const walked = walkJson(event, { copy: true, budget: 1_000 });
      expect(walked).toEqual(clean);
      expect(walked.ok && Object.keys(walked.value as object)).toEqual(['type', 'amount']);
      expect(walked.ok && walked.bytes).toBe(JSON.stringify(event).length);
    } finally {
      delete (Object.prototype as { polluted?: unknown }).polluted;
    }
  });

  test('refuses input that does not match the machine input schema, naming the field', () => {
    expect(() => createStrictActor(machine, { id: 's3', input: { owner: '' } })).toThrow(
      InvalidInputError,
    );
    expect(() =>
      createStrictActor(taskLifecycle.machine, { input: { taskId: 't', maxRetries: -1 } }),
    ).toThrow(/field "maxRetries"/);
  });

  test('check and can answer without sending', () => {
    const actor = createStrictActor(machine, { input: { owner: 'o' } }).start();
    expect(actor.can({ type: 'GO', amount: 1 })).toBe(true);
    expect(actor.can({ type: 'STOP' })).toBe(false);
    expect(actor.can({ type: 'GO' })).toBe(false);
    expect(() => actor.check({ type: 'STOP' })).toThrow(InvalidTransitionError);
    expect(actor.getSnapshot().value).toBe('idle');
  });

  test('accepts a targetless transition whose only action emits (the snapshot object stays the same)', () => {
    const emitter = setup({
      types: { events: {} as { type: 'PING' }, emitted: {} as { type: 'PONG' } },
      actions: { pong: emit({ type: 'PONG' }) },
    }).createMachine({ id: 'emitter', on: { PING: { actions: 'pong' } } });
    const actor = createStrictActor(emitter).start();
    const heard: string[] = [];
    actor.ref.on('PONG', (e) => heard.push(e.type));
    actor.send({ type: 'PING' });
    expect(heard).toEqual(['PONG']);
  });

  test('accepts any event type the chart names when the machine declares no schemas', () => {
    const plain = setup({}).createMachine({
      id: 'plain',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: {} },
    });
    const actor = createStrictActor(plain).start();
    expect(() => actor.send({ type: 'NOPE' })).toThrow(InvalidEventError);
    expect(actor.send({ type: 'GO' }).value).toBe('b');
  });

  test("accepts what the machine's wildcard transitions take, as XState matches them, and no more", () => {
    // XState takes any event on `'*'`, and on `'user.*'` the type `user` and every
    // `user.…`; a chart without schemas refused them all as unnamed types.
    const wild = (on: string) =>
      setup({}).createMachine({
        id: 'wild',
        initial: 'a',
        states: { a: { on: { [on]: 'b' } }, b: {} },
      });
    const family = wild('user.*');
    expect(getMachineEventTypes(family)).toEqual([]);
    for (const type of ['user', 'user.signed', 'user.signed.up']) {
      expect(createStrictActor(family).start().send({ type }).value).toBe('b');
    }
    // The control: outside the family, still refused, naming the type.
    for (const type of ['username', 'users.x', 'NOPE']) {
      expect(() => validateEvent(family, { type })).toThrow(
        expect.objectContaining({ reason: 'unknown_type', eventType: type }),
      );
    }
    // Any type on `'*'`, but never an internal one from a caller.
    expect(createStrictActor(wild('*')).start().send({ type: 'ANYTHING' }).value).toBe('b');
    expect(() => validateEvent(wild('*'), { type: 'xstate.after.1.wild.a' })).toThrow(
      expect.objectContaining({ reason: 'unknown_type' }),
    );
  });
});

describe('the event size limit', () => {
  const open = setup({}).createMachine({
    id: 'open',
    initial: 'a',
    states: { a: { on: { X: 'a' } } },
  });
  const values: unknown[] = [
    { type: 'X' },
    { type: 'X', n: [1, -2.5, 1e21, 0.1, 123456789] },
    { type: 'X', s: 'plain ascii', q: 'quote " and \\ backslash', c: '\u0001\u001f control' },
    { type: 'X', u: 'émoji 🎉 and 中文', nested: { a: [true, false, null, { b: [] }], e: {} } },
    { type: 'X', skipped: undefined, kept: 'x' },
    { type: 'X', big: '\u0000'.repeat(1_000) },
  ];
  test.each(values.map((v, i) => [i, v]))(
    'is exact in bytes of the JSON text (case %i): at the size it passes, one byte less it is refused',
    (_, event) => {
      const bytes = Buffer.byteLength(JSON.stringify(event), 'utf8');
      expect(validateEvent(open, event, { maxBytes: bytes })).toEqual(
        JSON.parse(JSON.stringify(event)),
      );
      let error: unknown;
      try {
        validateEvent(open, event, { maxBytes: bytes - 1 });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidEventError);
      expect(error).toMatchObject({ reason: 'oversize' });
    },
  );
});
