/**
 * Generated tests that know chart versions: every state version 1 of `doc`
 * reaches migrates to a snapshot version 2 restores and continues from.
 */
import { describe, expect, test } from 'vitest';
import { checkMigrationCase, planMigrationCases } from '../src/testing/migrations.ts';
import { generateTransitionTests } from '../src/testing/generate.ts';
import { v1, v2, v2Breaking } from './fixtures/doc-versions.ts';

// From the chart: its samples, input and state identity come with it.
generateTransitionTests(v2, { describe: 'doc v2', versions: { chart: v2, previous: [v1] } });

describe('a breaking version 2', () => {
  test('the cases cover every state version 1 reaches', () => {
    const labels = planMigrationCases(v2Breaking, [v1]).map((c) => c.label);
    expect([...new Set(labels)].sort()).toEqual(['a', 'b', 't', 'x', 'z']);
  });

  test('names each state that does not migrate to something it restores', () => {
    const problems = Object.fromEntries(
      planMigrationCases(v2Breaking, [v1]).map((c) => [c.label, checkMigrationCase(v2Breaking, c)]),
    );
    expect(problems).toEqual({
      a: undefined,
      b: undefined,
      t: undefined,
      x: 'migrated to "x", a state version 2 does not have',
      z: undefined,
    });
  });

  test('a migration that throws or is missing is named', () => {
    const [first] = planMigrationCases(v2, [v1]);
    if (!first) throw new Error('no case');
    expect(checkMigrationCase({ ...v2, migrations: {} }, first)).toBe(
      'no migration from version 1 to 2',
    );
    const throwing = {
      ...v2,
      migrations: {
        1: () => {
          throw new Error('boom');
        },
      },
    };
    expect(checkMigrationCase(throwing, first)).toBe('the migration from 1 threw: boom');
  });
});
