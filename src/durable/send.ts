/**
 * The send path of a durable actor, top to bottom:
 * validate → decide the step (advance) → commit → effects → notify.
 * Nothing is written unless the event is valid and the step commits; nothing runs
 * (effects, listeners, observers) unless the commit is durable.
 */
import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { InvalidEventError, InvalidTransitionError } from '../core/errors.ts';
import { chartMeta } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import { eventIn } from '../strict/events.ts';
import type { ActorWrite } from '../store/types.ts';
import type { ActorCore, SendOptions } from './actor-core.ts';
import {
  advanceOrLookUp,
  fromCaller,
  type Delivery,
  type Step,
  type StepFacts,
} from './advance.ts';
import {
  afterCommit,
  armTimers,
  placedTimers,
  commitFailed,
  postMessages,
  startInvokes,
  stepsBegun,
} from './after-commit.ts';
import { ACTION_SEND_METADATA } from './action-self.ts';
import { encodeSnapshot } from './codec.ts';
import { nextDue } from './ledger.ts';
import { bySystemIdMarks } from './posted.ts';
import type { EventSource } from './notices.ts';
import { rejectEvent } from './reject.ts';
import { movedElsewhere, reload } from './reload.ts';
import { buildTransitionRow } from './row.ts';
import { decideWithTree } from './system-ids.ts';

const SEND_METADATA = '{"source":"send"}';

type Committed = Extract<Step, { kind: 'commit' }>;

/**
 * A caller's send's hold on its tree (SendOptions.hold, runtime.holdTree): taken
 * before the send reads the store, released once its commit is submitted.
 */
interface Held {
  release: (() => void) | undefined;
}

/** Holds the tree of a caller's send that is about to read the store, if it does not yet. */
function holdWhileReading(core: ActorCore, source: EventSource, held: Held): void {
  if (held.release === undefined && fromCaller(source))
    held.release = core.runtime.holdTree(core.id);
}

/**
 * Validates, decides and durably commits one event; resolves with the new
 * snapshot, or with undefined when the event delivers nothing (its timer or
 * invoke is no longer pending, or the actor has finished).
 */
export async function processEvent(
  core: ActorCore,
  event: unknown,
  source: EventSource,
  options: SendOptions,
  /** The caller's send's hold on its tree (SendOptions.hold), while it has one. */
  held: Held = { release: options.hold },
): Promise<AnyMachineSnapshot | undefined> {
  try {
    if (core.stale) {
      holdWhileReading(core, source, held);
      await reload(core);
    }
    const runtime = core.runtime;
    const now =
      options.at === undefined ? runtime.clock.now() : Math.max(options.at, core.row.updatedAt);
    const caller = fromCaller(source);

    // 1. Validate a caller's event: an ill-formed one changes nothing.
    let parsed: EventObject;
    try {
      parsed =
        caller && options.internal !== true
          ? eventIn(core.machine, event, {
              actorId: core.id,
              schemas: core.schemas,
              maxBytes: core.maxEventBytes,
            })
          : (event as EventObject);
    } catch (error) {
      if (error instanceof InvalidEventError) await rejectEvent(core, error, now);
      throw error;
    }

    // 2. Decide the step on the committed snapshot and ledger.
    const previous = core.snapshot;
    const facts: StepFacts = {
      machine: core.machine,
      actorId: core.id,
      parentId: core.parentId,
      seq: core.row.version + 1,
      now,
      snapshot: previous,
      ledger: core.ledger,
      event: parsed,
      delivery: deliveryOf(source, options),
      base: options.base ?? runtime.nextBase(),
    };
    const decided = advanceOrLookUp(facts);
    // A system id held elsewhere in the actor's tree (./system-ids.ts).
    if (decided.kind === 'lookup') holdWhileReading(core, source, held);
    const step = decided.kind === 'lookup' ? await decideWithTree(core, facts, decided) : decided;
    if (step.kind === 'gone') {
      // Gone on this process's copy (a child still running, an actor finished, a timer
      // or invoke no longer pending) may be stale: another process, or a killed
      // worker's last statement landing late, may have moved the stored actor. The
      // caller drops what it delivers, so decide on the stored state.
      holdWhileReading(core, source, held);
      if (await movedElsewhere(core)) return await processEvent(core, event, source, options, held);
      return undefined;
    }
    if (step.kind === 'refused') {
      // Decided on a state another process may have moved: look at the stored one.
      holdWhileReading(core, source, held);
      if (await movedElsewhere(core)) return await processEvent(core, event, source, options, held);
      const error = new InvalidTransitionError({
        machineId: core.machine.id,
        actorId: core.id,
        state: core.row.state,
        eventType: parsed.type,
      });
      await rejectEvent(core, error, now);
      throw error;
    }
    if (step.outcome === 'failed') {
      runtime.logger.error(
        { actorId: core.id, eventType: step.event.type, error: step.next.error },
        'the transition threw; the actor fails',
      );
    }

    // 3. Commit.
    const write = buildWrite(core, step, previous, source, options, now);
    core.ahead = step;
    try {
      const committing = runtime.commitPlacing(
        write,
        step.effects.timerPlaces === undefined
          ? undefined
          : placedTimers(() => core, step.effects, write.transition.seq),
        step.effects.base,
      );
      // Submitted: what comes after it in the tree waits for this commit's cascade.
      if (held.release !== undefined) {
        held.release();
        held.release = undefined;
      }
      await committing;
    } catch (error) {
      throw commitFailed(core, error, step.event.type, now);
    } finally {
      core.ahead = undefined;
    }

    // 4. Committed: move the actor, arm its timers, start and stop its invokes, post
    // its messages, run effects, tell listeners.
    const next = step.next;
    core.row = write.actor;
    core.snapshot = next;
    core.ledger = step.effects.ledger;
    armTimers(
      core,
      step.effects,
      options.timer,
      options.at !== undefined && now < runtime.clock.now() ? now : undefined,
    );
    startInvokes(core, step.effects);
    postMessages(runtime, write, step.outcome === 'relayed', step.effects.base);
    const sent = afterCommit(core, step.effects, previous, () => ({
      actorId: core.id,
      machineId: core.machine.id,
      version: write.actor.version,
      from: write.transition.fromState,
      to: write.actor.state,
      event: step.event,
      eventType: write.transition.eventType,
      source,
      at: now,
      status: write.actor.status,
      snapshot: next,
      previous,
    }));
    return sent === undefined ? next : await takeActionSends(core, sent, next);
  } finally {
    held.release?.();
  }
}

const ACTION_SEND: SendOptions = { internal: true, metadata: ACTION_SEND_METADATA };
/** Events an action sends its actor are checked for JSON and type, not against the chart's schemas. */
const NO_SCHEMAS = Object.freeze({});

/**
 * Takes, in order, events a user action sent to its own actor (`self.send`,
 * ./action-self.ts). Each is the machine's own event, as a `raise` is: not held
 * to the schemas a caller's events are, taken as a message is (one its state
 * does not take is dropped, one whose transition throws fails the actor, as in
 * XState). One that JSON would change, or of a type the machine never names, is
 * logged and not taken. Resolves with the snapshot after the last (`last` when
 * none committed).
 */
export async function takeActionSends(
  core: ActorCore,
  events: readonly EventObject[],
  last: AnyMachineSnapshot,
): Promise<AnyMachineSnapshot> {
  for (const event of events) {
    try {
      const parsed = eventIn(core.machine, event, {
        actorId: core.id,
        schemas: NO_SCHEMAS,
        maxBytes: core.maxEventBytes,
      });
      last = (await processEvent(core, parsed, 'message', ACTION_SEND)) ?? last;
    } catch (error) {
      const refused = error instanceof InvalidEventError;
      core.runtime.logger[refused ? 'warn' : 'error'](
        { actorId: core.id, eventType: (event as { type?: unknown }).type, err: error },
        refused
          ? 'event an action sent to its own actor was refused; not taken'
          : 'event an action sent to its own actor was not committed',
      );
    }
  }
  return last;
}

function deliveryOf(source: EventSource, options: SendOptions): Delivery {
  switch (source) {
    case 'send':
    case 'recover':
      return { source };
    case 'timer':
      return { source, key: options.timer ?? '' };
    case 'invoke':
      return { source, key: options.invoke ?? '' };
    case 'message':
      return { source };
    case 'spawn':
      return { source, sync: options.metadata?.['sync'] === true };
  }
}

function metadataJson(
  source: EventSource,
  step: Committed,
  delay: string | undefined,
  options: SendOptions,
): string {
  const extra = options.metadata;
  const marks = bySystemIdMarks(step.effects.messages);
  if (
    source === 'send' &&
    extra === undefined &&
    step.systemIds === undefined &&
    step.lives === undefined &&
    marks === undefined &&
    step.effects.ranked !== true
  ) {
    return SEND_METADATA;
  }
  const meta: Record<string, unknown> = { source };
  if (delay !== undefined) meta['delay'] = delay;
  if (options.timer !== undefined) meta['timer'] = options.timer;
  if (options.invoke !== undefined) meta['invoke'] = options.invoke;
  if (step.outcome === 'dropped') meta['dropped'] = true;
  if (step.outcome === 'relayed') meta['relay'] = step.relayedTo ?? null;
  if (step.systemIds !== undefined) meta['systemIds'] = step.systemIds;
  if (step.lives !== undefined) meta['lives'] = step.lives;
  if (marks !== undefined) meta['bySystemId'] = marks;
  // Where its timers were armed among the tree's (Rank): what a replay ranks them from.
  if (step.effects.ranked === true) meta['base'] = step.effects.base;
  return JSON.stringify(extra === undefined ? meta : { ...meta, ...extra });
}

/** Everything this step writes, applied atomically by the store. */
function buildWrite(
  core: ActorCore,
  step: Committed,
  previous: AnyMachineSnapshot,
  source: EventSource,
  options: SendOptions,
  now: number,
): ActorWrite {
  const { row, machine } = core;
  const { next, effects, event } = step;
  // A timer's transition is logged under the document's name of its event (RETRY, TIMEOUT).
  const timer =
    source === 'timer' && step.outcome !== 'relayed'
      ? chartMeta(machine).timerEvent(previous, event)
      : undefined;
  const snapshot = encodeSnapshot(machine, next, effects.ledger);
  const state = step.outcome === 'transition' ? stateLabel(next.value) : row.state;
  const transition = buildTransitionRow({
    actorId: core.id,
    seq: row.version + 1,
    fromState: row.state,
    toState: state,
    eventType: timer?.name ?? event.type,
    event: JSON.stringify(event),
    at: now,
    metadata: metadataJson(source, step, timer?.delay, options),
    prevHash: row.headHash,
    chartVersion: row.chartVersion,
    snapshot,
  });
  const write: ActorWrite = {
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
    nextDueAt: nextDue(effects.ledger),
    stepsBegin: stepsBegun(core.id, effects, now),
    consumeMessage: options.consumeMessage,
    lease: options.fenced ? core.runtime.fence() : undefined,
    previous: row,
  };
  if (effects.messages.length > 0) write.messagesOut = effects.messages;
  return write;
}
