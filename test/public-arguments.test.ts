/**
 * Every function of the root entry, called with arguments of the wrong kind,
 * either works or throws a typed agentcharts error (InvalidOptionsError, naming
 * the function and the argument) — never a TypeError from deep inside.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as api from '../src/index.ts';
import * as server from '../src/server/index.ts';
import * as ai from '../src/agents/ai-sdk.ts';
import * as postgres from '../src/store/postgres/index.ts';
import * as testing from '../src/testing/generate.ts';

const GARBAGE: readonly (readonly unknown[])[] = [
  [],
  [undefined, 42],
  [{}, 'x'],
  [null, null, null],
  ['text', [], 7],
  [42, { events: 3 }],
];

// Called with no arguments, a function that opens the default store works: it
// makes ./agentcharts.db, here in a scratch directory, not in the checkout.
const home = process.cwd();
const scratch = mkdtempSync(join(tmpdir(), 'agentcharts-arguments-'));
beforeAll(() => process.chdir(scratch));
afterAll(() => {
  process.chdir(home);
  rmSync(scratch, { recursive: true, force: true });
});

const functions = (entry: Record<string, unknown>) =>
  Object.entries(entry).filter(
    (e): e is [string, (...args: unknown[]) => unknown] =>
      typeof e[1] === 'function' && !/^[A-Z]/.test(e[0]),
  );

describe.each([
  ['agentcharts', api],
  ['agentcharts/server', server],
  ['agentcharts/ai', ai],
  ['agentcharts/store/postgres', postgres],
] as const)('%s', (_entry, module) => {
  test.each(functions(module))('%s: wrong arguments get a typed error', async (_name, fn) => {
    for (const args of GARBAGE) {
      try {
        const result = fn(...args);
        if (result instanceof Promise) await result;
      } catch (error) {
        expect(error, `${_name}(${args.map((a) => JSON.stringify(a)).join(', ')})`).toBeInstanceOf(
          api.AgentchartsError,
        );
      }
    }
  });
});

test('agentcharts/testing: wrong arguments get a typed error (outside a suite, before any test is registered)', () => {
  for (const args of GARBAGE) {
    expect(() => testing.generateTransitionTests(...(args as [never, never]))).toThrow(
      api.InvalidOptionsError,
    );
  }
});

test('an InvalidOptionsError names the function and the argument', () => {
  expect(() => api.exploreMachine({} as never, { events: {} })).toThrow(
    'exploreMachine: machine must be an XState machine (setup(…).createMachine(…)) or its chart (defineChart)',
  );
  expect(() => api.toolsFor(undefined as never)).toThrow(
    'toolsFor: actor must be an actor (createDurableActor or createStrictActor)',
  );
});

test('the store classes check their arguments as their open functions do', () => {
  expect(() => new api.SqliteStore(42 as never)).toThrow(
    'SqliteStore: file must be a file name (or :memory:)',
  );
  expect(() => new api.SqliteStore(':memory:', 'fast' as never)).toThrow(api.InvalidOptionsError);
  expect(() => new postgres.PostgresStore(42 as never)).toThrow(
    'PostgresStore: url must be a postgres:// URL',
  );
  expect(() => api.openSqliteStore(':memory:', [] as never)).toThrow(api.InvalidOptionsError);
});
