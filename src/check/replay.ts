/**
 * A path replayed on the machine itself, from its initial state: timers and
 * invoked actors' outcomes only where the state arms them, every other event only
 * where the chart accepts it. The check confirms its counterexamples this way (a
 * projection that merges states whose futures differ would show), and
 * `agentcharts diagram --path` draws what it replays.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject, StateValue } from 'xstate';
import { stateLabel } from '../core/state.ts';
import { delayedEvents, eventLabel } from '../testing/explore.ts';
import { stepperFor } from './stepper.ts';

export interface Replay {
  /** The state value before the first event, then after each event replayed. */
  values: StateValue[];
  /** The path labels of the events replayed (`START`, `after:<delay>`). */
  labels: string[];
  /** The first event the machine did not accept, where; the replay stops there. */
  refused?: { index: number; label: string; state: string } | undefined;
}

export function replayEvents(
  machine: AnyStateMachine,
  input: unknown,
  events: readonly EventObject[],
): Replay {
  const stepper = stepperFor(machine);
  let snapshot: AnyMachineSnapshot = stepper.initial(input).snapshot;
  const values: StateValue[] = [snapshot.value];
  const labels: string[] = [];
  for (const [index, event] of events.entries()) {
    const armed =
      !event.type.startsWith('xstate.') ||
      delayedEvents(snapshot).some((e) => e.type === event.type);
    if (snapshot.status !== 'active' || !armed || !snapshot.can(event)) {
      const refused = { index, label: eventLabel(event.type), state: stateLabel(snapshot.value) };
      return { values, labels, refused };
    }
    snapshot = stepper.next(snapshot, event).snapshot;
    values.push(snapshot.value);
    labels.push(eventLabel(event.type));
  }
  return { values, labels };
}
