/**
 * Creating a durable actor: its initial snapshot (computed once, without a
 * throwaway actor), its creation row and its first timers, committed together.
 */
import type { AnyStateMachine, EventObject } from 'xstate';
import { ConcurrencyError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import { validateInput } from '../strict/events.ts';
import type { ActorRow, ActorWrite } from '../store/types.ts';
import { DurableActor } from './actor.ts';
import { newCore, type ActorCore, type ActorOptions } from './actor-core.ts';
import { advance, advanceOrLookUp, type StepFacts } from './advance.ts';
import { encodeSnapshot, type ChartVersioning } from './codec.ts';
import { EMPTY_LEDGER, nextDue, type Rank } from './ledger.ts';
import { bySystemIdMarks } from './posted.ts';
import type { DurableActorOptions } from './options.ts';
import { buildTransitionRow, GENESIS_HASH } from './row.ts';
import { decideWithTree } from './system-ids.ts';
import type { DurableRuntime } from './runtime.ts';
import {
  afterCommit,
  armTimers,
  placedTimers,
  postMessages,
  startInvokes,
  stepsBegun,
} from './after-commit.ts';

/** Commits a new actor: its initial snapshot, its creation row and its first timers. */
export async function createActor<TLogic extends AnyStateMachine>(
  runtime: DurableRuntime,
  machine: TLogic,
  versioning: ChartVersioning,
  options: DurableActorOptions<TLogic>,
  actorOptions: ActorOptions,
  /**
   * A child spawned by another actor: its parent, the spawn message it consumes,
   * and its first step's place in the arm order (Rank), when the courier nests it.
   */
  spawned?: { parentId: string; consumeMessage: number; base?: Rank | undefined },
  /**
   * `mode: 'create'`: an actor that exists is the caller's mistake, answered with
   * the ConcurrencyError alone (not logged, not a write error).
   */
  mustBeNew = false,
): Promise<DurableActor<TLogic>> {
  validateInput(machine, options.input, options.id);
  const now = runtime.clock.now();
  const initEvent: EventObject =
    options.input === undefined
      ? { type: 'xstate.init' }
      : ({ type: 'xstate.init', input: options.input } as EventObject);
  const facts: StepFacts = {
    machine,
    actorId: options.id,
    parentId: spawned?.parentId,
    seq: 1,
    now,
    snapshot: undefined,
    ledger: EMPTY_LEDGER,
    event: initEvent,
    // A child whose parent asked for its snapshots (its creation row says so).
    delivery: {
      source: 'create',
      sync: spawned !== undefined && options.metadata?.['sync'] === true,
      systemId: spawned === undefined ? options.systemId : undefined,
    },
    base: spawned?.base ?? runtime.nextBase(),
  };
  // A spawned child's first step may ask for a system id held elsewhere in its
  // tree (./system-ids.ts); a root's tree is only itself yet.
  const decided = spawned === undefined ? advance(facts) : advanceOrLookUp(facts);
  const step =
    decided.kind === 'lookup'
      ? await decideWithTree(
          {
            runtime,
            id: options.id,
            parentId: spawned?.parentId,
            snapshot: undefined,
            ledger: EMPTY_LEDGER,
          },
          facts,
          decided,
        )
      : decided;
  if (step.kind !== 'commit') throw new Error('creation always commits');
  const { next: initial, effects } = step;
  const state = stateLabel(initial.value);
  const marks = bySystemIdMarks(effects.messages);
  const snapshot = encodeSnapshot(machine, initial, effects.ledger);
  const transition = buildTransitionRow({
    actorId: options.id,
    seq: 1,
    fromState: null,
    toState: state,
    eventType: initEvent.type,
    event: JSON.stringify(initEvent),
    at: now,
    metadata: JSON.stringify({
      source: 'create',
      ...options.metadata,
      ...(step.systemIds === undefined ? {} : { systemIds: step.systemIds }),
      ...(step.lives === undefined ? {} : { lives: step.lives }),
      ...(marks === undefined ? {} : { bySystemId: marks }),
      ...(effects.ranked === true ? { base: effects.base } : {}),
      ...(facts.delivery.source === 'create' && facts.delivery.systemId !== undefined
        ? { rootSystemId: facts.delivery.systemId }
        : {}),
    }),
    prevHash: GENESIS_HASH,
    chartVersion: versioning.version,
    snapshot,
  });
  const row: ActorRow = {
    id: options.id,
    machineId: machine.id,
    chartVersion: versioning.version,
    version: 1,
    state,
    status: initial.status,
    snapshot,
    createdAt: now,
    updatedAt: now,
    headHash: transition.hash,
  };
  const write: ActorWrite = {
    actorId: options.id,
    expectedVersion: 0,
    actor: row,
    transition,
    nextDueAt: nextDue(effects.ledger),
    stepsBegin: stepsBegun(options.id, effects, now),
    userId: options.userId,
    ...(effects.messages.length > 0 ? { messagesOut: effects.messages } : {}),
    ...(spawned === undefined
      ? {}
      : { parentId: spawned.parentId, consumeMessage: spawned.consumeMessage }),
  };
  let made: ActorCore | undefined;
  try {
    await runtime.commitPlacing(
      write,
      effects.timerPlaces === undefined ? undefined : placedTimers(() => made, effects, 1),
      effects.base,
    );
  } catch (error) {
    const race = error instanceof ConcurrencyError;
    if (race && mustBeNew) throw error;
    const err = error instanceof Error ? error : new Error(String(error));
    runtime.logger[race ? 'warn' : 'error'](
      { actorId: options.id, machineId: machine.id, err },
      'actor not created; nothing written',
    );
    runtime.notify('onWriteError', { actorId: options.id, error: err, at: now });
    throw error;
  }
  const core = (made = newCore(
    runtime,
    machine,
    versioning,
    row,
    initial,
    effects.ledger,
    actorOptions,
    spawned?.parentId,
  ));
  const actor = new DurableActor<TLogic>(core);
  runtime.track(actor);
  if (runtime.owner !== undefined) await runtime.acquire([row.id]);
  armTimers(core, effects);
  startInvokes(core, effects);
  postMessages(runtime, write, false, effects.base);
  // What the initial entry emitted reaches the runtime's observers (the actor's own
  // listeners cannot exist yet), as a plain actor's listeners attached before start.
  const sent = afterCommit(core, effects, initial, () => ({
    actorId: options.id,
    machineId: machine.id,
    version: 1,
    from: null,
    to: state,
    event: initEvent,
    eventType: initEvent.type,
    source: 'create',
    at: now,
    status: row.status,
    snapshot: initial,
    previous: undefined,
  }));
  // What its initial entry's actions sent to the actor itself, taken before it is
  // handed out, as XState's `start()` takes it: after the children of its initial
  // state started and what they sent it on start (XState starts them first), and
  // before what the entry sent itself with `sendTo` or a promise that settles at
  // once (XState sends those after the entry). A root that started no child takes
  // them at once, ahead of those; one that did waits for its first step's cascade
  // (docs/durability.md). A child spawned in a cascade takes them at once (waiting
  // for that cascade would wait for itself).
  if (sent !== undefined) {
    if (spawned === undefined && effects.messages.some((m) => m.kind === 'spawn')) {
      await runtime.turnFor(options.id);
    }
    await actor.takeActionSends(sent);
  }
  return actor;
}
