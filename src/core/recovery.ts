import type { EventObject, StateValue } from 'xstate';

/**
 * The parts of a snapshot a recovery policy reads. Recovery hands policies the
 * stored snapshot as it was persisted (no live actor is built for an actor that
 * only resumes), or a live snapshot after an overdue timer moved the actor.
 */
export interface RecoverySnapshot {
  value: StateValue;
  // The chart's own context type; the policy narrows it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  context: any;
  status: string;
}

/** What recovery knows about one actor found in a non-final state. */
export interface RecoveryContext {
  actorId: string;
  /** State label (`running`, `EXECUTION.working`). */
  state: string;
  snapshot: RecoverySnapshot;
  /** When the actor last transitioned (ms since epoch). */
  updatedAt: number;
  /** Recovery's clock (ms since epoch). */
  now: number;
}

/** What to do with a recovered actor. */
export type RecoveryDecision =
  { action: 'resume'; reason: string } | { action: 'send'; event: EventObject; reason: string };

/**
 * A machine's declared recovery policy (“Agent State Machine Design” §6): given an actor found
 * after a restart, resume it as it is or send it an event through the normal strict path.
 */
export type RecoveryPolicy = (context: RecoveryContext) => RecoveryDecision;

/** The policy of a chart whose states are all safe to resume as they are. */
export const resumeAll: RecoveryPolicy = () => ({
  action: 'resume',
  reason: 'every state of this chart is safe to resume as persisted',
});
