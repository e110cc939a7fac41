/**
 * The send path of a durable actor, top to bottom:
 * validate → pure transition → plan timers and effects → commit → effects → notify.
 * Nothing is written unless the event is valid and legal in the stored state;
 * nothing runs (effects, listeners, observers) unless the commit is durable.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  LeaseLostError,
  StoreError,
} from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import { validateEvent } from '../strict/events.ts';
import type { ActorWrite } from '../store/types.ts';
import type { ActorCore, SendOptions } from './actor-core.ts';
import { actorKind, checkActor } from './actor-kinds.ts';
import { planMessages } from './messages.ts';
import { decodeActorRow, encodeSnapshot } from './codec.ts';
import { invokeKey, invokeStepName, runInvoke, stopInvoke, trackRun } from './invoke.ts';
import type { EventSource, TransitionNotice } from './notices.ts';
import { planActions, planChildren, type Plan } from './plan.ts';
import { pureInitial, pureTransition } from './pure.ts';
import { rejectEvent } from './reject.ts';
import { buildTransitionRow, checkHead } from './row.ts';
import type { DurableRuntime } from './runtime.ts';

const SEND_METADATA = '{"source":"send"}';

/** Validates, transitions and durably commits one event; resolves with the new snapshot. */
export async function processEvent(
  core: ActorCore,
  event: unknown,
  source: EventSource,
  options: SendOptions,
): Promise<AnyMachineSnapshot> {
  if (core.stale) await reload(core);
  const runtime = core.runtime;
  const now = runtime.clock.now();

  // 1. Validate: an ill-formed event changes nothing.
  let parsed: EventObject;
  try {
    parsed = options.internal
      ? (event as EventObject)
      : validateEvent(core.machine, event, {
          actorId: core.id,
          schemas: core.schemas,
          maxBytes: core.maxEventBytes,
        });
  } catch (error) {
    if (error instanceof InvalidEventError) await rejectEvent(core, error, now);
    throw error;
  }

  // 2. The pure transition. `transition()` returns the same snapshot object for an
  // unhandled event, and also for a targetless transition whose actions leave
  // context alone (an `emit`): only then is `can()` asked.
  const previous = core.snapshot;
  const [next, actions] = restarts(parsed, previous, options)
    ? pureInitial(core.machine, (parsed as { input?: unknown }).input)
    : previous.status === 'active'
      ? pureTransition(core.machine, previous, parsed)
      : [previous, []];
  if (next === previous && !(previous.status === 'active' && previous.can(parsed))) {
    // Decided on a state another process may have moved: look at the stored one.
    if (!options.internal && (await movedElsewhere(core))) {
      return processEvent(core, event, source, options);
    }
    const error = new InvalidTransitionError({
      machineId: core.machine.id,
      actorId: core.id,
      state: core.row.state,
      eventType: parsed.type,
    });
    await rejectEvent(core, error, now);
    throw error;
  }

  // 3. Plan timers, child actors and effects; 4. commit.
  const plan = planActions(core.id, now, actions);
  planChildren(plan, previous, next);
  checkSpawns(core.machine, plan, next);
  const messages = planMessages({
    actorId: core.id,
    parentId: core.parentId,
    machineId: core.machine.id,
    previous,
    next,
    actions,
  });
  const write = buildWrite(core, parsed, previous, next, plan, source, options, now);
  if (messages.length > 0) write.messagesOut = messages;
  try {
    await runtime.commit(write);
  } catch (error) {
    throw commitFailed(core, error, parsed.type, now);
  }

  // 5. Committed: move the actor, arm its timers, start its invokes, post its
  // messages, run effects, tell listeners.
  core.row = write.actor;
  core.snapshot = next;
  armTimers(runtime, write);
  startInvokes(core, plan, write.actor.version);
  postMessages(runtime, write);
  afterCommit(core, plan, () => ({
    actorId: core.id,
    machineId: core.machine.id,
    version: write.actor.version,
    from: write.transition.fromState,
    to: write.actor.state,
    event: parsed,
    eventType: write.transition.eventType,
    source,
    at: now,
    status: write.actor.status,
    snapshot: next,
    previous,
  }));
  return next;
}

/**
 * A finished child spawned again by its parent starts over: the runtime delivers
 * `xstate.init` with the new input, and the actor's log goes on from a fresh
 * initial snapshot.
 */
function restarts(event: EventObject, previous: AnyMachineSnapshot, options: SendOptions): boolean {
  return options.internal === true && event.type === 'xstate.init' && previous.status !== 'active';
}

function metadataJson(
  source: EventSource,
  delay: string | undefined,
  extra: Record<string, unknown> | undefined,
): string {
  if (source === 'send' && extra === undefined) return SEND_METADATA;
  return JSON.stringify({ source, ...(delay === undefined ? {} : { delay }), ...extra });
}

/** Everything this transition writes, applied atomically by the store. */
function buildWrite(
  core: ActorCore,
  event: EventObject,
  previous: AnyMachineSnapshot,
  next: AnyMachineSnapshot,
  plan: Plan,
  source: EventSource,
  options: SendOptions,
  now: number,
): ActorWrite {
  const { row, machine } = core;
  // A timer's transition is logged under the document's name of its event (RETRY, TIMEOUT).
  const timer = source === 'timer' ? chartMeta(machine).timerEvent(previous, event) : undefined;
  const snapshot = encodeSnapshot(machine, next);
  const state = stateLabel(next.value);
  const transition = buildTransitionRow({
    actorId: core.id,
    seq: row.version + 1,
    fromState: row.state,
    toState: state,
    eventType: timer?.name ?? event.type,
    event: JSON.stringify(event),
    at: now,
    metadata: metadataJson(source, timer?.delay, options.metadata),
    prevHash: row.headHash,
    chartVersion: row.chartVersion,
    snapshot,
  });
  const finished = next.status !== 'active';
  return {
    actorId: core.id,
    expectedVersion: row.version,
    actor: {
      id: row.id,
      machineId: row.machineId,
      chartVersion: row.chartVersion,
      version: row.version + 1,
      state,
      status: next.status,
      snapshot,
      createdAt: row.createdAt,
      updatedAt: now,
      headHash: transition.hash,
    },
    transition,
    // A finished actor keeps no timers.
    timersSet: finished ? [] : plan.timersSet,
    timersCancel: finished ? [] : plan.timersCancel,
    cancelAllTimers: finished,
    stepsBegin: stepsBegun(core.id, plan, row.version + 1, now),
    consumeTimer: options.consumeTimer,
    consumeMessage: options.consumeMessage,
    lease: options.fenced ? core.runtime.fence() : undefined,
    previous: row,
  };
}

/** Child actors must be kinds the runtime persists (spawns inside `assign` are seen only here). */
export function checkSpawns(machine: AnyStateMachine, plan: Plan, next: AnyMachineSnapshot): void {
  for (const spawn of plan.spawned)
    checkActor(machine, stateLabel(next.value), spawn.id, spawn.logic);
}

/** The steps a transition begins: one per invoked promise it entered. */
export function stepsBegun(
  actorId: string,
  plan: Plan,
  version: number,
  now: number,
): ActorWrite['stepsBegin'] {
  const promises = plan.spawned.filter((spawn) => actorKind(spawn.logic) === 'promise');
  if (promises.length === 0) return undefined;
  return promises.map((spawn) => ({
    key: invokeKey(actorId, spawn.id, version),
    name: invokeStepName(spawn.id),
    startedAt: now,
  }));
}

/** After the commit: invokes whose state was left are aborted, new ones start. */
export function startInvokes(core: ActorCore, plan: Plan, version: number): void {
  for (const id of plan.stopped) stopInvoke(core, id);
  for (const spawn of plan.spawned) {
    if (actorKind(spawn.logic) !== 'promise') continue; // a child machine is a message
    trackRun(
      core,
      runInvoke(core, {
        id: spawn.id,
        key: invokeKey(core.id, spawn.id, version),
        logic: spawn.logic,
        input: spawn.input,
      }),
    );
  }
}

/** After the commit: the receivers of the transition's messages get them delivered. */
export function postMessages(runtime: DurableRuntime, write: ActorWrite): void {
  const out = write.messagesOut;
  if (out !== undefined && out.length > 0) runtime.courier.notify(new Set(out.map((m) => m.to)));
}

function armTimers(runtime: DurableRuntime, write: ActorWrite): void {
  if (write.consumeTimer !== undefined) runtime.unschedule(write.actorId, write.consumeTimer);
  if (write.cancelAllTimers === true) {
    runtime.timers.unscheduleAll(write.actorId);
    return;
  }
  for (const id of write.timersCancel) runtime.unschedule(write.actorId, id);
  for (const t of write.timersSet) runtime.schedule(t);
}

/** Logs a failed commit, tells observers, and marks the actor stale after a lost race. */
function commitFailed(core: ActorCore, error: unknown, eventType: string, now: number): Error {
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
 * committed transition. The notice is built only when someone listens.
 */
export function afterCommit(core: ActorCore, plan: Plan, notice: () => TransitionNotice): void {
  const runtime = core.runtime;
  for (const effect of plan.effects) {
    try {
      effect.exec?.(effect.info, effect.params);
    } catch (error) {
      runtime.logger.error(
        { actorId: core.id, action: effect.type, err: error },
        'effect threw after commit',
      );
    }
  }
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
  if (!listeners?.size && !logged && !runtime.observed('onTransition')) return;
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
}

/**
 * Re-reads the actor from the store, checking that its snapshot and the head of
 * its chain agree (StoreError kind `corrupt` otherwise: nothing is written on top).
 */
export async function reload(core: ActorCore): Promise<void> {
  const found = await core.runtime.store.loadActorHead(core.id);
  if (!found) throw new StoreError({ operation: 'load', kind: 'not_found', actorId: core.id });
  const snapshot = decodeActorRow(core.machine, core.versioning, found.actor);
  checkHead(found.actor, found.head);
  core.snapshot = snapshot;
  core.row = found.actor;
  core.stale = false;
}

/**
 * Before refusing an event as illegal: did another process move the actor since
 * it was loaded here? If so it is reloaded (one indexed read, paid only on the
 * rejection path) and the event is decided again on the stored state.
 */
async function movedElsewhere(core: ActorCore): Promise<boolean> {
  if (!core.stale) {
    const stored = await core.runtime.store.loadActor(core.id);
    if (!stored || stored.version === core.row.version) return false;
  }
  await reload(core);
  return true;
}
