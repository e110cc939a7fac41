/** Public functions called with missing or wrong options answer with a typed error naming the option. */
import { expect, test } from 'vitest';
import { taskLifecycle } from '../machines/index.ts';
import {
  InvalidOptionsError,
  createDurableActor,
  openStore,
  recover,
  verify,
} from '../src/index.ts';
import { createServer } from '../src/server/app.ts';

const store = openStore('memory:');
const calls: Array<[string, () => unknown, string, string]> = [
  [
    'verify(store) without charts',
    () => (verify as (s: unknown) => unknown)(store),
    'verify',
    'options',
  ],
  ['verify without a store', () => verify(undefined as never, { charts: [] }), 'verify', 'store'],
  ['recover without a store', () => recover({} as never), 'recover', 'store'],
  [
    'createDurableActor without a store',
    () => createDurableActor(taskLifecycle.machine, { id: 'x' } as never),
    'createDurableActor',
    'options.store',
  ],
  [
    'createDurableActor of something that is not a machine',
    () => createDurableActor({} as never, { id: 'x', store }),
    'createDurableActor',
    'machine',
  ],
  [
    'createDurableActor with an empty system id',
    () => createDurableActor(taskLifecycle.machine, { id: 'x', store, systemId: '' }),
    'createDurableActor',
    'options.systemId',
  ],
  ['createServer without keys', () => createServer({ store } as never), 'createServer', 'keys'],
];

test.each(calls)(
  '%s is an InvalidOptionsError naming the option',
  async (_name, call, fn, field) => {
    // Thrown at once (createServer) or as a rejection (the async functions).
    let error: unknown;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(error).toMatchObject({ code: 'INVALID_OPTIONS', fn, field });
    expect((error as Error).message).toMatch(
      new RegExp(`^${fn}: ${field.replace('.', '\\.')} must be`),
    );
  },
);
