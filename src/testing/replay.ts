import {
  SimulatedClock,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type EventFromLogic,
  type InputFrom,
} from 'xstate';
import { AgentchartsError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import { createStrictActor, type StrictActor } from '../strict/strict-actor.ts';
import type { PlannedStep } from './plan.ts';
import { EXPECTED, isMachine, requireArg, requireOptions } from '../core/options.ts';

/** A planned path could not be replayed: a delayed event was not pending when its turn came. */
export class ReplayError extends AgentchartsError {
  override name = 'ReplayError';
  readonly machineId: string;
  readonly state: string;
  readonly eventType: string;
  constructor(fields: { machineId: string; state: string; eventType: string; detail: string }) {
    super(
      'REPLAY',
      `Replaying machine "${fields.machineId}" in state "${fields.state}" with event "${fields.eventType}" failed: ${fields.detail}`,
    );
    this.machineId = fields.machineId;
    this.state = fields.state;
    this.eventType = fields.eventType;
  }
}

/**
 * Takes one step of a planned path on a strict actor. Sample events go through
 * `send` (validated, rejected when illegal). A delayed event must be pending in
 * the actor's scheduler (the state really armed the timer); it is then delivered
 * as the timer would deliver it, without waiting.
 */
export function applyStep<TLogic extends AnyStateMachine>(
  actor: StrictActor<TLogic>,
  step: PlannedStep,
): AnyMachineSnapshot {
  if (!step.delayed) return actor.send(step.event as EventFromLogic<TLogic>) as AnyMachineSnapshot;
  const before = actor.getSnapshot() as AnyMachineSnapshot;
  const fail = (detail: string) =>
    new ReplayError({
      machineId: actor.machine.id,
      state: stateLabel(before.value),
      eventType: step.event.type,
      detail,
    });
  const type = step.event.type;
  if (type.startsWith('xstate.after.')) {
    const scheduled = Object.values(actor.ref.system.getSnapshot()._scheduledEvents).some(
      (s) => s.event.type === type && s.target === actor.ref,
    );
    if (!scheduled) throw fail('the delayed event is not scheduled');
  } else {
    // An invoked actor's outcome: the child must be running (its state was entered).
    const child = /^xstate\.(?:done|error)\.actor\.(.*)$/.exec(type)?.[1];
    if (child === undefined || !(child in before.children)) {
      throw fail('the invoked actor is not running');
    }
  }
  if (before.status !== 'active' || !before.can(step.event))
    throw fail('the delayed event is not enabled');
  actor.ref.send(step.event as EventFromLogic<TLogic>);
  return actor.getSnapshot() as AnyMachineSnapshot;
}

/**
 * Starts a strict actor on a simulated clock (timers never fire on their own)
 * and replays `path` from the initial state. The caller stops the actor.
 */
export function replayPath<TLogic extends AnyStateMachine>(
  machine: TLogic,
  path: readonly PlannedStep[],
  options: { input?: InputFrom<TLogic> | undefined } = {},
): StrictActor<TLogic> {
  requireArg('replayPath', 'machine', isMachine(machine), EXPECTED.machine);
  requireArg('replayPath', 'path', Array.isArray(path), 'the steps of a planned path');
  requireOptions('replayPath', options);
  const actor = createStrictActor(machine, {
    ...(options.input !== undefined ? { input: options.input } : {}),
    clock: new SimulatedClock(),
  }).start();
  try {
    for (const step of path) applyStep(actor, step);
  } catch (error) {
    actor.stop();
    throw error;
  }
  return actor;
}
