import {
  createActor,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventObject,
} from 'xstate';
import { isDeepStrictEqual } from 'node:util';
import { stateLabel } from '../core/state.ts';
import { historyIds } from './explore.ts';
import { EXPECTED, isMachine, requireArg } from '../core/options.ts';

function accepts(snapshot: AnyMachineSnapshot, event: EventObject): boolean {
  return snapshot.status === 'active' && snapshot.can(event);
}

/**
 * Persists a snapshot, sends it through `JSON.stringify`/`JSON.parse`, restores it
 * and compares: value, context, status, output, history, and whether each sample
 * event is accepted. Returns the differences (empty when the restored actor
 * behaves the same), so any test framework can assert on it.
 *
 * @example
 * for (const snapshot of exploreMachine(machine, { events }).states.values()) {
 *   expect(roundTripDifferences(machine, snapshot, samples)).toEqual([]);
 * }
 */
export function roundTripDifferences(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  samples: readonly EventObject[],
): string[] {
  requireArg('roundTripDifferences', 'machine', isMachine(machine), EXPECTED.machine);
  requireArg(
    'roundTripDifferences',
    'snapshot',
    typeof (snapshot as { value?: unknown } | null)?.value !== 'undefined',
    'a snapshot of the machine',
  );
  requireArg('roundTripDifferences', 'samples', Array.isArray(samples), EXPECTED.array);
  const label = stateLabel(snapshot.value);
  const json: unknown = JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot)));
  const restored = createActor(machine, {
    snapshot: json as never,
  }).getSnapshot() as AnyMachineSnapshot;
  const differences: string[] = [];
  const compare = (what: string, a: unknown, b: unknown) => {
    if (!isDeepStrictEqual(a, b))
      differences.push(`${label}: ${what} differs after the round trip`);
  };
  compare('value', restored.value, snapshot.value);
  compare('context', restored.context, snapshot.context);
  compare('status', restored.status, snapshot.status);
  compare('output', restored.output, snapshot.output);
  compare('history', historyIds(restored), historyIds(snapshot));
  for (const event of samples) {
    if (accepts(restored, event) !== accepts(snapshot, event)) {
      differences.push(
        `${label}: ${event.type} is ${accepts(snapshot, event) ? 'accepted' : 'refused'} before, not after`,
      );
    }
  }
  return differences;
}
