/**
 * What the runtime tells observers (metrics, streams, inspectors, servers) after
 * the fact. Observers subscribe to a runtime; the runtime imports none of them.
 */
import type { AnyEventObject, AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import type { InvalidEventError, InvalidTransitionError } from '../core/errors.ts';
import type { ActorStatus, MessageRow } from '../store/types.ts';
import type { Ledger } from './ledger.ts';

/** Where an event came from, recorded in the transition row's metadata. */
export type EventSource = 'send' | 'timer' | 'recover' | 'invoke' | 'message' | 'spawn';

/** Told to subscribers after a transition committed. */
export interface TransitionNotice {
  actorId: string;
  machineId: string;
  /** Actor version after the transition (= transition row seq). */
  version: number;
  /** `null` when the actor was created. */
  from: string | null;
  to: string;
  event: EventObject;
  /**
   * The event's name in the log: the event type, or for a timer the document's
   * name of the delayed event (`RETRY`, `TIMEOUT`) from the chart's metadata.
   */
  eventType: string;
  source: EventSource | 'create';
  at: number;
  status: ActorStatus;
  snapshot: AnyMachineSnapshot;
  /** The snapshot before the transition (undefined on creation). */
  previous: AnyMachineSnapshot | undefined;
}

/** Told to observers when an event was refused (nothing changed). */
export interface RejectionNotice {
  actorId: string;
  machineId: string;
  state: string;
  eventType: string | undefined;
  error: InvalidEventError | InvalidTransitionError;
  at: number;
}

/** An event the chart emitted (`emit(...)`), delivered after its transition committed. */
export interface EmittedNotice {
  actorId: string;
  machineId: string;
  event: EventObject;
  at: number;
}

/** A commit failed: state unchanged, the send rejected with `error`. */
export interface WriteErrorNotice {
  actorId: string;
  error: Error;
  at: number;
}

/** Something that wants to know about every transition and rejection of a runtime. */
export interface RuntimeObserver {
  onTransition?(notice: TransitionNotice): void;
  onRejection?(notice: RejectionNotice): void;
  onEmitted?(notice: EmittedNotice): void;
  onWriteError?(notice: WriteErrorNotice): void;
}

/** An actor as the rest of its tree sees it: its parent, and its newest decided step. */
export interface TreeView {
  parentId: string | undefined;
  snapshot: AnyMachineSnapshot;
  ledger: Ledger;
}

/**
 * A live durable actor as the runtime hands it out by id (`runtime.actor(id)`):
 * what callers that only know the id can do with it, and what the runtime drives.
 */
export interface LiveActor {
  readonly id: string;
  readonly machine: AnyStateMachine;
  readonly state: string;
  readonly version: number;
  getSnapshot(): AnyMachineSnapshot;
  /** Validates, transitions and durably commits one event (see DurableActor.send). */
  send(
    event: AnyEventObject,
    metadata?: Record<string, unknown>,
    options?: { conflictRetries?: number },
  ): Promise<AnyMachineSnapshot>;
  /**
   * Fires one of the actor's durable timers; false when it is gone or not due, or
   * when `current` (a wake-up's check) says the timer was armed again or cleared
   * since the wake-up fired.
   */
  deliverTimer(timerId: string, current?: () => boolean, firedAt?: number): Promise<boolean>;
  /**
   * Delivers a message from another actor, consuming it in the same commit;
   * `base`: where its step was taken among the tree's, when the courier nests it
   * in a delivery (the timers it arms are ranked from it, PendingTimer.rank).
   */
  deliverMessage(message: MessageRow, base?: readonly number[]): Promise<void>;
  /**
   * Starts a finished child over when its parent spawns it again (the spawn's input,
   * child id, and whether the parent asks for its snapshots). False when the child
   * is still running (the spawn is refused).
   */
  restartFromSpawn(
    message: MessageRow,
    spawn: { input: unknown; childId: string; sync?: true | undefined },
    base?: readonly number[],
  ): Promise<boolean>;
  /** Forgets the in-memory actor (its durable state lives on). */
  detach(): void;
  /** Nothing of it is in flight here: no queued send, running invoke or step, no listener. */
  idle(): boolean;
  /** Reads the store again before its next decision (it was out of the runtime's cache). */
  markStale(): void;
  /** Re-reads the actor from the store (to see other writers). */
  reload(): Promise<void>;
  /** Called after every committed transition of this actor (in this process). */
  subscribe(listener: (notice: TransitionNotice) => void): { unsubscribe(): void };
  /** @internal The actor as the rest of its tree sees it (./system-ids.ts). */
  treeView(): TreeView;
}
