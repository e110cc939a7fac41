/**
 * XState's `waitFor` and `toPromise`, typed for a durable actor. XState's own
 * work on it at run time (a durable actor's observers get snapshots, `complete`
 * and `error` as XState's do: DurableActor.subscribe), but their types ask for an
 * `ActorRef`, which a durable actor is not (its `send` resolves once the commit
 * is durable); these take one without a cast.
 */
import {
  toPromise as xstateToPromise,
  waitFor as xstateWaitFor,
  type AnyActorRef,
  type AnyStateMachine,
  type OutputFrom,
  type SnapshotFrom,
} from 'xstate';
import { isOptionsBag, requireArg, EXPECTED } from '../core/options.ts';
import { DurableActor } from './actor.ts';

/** As XState's `waitFor` options: a timeout in ms (default Infinity) and an abort signal. */
export interface DurableWaitForOptions {
  timeout?: number;
  signal?: AbortSignal;
}

/**
 * Resolves with the actor's first snapshot (its current one, then each committed
 * one in this process) for which `predicate` holds; rejects when the actor fails,
 * finishes without it holding, or on timeout or abort, as XState's `waitFor`.
 */
export function waitFor<TLogic extends AnyStateMachine>(
  actor: DurableActor<TLogic>,
  predicate: (snapshot: SnapshotFrom<TLogic>) => boolean,
  options?: DurableWaitForOptions,
): Promise<SnapshotFrom<TLogic>> {
  requireArg(
    'waitFor',
    'actor',
    actor instanceof DurableActor,
    'a durable actor (createDurableActor)',
  );
  requireArg('waitFor', 'predicate', typeof predicate === 'function', 'a function of the snapshot');
  requireArg('waitFor', 'options', isOptionsBag(options), EXPECTED.options);
  return xstateWaitFor(
    actor as unknown as AnyActorRef,
    predicate as (snapshot: unknown) => boolean,
    options,
  ) as Promise<SnapshotFrom<TLogic>>;
}

/** Resolves with the actor's output once it reaches its final state (rejects when it fails), as XState's `toPromise`. */
export function toPromise<TLogic extends AnyStateMachine>(
  actor: DurableActor<TLogic>,
): Promise<OutputFrom<TLogic>> {
  requireArg(
    'toPromise',
    'actor',
    actor instanceof DurableActor,
    'a durable actor (createDurableActor)',
  );
  return xstateToPromise(actor as unknown as AnyActorRef) as Promise<OutputFrom<TLogic>>;
}
