/** The state a durable actor carries between sends, shared by its handle and its send path. */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import type { EventSchemas } from '../core/chart.ts';
import type { ActorRow } from '../store/types.ts';
import type { ChartVersioning } from './codec.ts';
import type { Ledger, Rank } from './ledger.ts';
import type { TransitionNotice } from './notices.ts';
import type { DurableRuntime } from './runtime.ts';

/** The mutable heart of a durable actor: what the send path reads and moves. */
export interface ActorCore {
  readonly id: string;
  readonly machine: AnyStateMachine;
  readonly runtime: DurableRuntime;
  readonly versioning: ChartVersioning;
  readonly schemas: EventSchemas | undefined;
  readonly maxEventBytes: number | undefined;
  /** The committed actor row, its live snapshot and what it has pending. */
  row: ActorRow;
  snapshot: AnyMachineSnapshot;
  ledger: Ledger;
  /**
   * The step being committed, from the moment it is decided until its commit
   * settles: what the actor's tree sees of it meanwhile (./system-ids.ts).
   */
  ahead: { next: AnyMachineSnapshot; effects: { ledger: Ledger } } | undefined;
  /** A lost race: reload before deciding anything. */
  stale: boolean;
  /** The actor that spawned this one (messages to `#_parent` and its completion go there). */
  parentId: string | undefined;
  // Made on first use: most actors have no listener and no invoke (heap per idle actor).
  listeners: Set<(notice: TransitionNotice) => void> | undefined;
  emittedListeners: Map<string, Set<(event: EventObject) => void>> | undefined;
  /** Invoked promises running in this process, by step key. */
  invokes: Map<string, AbortController> | undefined;
  /**
   * The order its invokes start their promises in and deliver their outcomes in
   * (./invoke.ts): XState's, whatever order the store's round trips come back in.
   */
  invokeTurns:
    | {
        start: Promise<void>;
        outcome: Promise<void>;
        /** The places held in the outcome queue, each by its reserved turn (Infinity: none). */
        outcomesHeld: Set<{ place: number }>;
      }
    | undefined;
  /**
   * The actor's handle: delivers an invoke's outcome through its mailbox and send
   * path, and takes what a user action or a promise sent the actor (./action-self.ts).
   */
  handle:
    | {
        deliverOutcome(event: EventObject, key: string, at?: number): Promise<void>;
        sendFromAction(event: EventObject): Promise<void>;
        takeActionSends(events: readonly EventObject[]): Promise<void>;
      }
    | undefined;
}

export interface SendOptions {
  /** The timer (its key in the ledger) this event fires: consumed in the same commit. */
  timer?: string | undefined;
  /** The invoke (its step key) whose outcome this event is: taken off the ledger in the same commit. */
  invoke?: string | undefined;
  /** The message this event delivers: its row is consumed in the same commit. */
  consumeMessage?: number | undefined;
  /**
   * The instant the step is taken at, when not the clock's now: an invoke's
   * outcome that settled at once, taken when its state was entered (never before
   * the actor's last commit).
   */
  at?: number | undefined;
  /** Built by the runtime: not validated as a caller's event. */
  internal?: boolean | undefined;
  /** The step's place in the arm order (Rank), when a delivery nests it. */
  base?: Rank | undefined;
  /** An owner duty (timer, recovery): fenced by the lease when leases are on. */
  fenced?: boolean | undefined;
  metadata?: Record<string, unknown> | undefined;
  /**
   * A caller's send that holds its tree (runtime.holdTree): released once its
   * commit is submitted, or when it ends without one.
   */
  hold?: (() => void) | undefined;
}

export type ActorOptions = {
  schemas?: EventSchemas | undefined;
  maxEventBytes?: number | undefined;
};

export function newCore(
  runtime: DurableRuntime,
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  row: ActorRow,
  snapshot: AnyMachineSnapshot,
  ledger: Ledger,
  options: ActorOptions,
  parentId?: string,
): ActorCore {
  return {
    id: row.id,
    machine,
    runtime,
    versioning,
    schemas: options.schemas,
    maxEventBytes: options.maxEventBytes,
    row,
    snapshot,
    ledger,
    ahead: undefined,
    stale: false,
    parentId,
    listeners: undefined,
    emittedListeners: undefined,
    invokes: undefined,
    invokeTurns: undefined,
    handle: undefined,
  };
}
