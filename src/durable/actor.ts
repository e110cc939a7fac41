/**
 * The handle of a durable actor: a persisted XState actor whose every accepted
 * event is validated, transitioned with the pure `transition()` and committed
 * (snapshot compare-and-set, hash-chained audit row, timer changes) in one store
 * transaction before anything else happens. Sends to one actor are serialised
 * through a mailbox; different actors proceed in parallel.
 */
import type {
  AnyStateMachine,
  EventFromLogic,
  EventObject,
  Observer,
  SnapshotFrom,
  Subscription,
} from 'xstate';
import { ConcurrencyError } from '../core/errors.ts';
import type { MessageRow, TransitionRow } from '../store/types.ts';
import type { ActorCore } from './actor-core.ts';
import type { LiveActor, TransitionNotice, TreeView } from './notices.ts';
import type { DurableRuntime } from './runtime.ts';
import { pendingTimer, type Rank } from './ledger.ts';
import { movedElsewhere, reload } from './reload.ts';
import { processEvent, takeActionSends } from './send.ts';
import { resumeInvokes, type InvokeRecovery } from './invoke.ts';
import {
  runStep,
  settleStep,
  stepKey,
  type ReconcileHook,
  type StepReconciliation,
} from './steps.ts';

/** The options of a plain send (no metadata): one object for every such send. */
const NO_OPTIONS = Object.freeze({});

/** Attempts of a timer or invoke delivery that keeps losing compare-and-set races. */
const CONFLICT_ATTEMPTS = 8;

export class DurableActor<TLogic extends AnyStateMachine> implements LiveActor {
  readonly id: string;
  readonly machine: TLogic;
  readonly runtime: DurableRuntime;
  private readonly core: ActorCore;
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private settled: (() => void) | undefined;
  private readonly stepsInFlight = new Map<string, Promise<unknown>>();

  /** @internal Use {@link createDurableActor}. */
  constructor(core: ActorCore) {
    this.core = core;
    core.handle = this;
    this.id = core.id;
    this.machine = core.machine as TLogic;
    this.runtime = core.runtime;
  }

  /**
   * @internal The actor as the rest of its tree sees it (./system-ids.ts): its
   * snapshot with the step being committed, if any.
   */
  treeView(): TreeView {
    const { core } = this;
    return {
      parentId: core.parentId,
      snapshot: core.ahead?.next ?? core.snapshot,
      ledger: core.ahead?.effects.ledger ?? core.ledger,
    };
  }

  /** Current committed snapshot. */
  getSnapshot(): SnapshotFrom<TLogic> {
    return this.core.snapshot as SnapshotFrom<TLogic>;
  }

  /** Committed version (number of transition rows). */
  get version(): number {
    return this.core.row.version;
  }

  /** State label of the current snapshot. */
  get state(): string {
    return this.core.row.state;
  }

  /**
   * Validates, transitions and durably commits one event; resolves with the new
   * snapshot once it is on disk and the messages it sent have been delivered in
   * its tree (the cascade they set off committed), as XState's `send` returns
   * after that cascade. Rejects with InvalidEventError or
   * InvalidTransitionError (nothing written), ConcurrencyError (another writer
   * moved the actor: it reloads on the next send) or StoreError (state unchanged).
   *
   * @example
   * const task = await createDurableActor(taskLifecycle.machine, { id: 'refund-42', store, input });
   * await task.send({ type: 'START' });
   */
  send(
    event: EventFromLogic<TLogic>,
    metadata?: Record<string, unknown>,
    options: { conflictRetries?: number } = {},
  ): Promise<SnapshotFrom<TLogic>> {
    // A cascade of messages under way in the actor's tree goes first (runtime.turnFor),
    // and the send resolves after the cascade it sets off (runtime.afterCascade).
    const turn = this.runtime.turnFor(this.id);
    // A send that cannot commit at once (it waits for its turn, or for this
    // actor's earlier events) holds the tree until its commit is submitted: a
    // later send to another actor of the tree goes after it (runtime.holdTree).
    const hold =
      turn !== undefined || this.pending > 0 ? this.runtime.holdTree(this.id) : undefined;
    const sent =
      turn === undefined
        ? this.sendNow(event, metadata, options, hold)
        : turn.then(() => this.sendNow(event, metadata, options, hold));
    return sent.then((snapshot) => this.runtime.afterCascade(this.id, snapshot));
  }

  private sendNow(
    event: EventFromLogic<TLogic>,
    metadata: Record<string, unknown> | undefined,
    options: { conflictRetries?: number },
    hold: (() => void) | undefined,
  ): Promise<SnapshotFrom<TLogic>> {
    const retries = options.conflictRetries ?? this.runtime.conflictRetries;
    const sendOptions =
      metadata === undefined && hold === undefined ? NO_OPTIONS : { metadata, hold };
    if (retries === 0) {
      // The common case: one attempt, no retry loop around it.
      return this.enqueue(
        () => processEvent(this.core, event, 'send', sendOptions) as Promise<SnapshotFrom<TLogic>>,
      );
    }
    return this.enqueue(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return (await processEvent(
            this.core,
            event,
            'send',
            sendOptions,
          )) as SnapshotFrom<TLogic>;
        } catch (error) {
          // A lost race marked the actor stale: the next attempt reloads and decides
          // on the stored state (possibly InvalidTransitionError now).
          if (!(error instanceof ConcurrencyError) || attempt >= retries) throw error;
        }
      }
    });
  }

  /**
   * @internal Sends on behalf of recovery (recorded with source `recover`, the
   * reason, and when that recovery started).
   */
  sendFromRecovery(
    event: EventObject,
    reason: string,
    recoveryStartedAt?: number,
  ): Promise<SnapshotFrom<TLogic>> {
    const metadata = recoveryStartedAt === undefined ? { reason } : { reason, recoveryStartedAt };
    return this.enqueue(
      async () =>
        (await processEvent(this.core, event, 'recover', {
          fenced: true,
          metadata,
        })) as SnapshotFrom<TLogic>,
    );
  }

  /**
   * @internal Fires one of this actor's durable timers, consuming it in the same
   * commit whatever the state does with its event. Returns false when the timer is
   * no longer pending (fired or cancelled) or not due yet (it is re-armed for its
   * due time).
   */
  deliverTimer(timerId: string, current?: () => boolean, firedAt?: number): Promise<boolean> {
    return this.enqueue(() =>
      this.retryingConflicts(async () => {
        // Armed again or cleared since its wake-up fired (TimerScheduler.supersede).
        if (current?.() === false) return false;
        const core = this.core;
        let timer = pendingTimer(core.ledger, timerId);
        // Another process may have set it since this one last read the actor.
        if (!timer && (await movedElsewhere(core))) timer = pendingTimer(core.ledger, timerId);
        if (!timer) {
          // Not pending (fired or cancelled meanwhile): only its wake-up is left.
          this.runtime.unschedule(this.id, timerId);
          return false;
        }
        if (timer.due > this.runtime.clock.now()) {
          // Node timers may wake a millisecond early.
          this.runtime.schedule({
            actorId: this.id,
            timerId,
            dueAt: timer.due,
            armedAt: timer.at,
            rank: timer.rank,
          });
          return false;
        }
        const done = await processEvent(core, timer.event, 'timer', {
          timer: timerId,
          fenced: true,
          // Taken when its wake-up fired (never before it fell due).
          ...(firedAt === undefined ? {} : { at: Math.max(firedAt, timer.due) }),
        });
        return done !== undefined;
      }, false),
    );
  }

  /**
   * @internal Delivers an invoked promise's outcome through the mailbox and send
   * path, while the actor awaits it (a lost race reloads and looks again).
   */
  deliverOutcome(event: EventObject, key: string, at?: number): Promise<void> {
    return this.enqueue(() =>
      this.retryingConflicts(async () => {
        await processEvent(this.core, event, 'invoke', { invoke: key, at });
      }, undefined),
    );
  }

  /**
   * @internal Takes events a user action sent to this actor with `self.send`
   * (./action-self.ts) after its step: those sent while the step's actions ran,
   * right after it and ahead of anything queued since.
   */
  takeActionSends(events: readonly EventObject[]): Promise<void> {
    return this.enqueue(async () => {
      await takeActionSends(this.core, events, this.core.snapshot);
    });
  }

  /**
   * @internal An event a user action sends to this actor later (from a callback,
   * after an await): in turn, as a caller's send goes.
   */
  sendFromAction(event: EventObject): Promise<void> {
    const turn = this.runtime.turnFor(this.id);
    const take = () => this.takeActionSends([event]);
    return turn === undefined ? take() : turn.then(take);
  }

  /**
   * @internal Delivers a message from another actor (an event, or a stop from its
   * parent), consuming the message row in the same commit; a message to an actor
   * that has finished is consumed without effect, as XState ignores it.
   */
  deliverMessage(message: MessageRow, base?: Rank): Promise<void> {
    return this.enqueue(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          const done = await processEvent(
            this.core,
            JSON.parse(message.body) as EventObject,
            'message',
            {
              consumeMessage: message.id,
              metadata: { from: message.from, fromSeq: message.fromSeq, idx: message.idx },
              base,
            },
          );
          if (done === undefined) await this.runtime.store.dropMessage(message.id);
          return;
        } catch (error) {
          // A lost race reloads; the message itself may have been delivered meanwhile.
          if (!(error instanceof ConcurrencyError) || attempt >= 2) throw error;
        }
      }
    });
  }

  /**
   * @internal Starts a finished child over when its parent spawns it again: a fresh
   * initial snapshot from the new input, consuming the spawn message. False when the
   * child is still running (the spawn is refused).
   */
  restartFromSpawn(
    message: MessageRow,
    spawn: { input: unknown; childId: string; sync?: true | undefined },
    base?: Rank,
  ): Promise<boolean> {
    const { input, childId } = spawn;
    return this.enqueue(async () => {
      const done = await processEvent(this.core, { type: 'xstate.init', input }, 'spawn', {
        consumeMessage: message.id,
        metadata: {
          parent: message.from,
          fromSeq: message.fromSeq,
          idx: message.idx,
          childId,
          ...(spawn.sync === true ? { sync: true } : {}),
        },
        base,
      });
      return done !== undefined;
    });
  }

  /**
   * Runs `work` again after a lost compare-and-set race (the actor reloads first),
   * a few times; then gives up with `fallback` (the timer poller or `recover()`
   * delivers it later).
   */
  private async retryingConflicts<T>(work: () => Promise<T>, fallback: T): Promise<T> {
    for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
      }
    }
    return fallback;
  }

  /**
   * Serialises work on this actor. An idle mailbox runs the work at once (no
   * extra turn): sends issued together to different actors reach the group commit
   * in the same batch.
   */
  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    this.runtime.touch(this);
    const idle = this.pending === 0;
    this.pending++;
    const run = idle ? work() : this.tail.then(work, work);
    // One function per actor, made on its first send, not one per send.
    const done = (this.settled ??= () => {
      this.pending--;
    });
    this.tail = run.then(done, done);
    return run;
  }

  /** @internal Settles the invoked promises of the current state after a restart (see recover). */
  resumeInvokes(reconcile: ReconcileHook | undefined): Promise<InvokeRecovery[]> {
    return resumeInvokes(this.core, reconcile);
  }

  /** Re-reads the actor from the store (after a ConcurrencyError, or to see other writers). */
  reload(): Promise<void> {
    return this.enqueue(() => reload(this.core));
  }

  /**
   * Called after every committed transition of this actor (in this process). A
   * function gets the transition's notice (states, event, version, snapshot). An
   * observer gets what XState's observers get: `next(snapshot)`, then
   * `complete()` when the actor reaches its final state, or `error(error)` when
   * it fails; so XState's `waitFor(actor, (s) => s.matches('done'))` and
   * `toPromise(actor)` work on a durable actor, and `useSelector(actor, …)` from
   * `@xstate/react` follows it (it reads `getSnapshot()` on each call).
   */
  subscribe(listener: (notice: TransitionNotice) => void): Subscription;
  subscribe(observer: Observer<SnapshotFrom<TLogic>>): Subscription;
  subscribe(
    listener: ((notice: TransitionNotice) => void) | Observer<SnapshotFrom<TLogic>>,
  ): Subscription {
    const listeners = (this.core.listeners ??= new Set());
    const call =
      typeof listener === 'function'
        ? listener
        : (notice: TransitionNotice) => observe(listener, notice);
    listeners.add(call);
    return { unsubscribe: () => listeners.delete(call) };
  }

  /** Listens to events the chart emits (`emit(...)`), after their transition committed; `'*'` for all. */
  on(type: string, listener: (event: EventObject) => void): Subscription {
    const byType = (this.core.emittedListeners ??= new Map());
    let set = byType.get(type);
    if (!set) byType.set(type, (set = new Set()));
    set.add(listener);
    return { unsubscribe: () => set.delete(listener) };
  }

  /** The whole audit trail, oldest first. */
  history(): Promise<TransitionRow[]> {
    return this.runtime.store.history(this.id);
  }

  /**
   * Runs a side effect at most once per actor and name. `fn` receives the
   * idempotency key `<actorId>:<name>` (pass it to the API you call). The step is
   * marked `executing`, run, and marked `done` with its JSON result, each durably;
   * later calls return the stored result without running `fn`. A step that threw is
   * marked `failed` and runs again on the next call. A step found `executing` from a
   * crashed process throws UncertainStepError until it is reconciled.
   *
   * @example
   * const receipt = await task.step('refund', (key) => payments.refund({ idempotencyKey: key, amount }));
   */
  step<T>(name: string, fn: (key: string) => Promise<T> | T): Promise<T> {
    const key = stepKey(this.id, name);
    const inFlight = this.stepsInFlight.get(key);
    if (inFlight) return inFlight as Promise<T>;
    const run = runStep(
      this.runtime.store,
      this.runtime.clock,
      { key, actorId: this.id, name },
      fn,
    ).finally(() => this.stepsInFlight.delete(key));
    this.stepsInFlight.set(key, run);
    return run;
  }

  /** Settles this actor's uncertain step `name` with a reconcile hook's answer. */
  async reconcileStep(name: string, decision: StepReconciliation): Promise<void> {
    await settleStep(
      this.runtime.store,
      stepKey(this.id, name),
      decision,
      this.runtime.clock.now(),
    );
  }

  /** @internal Whether the runtime may drop it from its cache (see `limitLiveActors`). */
  idle(): boolean {
    const core = this.core;
    return (
      this.pending === 0 &&
      this.stepsInFlight.size === 0 &&
      !core.invokes?.size &&
      !core.listeners?.size &&
      !core.emittedListeners?.size
    );
  }

  /** @internal The next send reloads first. */
  markStale(): void {
    this.core.stale = true;
  }

  /** Detaches this in-memory actor from the runtime. Its durable timers stay pending. */
  detach(): void {
    this.runtime.untrack(this);
  }

  /** Alias of {@link detach}, as XState's `actor.stop()`: the durable actor itself lives on. */
  stop(): void {
    this.detach();
  }
}

/** One notice to an XState-shaped observer: the snapshot, then how the actor ended. */
function observe<TSnapshot>(observer: Observer<TSnapshot>, notice: TransitionNotice): void {
  const snapshot = notice.snapshot as unknown as TSnapshot;
  if (notice.status === 'error') {
    observer.error?.((notice.snapshot as { error?: unknown }).error);
    return;
  }
  observer.next?.(snapshot);
  if (notice.status === 'done') observer.complete?.();
}
