/**
 * The storage contract of the durable runtime. One interface, implemented by the
 * embedded SQLite store (default), PostgreSQL and an in-memory store for unit
 * tests; one conformance suite (test/store-conformance.test.ts) runs against all.
 *
 * Stores move opaque JSON text: the runtime builds rows (including the hash chain)
 * and parses snapshots, so every store writes byte-identical data. The one thing a
 * store reads inside a snapshot is the actor's pending timers (see {@link TimerFacet}
 * and ./pending-timers.ts).
 *
 * The contract is grouped by facet, each documented once at its interface:
 * {@link ActorFacet} (actors, the commit and the log), {@link TimerFacet},
 * {@link StepFacet}, {@link MessageFacet}, {@link LeaseFacet},
 * {@link ReadModelFacet} and {@link RejectionFacet}; {@link Store} is all of them.
 */

// ---- actors and log -------------------------------------------------------------

/** Status of the actor's machine snapshot (XState's `snapshot.status`). */
export type ActorStatus = 'active' | 'done' | 'error' | 'stopped';

/** One durable actor: its latest snapshot and where its audit chain stands. */
export interface ActorRow {
  id: string;
  /** `machine.id` of the chart that runs it. */
  machineId: string;
  /** Persisted-snapshot version of the chart (ChartDefinition.version). */
  chartVersion: number;
  /** Compare-and-set version: 1 after creation, +1 per committed transition. */
  version: number;
  /** State label of the snapshot (`running`, `EXECUTION.working`). */
  state: string;
  status: ActorStatus;
  /** JSON text of the persisted XState snapshot (with what the actor has pending). */
  snapshot: string;
  createdAt: number;
  updatedAt: number;
  /** Hash of the latest transition row (head of the chain). */
  headHash: string;
}

/** One append-only audit row. `seq` equals the actor version it produced. */
export interface TransitionRow {
  actorId: string;
  seq: number;
  /** `null` on the creation row. */
  fromState: string | null;
  toState: string;
  eventType: string;
  /** JSON text of the event (`{"type":"xstate.init"}` plus input on creation). */
  event: string;
  at: number;
  /** JSON text: source (`send`, `timer`, `recover`), correlation ids, … */
  metadata: string;
  prevHash: string;
  hash: string;
  /**
   * Chart version that produced the row (null on rows written before agentcharts
   * recorded it).
   */
  chartVersion: number | null;
  /**
   * SHA-256 (hex) of the actor's snapshot JSON right after this transition, covered
   * by `hash`: loading an actor checks its snapshot against its last row. Null on
   * rows written before agentcharts recorded it (their hash covers no snapshot).
   */
  snapshotHash: string | null;
}

/**
 * Everything one transition writes, applied atomically: the actor row
 * (compare-and-set on its version) and its transition row, plus only what the
 * transition itself creates — steps it begins, messages it sends or delivers.
 * Timers need nothing more: they are in the snapshot, their earliest due time on
 * the row (`nextDueAt`).
 */
export interface ActorWrite {
  actorId: string;
  /** The version the runtime read; 0 creates the actor (fails if it exists). */
  expectedVersion: number;
  actor: ActorRow;
  transition: TransitionRow;
  /**
   * The earliest due time (ms) among the timers pending in `actor.snapshot`;
   * absent when none is. Stored on the actor row, so that due timers are found
   * without reading snapshots ({@link TimerFacet}).
   */
  nextDueAt?: number | undefined;
  /**
   * Steps this transition begins (an invoked promise entered with its state): each
   * is inserted `executing` with 0 attempts — not started yet — unless its key
   * exists. The runtime then claims its first run with {@link StepFacet.startStep}.
   */
  stepsBegin?: ReadonlyArray<{ key: string; name: string; startedAt: number }> | undefined;
  /**
   * Messages this transition sends to other actors (a child spawned or stopped, a
   * `sendTo`/`sendParent`, a child's completion), written with it and delivered
   * exactly once by the receiver's owner, in order per sender.
   */
  messagesOut?: ReadonlyArray<OutgoingMessage> | undefined;
  /**
   * The message this transition delivers: it must still be pending and is deleted
   * in the same commit; if it is gone the write fails with ConcurrencyError.
   */
  consumeMessage?: number | undefined;
  /** Creation only: the actor that spawned this one (its parent). */
  parentId?: string | undefined;
  /**
   * Updates only: the stored row's state, status, chart version and machine id as
   * the runtime read them (compare-and-set guarantees they are current when the
   * write matches). The store rewrites only what changed (the machine id too when
   * `previous` leaves it out). Absent: everything is rewritten.
   */
  previous?:
    | (Pick<ActorRow, 'state' | 'status' | 'chartVersion'> & { machineId?: string | undefined })
    | undefined;
  /**
   * Fencing for owner duties (timer firings, recovery actions): when set, the write
   * fails with LeaseLostError unless `owner` holds the actor's lease and it has not
   * expired at `now`. Plain sends carry no lease: compare-and-set orders them.
   */
  lease?: { owner: string; now: number } | undefined;
  /**
   * Creation only (`expectedVersion` 0): the user the actor works for (the `user_id`
   * of “Agent State Machine” (v1.0)), recorded once and ignored on updates. Read
   * back through {@link ReadModelFacet.countActors} and
   * {@link ReadModelFacet.actorsInStates}, not on ActorRow.
   */
  userId?: string | undefined;
}

export interface ActorQuery {
  machineId?: string | undefined;
  state?: string | undefined;
  /** Any of these state labels (an empty list matches nothing); with `state`, both must hold. */
  states?: readonly string[] | undefined;
  /** Only actors created for this user ({@link ActorWrite.userId}). */
  userId?: string | undefined;
  status?: ActorStatus | undefined;
  /** Keyset pagination: ids strictly greater than this. */
  afterId?: string | undefined;
  /** Default 100. */
  limit?: number | undefined;
}

/** A page of an actor's history. */
export interface HistoryPage {
  /** Rows with `seq` greater than this (default 0: from the start). */
  afterSeq?: number | undefined;
  /** At most this many rows (default: all). */
  limit?: number | undefined;
}

/** An actor row, the head of its chain, and the actor that spawned it (if any). */
export interface ActorHead {
  actor: ActorRow;
  head: TransitionRow | undefined;
  parentId?: string | undefined;
}

/** Everything stored about one actor, read at one moment ({@link ActorFacet.readActorLog}). */
export interface ActorLog {
  actor: ActorRow;
  parentId: string | undefined;
  rows: TransitionRow[];
  /** The earliest due time the row records for its pending timers ({@link ActorWrite.nextDueAt}). */
  nextDueAt: number | undefined;
}

/**
 * Actors and their log: the commit that moves an actor (its row and its
 * hash-chained transition row in one transaction), and reading both back.
 */
export interface ActorFacet {
  /**
   * Applies each write atomically, all in one transaction where the store can
   * (group commit). An update is written only at its expected version and on the
   * head of the actor's chain (its transition's `prevHash` is the row's
   * `headHash`), so a write made on top of one that was refused is refused too.
   * Returns, per write, `null` on success or the error that rejected that write
   * alone (ConcurrencyError on a version or chain conflict or a message already
   * delivered, LeaseLostError on a fenced write without the lease). A
   * failure of the whole transaction rejects the promise with a StoreError and
   * nothing is written.
   */
  commit(writes: readonly ActorWrite[]): Promise<Array<Error | null>>;
  loadActor(actorId: string): Promise<ActorRow | undefined>;
  /**
   * The actor row and the transition row at its version (the head of its chain), in
   * one read: loading checks that they agree before writing on top of them.
   */
  loadActorHead(actorId: string): Promise<ActorHead | undefined>;
  listActors(query?: ActorQuery): Promise<ActorRow[]>;
  /** The actors `parentId` spawned, by id. */
  childrenOf(parentId: string): Promise<ActorRow[]>;
  /** Transition rows of one actor in `seq` order; a page with `afterSeq`/`limit`. */
  history(actorId: string, page?: HistoryPage): Promise<TransitionRow[]>;
  /** Every actor id that has transition rows (for verify), in order. */
  actorIdsWithHistory(): Promise<string[]>;
  /**
   * An actor row, its parent, its whole log and its next timer due, read in one
   * consistent snapshot of the store (a writer committing meanwhile is seen
   * entirely or not at all): what `verify` checks against each other.
   */
  readActorLog(actorId: string): Promise<ActorLog | undefined>;
}

// ---- timers ---------------------------------------------------------------------

/** A pending durable timer (an XState delayed event) with an absolute due time. */
export interface TimerRow {
  actorId: string;
  /** Its key among the actor's pending timers (for `after`, the `xstate.after.*` event type). */
  timerId: string;
  /** JSON text of the event to deliver. */
  event: string;
  dueAt: number;
}

/** The due timers of an actor whose lease one worker took to fire them. */
export interface TimerClaim extends TimerRow {
  claimedBy: string;
  claimUntil: number;
}

/** Due timers to claim ({@link TimerFacet.claimDueTimers}). */
export interface TimerClaimRequest {
  owner: string;
  now: number;
  claimUntil: number;
  /** At most this many actors. */
  limit: number;
}

/**
 * Durable timers. An actor's pending timers are part of its snapshot (under its
 * `agentcharts` key: `{ timers: [{ key, event, due, … }] }`), written in the commit that arms or clears them; the actor
 * row keeps only the earliest due time ({@link ActorWrite.nextDueAt}). The index
 * that finds due actors is a read model, refreshed off the commit path with the
 * others ({@link ReadModelFacet}) and exact at any time, so arming, moving or
 * clearing a timer writes nothing beyond the actor row. A timer fires through its
 * actor's send path: the commit that delivers it removes it from the snapshot,
 * and compare-and-set on the version makes that exactly once.
 *
 * Actors written before timers moved into snapshots keep their timer rows (read
 * through these methods as well) until their next commit.
 */
export interface TimerFacet {
  /** The actor's pending timers, earliest first (then in the order it armed them). */
  timers(actorId: string): Promise<TimerRow[]>;
  /** Timers due at or before `now`, earliest first (then by actor), at most `limit`. */
  dueTimers(now: number, limit: number): Promise<TimerRow[]>;
  /** The earliest pending due time, if any. */
  nextTimerDue(): Promise<number | undefined>;
  /**
   * Takes, for `owner` until `claimUntil`, the leases of up to `limit` actors with a
   * timer due at or before `now` that are unowned, whose lease expired, or that
   * `owner` already holds, earliest due first; returns their due timers. Concurrent
   * callers get disjoint sets (row locks / SKIP LOCKED). Firing still commits
   * through the actor's send path, fenced by that lease.
   */
  claimDueTimers(request: TimerClaimRequest): Promise<TimerClaim[]>;
}

// ---- steps ----------------------------------------------------------------------

/** How a step ended: `done` or `failed`. */
export type StepEnd = 'done' | 'failed';

export type StepStatus = 'executing' | StepEnd;

/** An idempotent step (“Agent State Machine Design” §5), keyed `<actorId>:<name>`. */
export interface StepRow {
  key: string;
  actorId: string;
  name: string;
  status: StepStatus;
  /**
   * JSON text of the result (done) or of the error (failed); null while executing,
   * and for an invoked promise that settled with `undefined` (resolved or rejected).
   */
  result: string | null;
  startedAt: number;
  finishedAt: number | null;
  /** Executions started for this key (1 normally; >1 only through explicit reconcile → rerun). */
  attempts: number;
}

/** A step to begin ({@link StepFacet.beginStep}). */
export interface NewStep {
  key: string;
  actorId: string;
  name: string;
  startedAt: number;
}

/**
 * Idempotent steps: `actor.step(name, fn)` and invoked promises, each marked
 * `executing`, then `done` or `failed` with its result, durably; one found
 * `executing` after a crash is uncertain and reconciled, never blindly re-run.
 */
export interface StepFacet {
  getStep(key: string): Promise<StepRow | undefined>;
  /**
   * Inserts the step as `executing` if absent and returns `{ row, created: true }`;
   * otherwise returns the existing row untouched with `created: false`.
   */
  beginStep(step: NewStep): Promise<{ row: StepRow; created: boolean }>;
  /** Marks an executing step done or failed; `result` null: it settled with `undefined`. */
  finishStep(key: string, status: StepEnd, result: string | null, at: number): Promise<void>;
  /**
   * Claims the first run of a step a commit began (`executing`, 0 attempts):
   * attempts become 1 and `startedAt` is set. False when it was already started,
   * settled, or does not exist: exactly one caller runs it.
   */
  startStep(key: string, startedAt: number): Promise<boolean>;
  /** Re-arms an uncertain step for another execution (reconcile said `rerun`), attempts + 1. */
  restartStep(key: string, startedAt: number): Promise<void>;
  listSteps(query?: { actorId?: string; status?: StepStatus }): Promise<StepRow[]>;
}

// ---- messages -------------------------------------------------------------------

/** What a message carries: a spawn (create the child), an event, or a stop. */
export type MessageKind = 'spawn' | 'event' | 'stop';

/** A message as the sending transition writes it. */
export interface OutgoingMessage {
  /** The receiving actor's id. */
  to: string;
  kind: MessageKind;
  /** JSON text: the event, or for a spawn `{ src, input, childId, systemId }`. */
  body: string;
  /** Position among the messages of the sending transition (0, 1, …). */
  idx: number;
  /**
   * Sent to an actor found by its system id (XState's `system.get`). When a spawn
   * of the receiver was posted before it and is not delivered yet (the receiver is
   * stopped and spawned again under the id), it waits for that spawn and goes to
   * the new actor: XState's `system.get` finds the new child from the spawning
   * step on, even in a step of the old one. Known to the posting process only;
   * not stored.
   */
  bySystemId?: true | undefined;
}

/** A pending message. `id` orders the messages of one sender. */
export interface MessageRow extends OutgoingMessage {
  id: number;
  /** The sending actor and the version (transition seq) that sent it. */
  from: string;
  fromSeq: number;
  at: number;
}

/** Which pending messages {@link MessageFacet.pendingMessages} returns. */
export interface MessageQuery {
  /** Only messages to this actor; absent: to anyone. */
  to?: string | undefined;
  /** Only messages with a greater id. */
  afterId?: number | undefined;
  limit: number;
}

/**
 * Messages between actors (spawns, `sendTo`/`sendParent`, a child's completion):
 * written in the sender's commit ({@link ActorWrite.messagesOut}), deleted in the
 * receiver's ({@link ActorWrite.consumeMessage}), so each is delivered exactly once.
 * A message id is never given to another message, even after it was delivered or
 * dropped: a deliverer that read a message another one delivered must find its id
 * gone, not consume a newer message under it.
 */
export interface MessageFacet {
  /**
   * Pending messages, oldest first: to one receiver, or (without `to`) to anyone,
   * after message id `afterId`.
   */
  pendingMessages(query: MessageQuery): Promise<MessageRow[]>;
  /**
   * Deletes a pending message delivered without a transition (refused by its
   * receiver). Dropping is idempotent — after a crash the message is delivered again
   * and dropped again, changing nothing — so a store may leave the deletion to be
   * made durable by its next synced commit rather than sync it on its own.
   */
  dropMessage(id: number): Promise<boolean>;
}

// ---- leases ---------------------------------------------------------------------

/** Who is responsible for an actor's timers and recovery, until when. */
export interface LeaseRow {
  actorId: string;
  owner: string;
  /** ms since epoch; the lease is expired at any `now` greater than this. */
  leaseUntil: number;
}

/** Leases to take ({@link LeaseFacet.acquireLeases}). */
export interface LeaseRequest {
  owner: string;
  now: number;
  leaseUntil: number;
  limit: number;
  /** These actors only; absent: any active actor that is free. */
  actorIds?: readonly string[] | undefined;
}

/** Leases to extend ({@link LeaseFacet.renewLeases}). */
export interface LeaseRenewal {
  owner: string;
  now: number;
  leaseUntil: number;
  actorIds: readonly string[];
}

/**
 * Leases for several workers on one store: the holder of an actor's lease fires
 * its timers and runs its recovery, and those writes are fenced by it
 * ({@link ActorWrite.lease}). Plain sends carry no lease: compare-and-set orders them.
 */
export interface LeaseFacet {
  /**
   * Without `actorIds`: takes up to `limit` active actors that are unowned or whose
   * lease expired before `now` (never ones `owner` already holds, so repeated calls
   * page through the rest). With `actorIds`: takes or renews each listed actor (any
   * status) that is unowned, expired, or already held by `owner`. Sets owner and
   * `leaseUntil`; returns the leases taken. Concurrent callers never take the same
   * actor (row locks / SKIP LOCKED).
   */
  acquireLeases(request: LeaseRequest): Promise<LeaseRow[]>;
  /** Extends leases `owner` still holds (unexpired at `now`); returns the ids renewed. */
  renewLeases(request: LeaseRenewal): Promise<string[]>;
  /** Gives up leases (e.g. on clean shutdown). */
  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void>;
  lease(actorId: string): Promise<LeaseRow | undefined>;
}

// ---- read models ----------------------------------------------------------------

/** How many actors stand in one (machine, state, status), for statistics without loading actors. */
export interface ActorCount {
  machineId: string;
  state: string;
  status: ActorStatus;
  count: number;
  /** Σ (updatedAt − createdAt) over these actors, in ms (their execution time so far). */
  totalAgeMs: number;
}

export interface ActorCountQuery {
  machineId?: string | undefined;
  /** Only actors created for this user ({@link ActorWrite.userId}). */
  userId?: string | undefined;
  /** Only actors whose last transition is at or after this time (ms). */
  updatedSince?: number | undefined;
}

/** Where an actor stands and since when (time in state = now − stateSince). */
export interface ActorDwell {
  actorId: string;
  machineId: string;
  state: string;
  status: ActorStatus;
  /** When the actor entered `state`: the time of its last transition that changed the state label. */
  stateSince: number;
  updatedAt: number;
  userId: string | null;
}

export interface StatesQuery {
  /** State labels to match exactly (an empty list matches nothing). */
  states: readonly string[];
  machineId?: string | undefined;
  userId?: string | undefined;
  /** Only actors that entered their state at or before this time (ms). */
  enteredBefore?: number | undefined;
  /** Default 100. */
  limit?: number | undefined;
}

/** Per actor: how many of its transitions in a window entered one of the given states. */
export interface StateEntryCount {
  actorId: string;
  machineId: string;
  /** The actor's current state and status. */
  state: string;
  status: ActorStatus;
  count: number;
}

export interface StateEntryQuery {
  /** Count transition rows whose `toState` is one of these and differs from `fromState`. */
  toStates: readonly string[];
  /** Rows at or after this time (ms). */
  since: number;
  /** Only actors with at least this many entries. Default 1. */
  minCount?: number | undefined;
  /** Default 100. */
  limit?: number | undefined;
}

/** A transition row with the machine of its actor (the feed `tail` follows). */
export interface TransitionFeedRow extends TransitionRow {
  machineId: string;
}

/** Which transition rows {@link ReadModelFacet.transitionsSince} returns. */
export interface TransitionFeedQuery {
  since: number;
  machineId?: string | undefined;
  limit?: number | undefined;
}

/**
 * Read models: lookups by state, status, user and due time, statistics, alert
 * inputs and the transition feed. Derived from the actor rows and the log and
 * refreshed off the commit path (the commit never writes them), yet exact at any
 * time: a query overlays what changed since the last refresh.
 */
export interface ReadModelFacet {
  /**
   * Actor counts grouped by machine, state and status (the collection statistics of
   * “Agent Status Models”), computed by the store over an index; ordered by machine,
   * state, status.
   */
  countActors(query?: ActorCountQuery): Promise<ActorCount[]>;
  /**
   * Actors whose current state is one of `states`, oldest entry first (then by id):
   * time-in-state alerts (`enteredBefore`) and the "active agents for a user"
   * of “Agent State Machine” (v1.0).
   */
  actorsInStates(query: StatesQuery): Promise<ActorDwell[]>;
  /**
   * Actors that entered one of `toStates` at least `minCount` times since `since`
   * (retry flapping), most entries first, then by id.
   */
  countStateEntries(query: StateEntryQuery): Promise<StateEntryCount[]>;
  /** Transition rows at or after `since`, by time, actor id and seq, up to `limit` (default 1000). */
  transitionsSince(query: TransitionFeedQuery): Promise<TransitionFeedRow[]>;
  /**
   * Brings the derived read models up to date with the log now. Queries are exact
   * without it (they overlay what changed since the last refresh); stores also
   * refresh on their own, off the commit path.
   */
  refreshReadModels(): Promise<void>;
  /** Rebuilds the derived read models from the authoritative tables (`agentcharts reindex`). */
  rebuildReadModels(): Promise<{ actors: number; entries: number }>;
}

// ---- rejections -----------------------------------------------------------------

/** An event refused by the strict layer, kept for metrics and alerts. */
export interface RejectionRow {
  actorId: string;
  machineId: string;
  state: string;
  eventType: string;
  /** `invalid_transition` or an InvalidEventError reason. */
  reason: string;
  at: number;
}

/** Events refused before any transition (invalid payloads, illegal transitions), for metrics and alerts. */
export interface RejectionFacet {
  recordRejection(row: RejectionRow): Promise<void>;
  listRejections(query?: { since?: number; actorId?: string }): Promise<RejectionRow[]>;
  /** How many rejections at or after `since` (and before `until`), optionally of one `reason`. */
  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number>;
  /**
   * Retention of rejection rows: deletes those recorded before `before`, then all
   * but the newest `keep` (by time, then insertion). Returns how many went.
   */
  pruneRejections(query: { before?: number; keep?: number }): Promise<number>;
}

// ---- the store ------------------------------------------------------------------

/** A signed request to remember: its key, its nonce (signature), until when (ms), and now (ms). */
export interface RememberedRequest {
  key: string;
  nonce: string;
  expiresAt: number;
  now: number;
}

/** A statement or transaction a store runs again after the database rolled it back (Store.onRetry). */
export interface StoreRetry {
  /** The database's code for why: `40P01` (deadlock), `40001` (serialization failure). */
  code: string;
  /** Which time it runs again: 1 the first. */
  attempt: number;
  /** The database's message. */
  detail: string;
}

/** Every facet of the contract, and what belongs to the store as a whole. */
export interface Store
  extends
    ActorFacet,
    TimerFacet,
    StepFacet,
    MessageFacet,
    LeaseFacet,
    ReadModelFacet,
    RejectionFacet {
  /** `sqlite`, `postgres` or `memory`. */
  readonly kind: string;
  /** Where the data lives, printable (no credentials). */
  readonly location: string;
  /**
   * Remembers a signed request (`key` id + `nonce`, its signature) until `expiresAt`
   * (ms), so that a captured request is refused after a restart too and by every
   * server on the store. `replayed` when it was already remembered and has not
   * expired. Expired entries are dropped as `now` (ms) passes them.
   */
  rememberRequest(request: RememberedRequest): Promise<'new' | 'replayed'>;
  /**
   * Calls `listener` soon after commits by any process sharing the store, where
   * the store can tell (PostgreSQL: LISTEN/NOTIFY); absent otherwise, and
   * followers poll. Returns the unsubscribe.
   */
  onCommits?(listener: () => void): () => void;
  /**
   * Calls `listener` each time the store runs a statement or transaction again
   * because the database rolled it back (PostgreSQL: a deadlock or a
   * serialization failure; see its `rollbackRetries`); absent where the store
   * never does. The runtime logs each at WARN, and `createMetrics` counts them
   * (`agentcharts_store_rollback_retries_total`). Returns the unsubscribe.
   */
  onRetry?(listener: (retry: StoreRetry) => void): () => void;
  close(): Promise<void>;
}
