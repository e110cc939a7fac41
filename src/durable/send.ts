/**
 * The send path of a durable actor, top to bottom:
 * validate → pure transition → plan timers and effects → commit → effects → notify.
 * Nothing is written unless the event is valid and legal in the stored state;
 * nothing runs (effects, listeners, observers) unless the commit is durable.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { InvalidEventError, InvalidTransitionError } from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import { eventIn } from '../strict/events.ts';
import type { ActorWrite } from '../store/types.ts';
import type { ActorCore, SendOptions } from './actor-core.ts';
import {
  afterCommit,
  armTimers,
  checkSpawns,
  commitFailed,
  postMessages,
  startInvokes,
  stepsBegun,
} from './after-commit.ts';
import { encodeSnapshot } from './codec.ts';
import { isCompletion, planMessages } from './messages.ts';
import type { EventSource } from './notices.ts';
import { planActions, planChildren, type Plan } from './plan.ts';
import { pureInitial, pureTransition, transitionOrFail } from './pure.ts';
import { rejectEvent } from './reject.ts';
import { movedElsewhere, reload } from './reload.ts';
import { buildTransitionRow } from './row.ts';

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
      : eventIn(core.machine, event, {
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
  // A chart that throws: a caller's send is refused; a message or timer fails the
  // actor (committed, so it is consumed and the parent hears of it).
  const { next, actions, failed } = transitionOrFail(
    previous,
    () => source,
    () =>
      restarts(parsed, previous, options)
        ? pureInitial(core.machine, (parsed as { input?: unknown }).input)
        : previous.status === 'active'
          ? pureTransition(core.machine, previous, parsed)
          : [previous, []],
  );
  if (failed) {
    runtime.logger.error(
      { actorId: core.id, eventType: parsed.type, error: next.error },
      'the transition threw; the actor fails',
    );
  }
  if (next === previous && !(previous.status === 'active' && previous.can(parsed))) {
    // Decided on a state another process may have moved: look at the stored one.
    // Messages, timers and outcomes too: refusing one on a stale snapshot would
    // drop it, though the stored state accepts it.
    if (await movedElsewhere(core)) {
      return processEvent(core, event, source, options);
    }
    const error = new InvalidTransitionError({
      machineId: core.machine.id,
      actorId: core.id,
      state: core.row.state,
      eventType: parsed.type,
    });
    // A child's completion the parent has no transition for is not a caller's
    // mistake: plain XState ignores it, and so does the record.
    if (!(options.internal && isCompletion(parsed.type))) await rejectEvent(core, error, now);
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
