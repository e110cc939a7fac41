/**
 * What follows a committed transition: its timers armed, its invokes started or
 * aborted, its messages posted, its effects run and its listeners told — none of
 * which can undo the commit. Also what a failed commit leaves behind.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { ConcurrencyError, LeaseLostError } from '../core/errors.ts';
import type { ActorWrite } from '../store/types.ts';
import type { ActorCore } from './actor-core.ts';
import { actionSelf, runningActions, withActionSelf } from './action-self.ts';
import type { TimerArm } from './placed-timers.ts';
import { invokeStepName } from './actor-ids.ts';
import type { Effects } from './effects.ts';
import type { Rank } from './ledger.ts';
import type { ArmedTimer } from './timer-plan.ts';
import { runInvoke, stopInvoke, trackRun } from './invoke.ts';
import type { TransitionNotice } from './notices.ts';
import type { DurableRuntime } from './runtime.ts';

/** The steps a transition begins: one per invoked promise it entered. */
export function stepsBegun(
  actorId: string,
  effects: Effects,
  now: number,
): ActorWrite['stepsBegin'] {
  if (effects.invokesStart.length === 0) return undefined;
  return effects.invokesStart.map((invoke) => ({
    key: invoke.key,
    name: invokeStepName(invoke.id),
    startedAt: now,
  }));
}

/** After the commit: invokes whose state was left are aborted, new ones start. */
export function startInvokes(core: ActorCore, effects: Effects): void {
  for (const key of effects.invokesStop) stopInvoke(core, key);
  for (const invoke of effects.invokesStart) {
    // Its place among the tree's turns, should the promise settle at once
    // (runtime.reserveTurn), and the instant its state was entered (the commit's).
    const reserved = core.runtime.reserveTurn(core.id);
    trackRun(core, runInvoke(core, invoke, false, reserved, core.row.updatedAt));
  }
}

/** After the commit: the receivers of the transition's messages get them delivered. */
export function postMessages(
  runtime: DurableRuntime,
  write: ActorWrite,
  relayed = false,
  /** The step's place in the arm order (Effects.base): its messages' deliveries nest under it. */
  base?: Rank,
): void {
  const out = write.messagesOut;
  if (out !== undefined && out.length > 0) {
    runtime.courier.post({
      from: write.actorId,
      fromSeq: write.transition.seq,
      messages: out,
      finished: write.actor.status !== 'active',
      relayed,
      base,
    });
  }
}

/**
 * Before the commit: the timers the step armed after sending messages
 * ({@link Effects.timerPlaces}), handed to the courier with the commit. It arms
 * each in its place, once what the messages before it set off is committed, so
 * among timers due at one instant they keep XState's order. Undefined when the
 * step armed none after a message.
 */
export function placedTimers(
  core: () => ActorCore | undefined,
  effects: Effects,
  seq: number,
): TimerArm[] | undefined {
  const places = effects.timerPlaces;
  if (places === undefined) return undefined;
  let arms: TimerArm[] | undefined;
  for (const t of effects.timersSet) {
    const place = places.get(t.timerId);
    if (place !== undefined) (arms ??= []).push({ place, arm: () => armPlaced(core(), t, seq) });
  }
  return arms;
}

/**
 * After the commit: the in-process wake-ups follow the timers the transition
 * armed, moved, renamed or cleared (`fired`: the timer this transition delivered),
 * save those the courier arms in their place ({@link placedTimers}).
 */
export function armTimers(
  core: ActorCore,
  effects: Effects,
  fired?: string,
  /** The step's time, when it was taken at an earlier instant than the clock's (TimerWake.takenAt). */
  takenAt?: number,
): void {
  const { runtime, id: actorId } = core;
  if (fired !== undefined) runtime.unschedule(actorId, fired);
  // A firing of one of these still waiting for its turn fires the timer as it was.
  for (const t of effects.timersSet) runtime.timers.supersede(actorId, t.timerId);
  for (const id of effects.timersCancel) runtime.timers.supersede(actorId, id);
  if (effects.cancelAllTimers) {
    runtime.timers.unscheduleAll(actorId);
    return;
  }
  // A timer that lost its id keeps its wake-up (and its place among timers due at once).
  const kept = new Set<string>();
  for (const [from, to] of effects.timersRenamed) {
    if (runtime.timers.rename(actorId, from, to)) kept.add(to);
  }
  for (const id of effects.timersCancel) if (!kept.has(id)) runtime.unschedule(actorId, id);
  const places = effects.timerPlaces;
  for (const t of effects.timersSet) {
    if (kept.has(t.timerId) || places?.has(t.timerId) === true) continue;
    runtime.schedule(takenAt === undefined ? t : { ...t, takenAt });
  }
}

/**
 * Arms a placed timer when the courier reaches its place: unless its commit failed,
 * or a later commit of its actor has moved it meanwhile — cleared (nothing to
 * arm), armed again at another instant (armed there), or renamed when a later
 * send took its id (armed under its new key, `<key>@<seq>.<action>`, that
 * commit's seq). An older timer renamed by this same commit is not it.
 */
function armPlaced(core: ActorCore | undefined, row: ArmedTimer, seq: number): void {
  if (core === undefined) return;
  const timers = core.ledger.timers;
  if (timers.some((t) => t.key === row.timerId && t.due === row.dueAt)) {
    core.runtime.schedule(row);
    return;
  }
  const prefix = `${row.timerId}@`;
  const renamed = timers.find(
    (t) =>
      t.due === row.dueAt &&
      t.key.startsWith(prefix) &&
      Number.parseInt(t.key.slice(prefix.length), 10) > seq,
  );
  if (renamed !== undefined) core.runtime.schedule({ ...row, timerId: renamed.key });
}

/** Logs a failed commit, tells observers, and marks the actor stale after a lost race. */
export function commitFailed(
  core: ActorCore,
  error: unknown,
  eventType: string,
  now: number,
): Error {
  const runtime = core.runtime;
  if (error instanceof ConcurrencyError) core.stale = true;
  if (error instanceof LeaseLostError) runtime.dropLease(core.id);
  const err = error instanceof Error ? error : new Error(String(error));
  // ERROR when persistence fails; a lost race (version moved, lease taken over) is
  // an expected outcome the caller retries: WARN.
  const race = error instanceof ConcurrencyError || error instanceof LeaseLostError;
  runtime.logger[race ? 'warn' : 'error'](
    { actorId: core.id, machineId: core.machine.id, state: core.row.state, eventType, err },
    'transition not committed; state unchanged',
  );
  runtime.notify('onWriteError', { actorId: core.id, error: err, at: now });
  return err;
}

/**
 * Runs effects and tells listeners and observers; nothing here can undo the
 * committed transition. The notice is built only when someone listens. Returns
 * the events the effects sent to the actor itself (./action-self.ts), for the
 * caller to take next; `before`: the snapshot they see as their actor's.
 */
export function afterCommit(
  core: ActorCore,
  plan: Pick<Effects, 'effects' | 'emitted'>,
  before: AnyMachineSnapshot,
  notice: () => TransitionNotice,
): EventObject[] | undefined {
  const runtime = core.runtime;
  const sent =
    plan.effects.length === 0
      ? undefined
      : runningActions(core, before, () => {
          const self = actionSelf(core);
          for (const effect of plan.effects) {
            try {
              effect.exec?.(withActionSelf(effect.info, self), effect.params);
            } catch (error) {
              runtime.logger.error(
                { actorId: core.id, action: effect.type, err: error },
                'effect threw after commit',
              );
            }
          }
        });
  const at = runtime.clock.now();
  for (const event of plan.emitted) {
    for (const type of [event.type, '*']) {
      for (const listener of core.emittedListeners?.get(type) ?? []) {
        try {
          listener(event);
        } catch (error) {
          runtime.logger.error({ actorId: core.id, err: error }, 'emitted-event listener threw');
        }
      }
    }
    runtime.notify('onEmitted', { actorId: core.id, machineId: core.machine.id, event, at });
  }
  const logged = runtime.logger.isLevelEnabled('info');
  const listeners = core.listeners;
  if (!listeners?.size && !logged && !runtime.observed('onTransition')) return sent;
  const n = notice();
  if (logged) {
    runtime.logger.info(
      {
        actorId: n.actorId,
        machineId: n.machineId,
        from: n.from,
        to: n.to,
        eventType: n.eventType,
        version: n.version,
        source: n.source,
      },
      'transition',
    );
  }
  for (const listener of listeners ?? []) {
    try {
      listener(n);
    } catch (error) {
      runtime.logger.error(
        { actorId: core.id, err: error },
        'subscriber threw; transition unaffected',
      );
    }
  }
  runtime.notify('onTransition', n);
  return sent;
}
