/**
 * Delivers pending messages to the actors this runtime owns, in the order plain
 * XState's synchronous system would: a transition's messages are delivered one
 * after another in the order its actions sent them, and each receiver's own
 * messages are delivered (depth first) before the sender's next one, while an
 * actor that is still delivering its own messages — XState's "processing" — gets
 * what is sent to it queued until it is done. So two actors answering a third
 * reach it in XState's order, not in whichever commit finished first.
 *
 * Each delivery consumes its message row in the receiver's commit (exactly once
 * across processes), whatever the receiver does with it: a spawn creates the
 * child, an event or a stop goes through the receiver's send path, a message its
 * state does not take is consumed and logged as dropped, as XState drops it; one
 * to an actor that has finished is consumed without a row. Messages left pending
 * by a crash or by another process are delivered by {@link Courier.deliverAll},
 * oldest first.
 *
 * Deliveries are pipelined without changing that order: what a delivery's commit
 * posts is known when the commit is submitted ({@link Courier.submitting}), so the
 * courier queues those messages and goes on to the next delivery while the commit
 * is made durable — a parent's messages to a hundred children are committed in a
 * few group commits, not one by one. A message is only looked up and delivered
 * once the commit that posted it is on disk.
 */
import type { Logger } from 'pino';
import { ConcurrencyError, LeaseLostError } from '../core/errors.ts';
import type { MessageRow, Store } from '../store/types.ts';
import type { Rank } from './ledger.ts';
import type { LiveActor } from './notices.ts';
import { PlacedTimers } from './placed-timers.ts';
import { SpawnWaits } from './spawn-waits.ts';
import { DeliveryTasks } from './delivery-tasks.ts';
import { treeOf } from './actor-ids.ts';
import { nestBatches, type NestedBatch, type PendingBatch } from './recovered-order.ts';
import {
  bySystemIdOf,
  causeOf,
  fromRow,
  heldIn,
  isRelay,
  keyOf,
  keyOfCommit,
  postedOf,
  sentBefore,
  type Held,
  type Posted,
  type PostedBatch,
} from './posted.ts';

export interface CourierHooks {
  store: Store;
  logger: Logger;
  /** Whether this runtime may deliver to the actor (holds or can take its lease). */
  owns(actorId: string): Promise<boolean>;
  /**
   * The live receiver of an event or stop; `base`: the step's place in the arm
   * order (Rank, ./ledger.ts), when the delivery nests it.
   */
  actor(
    actorId: string,
  ): Promise<LiveActor & { deliverMessage(m: MessageRow, base?: Rank): Promise<void> }>;
  /** Creates the child a spawn message asks for, consuming the message. */
  spawn(message: MessageRow, base?: Rank): Promise<void>;
}

const noop = (): void => {};

/** A delivery under way: what its receiver's commits post, and its first commit's signal. */
interface Frame {
  readonly posted: Posted[];
  submitted: (() => void) | undefined;
  /** The commit whose messages it took (cleared by that commit's post, or after). */
  taken?: string;
}

/**
 * How many pending rows of one receiver are read at a time when looking for one:
 * first a few (it is nearly always the oldest), then pages.
 */
const FIRST_PAGE = 4;
const PAGE = 64;
/**
 * How many of a commit's next messages have their rows looked up while the current
 * one is delivered: on a networked store the lookups overlap the deliveries'
 * commits instead of each costing a round trip of its own before its delivery.
 */
const LOOK_AHEAD = 4;

export class Courier {
  /** Per actor, the messages queued for it in XState's order (its mailbox). */
  private readonly mailboxes = new Map<string, Posted[]>();
  /** Actors delivering or being delivered to: what is sent to them waits in their mailbox. */
  private readonly processing = new Set<string>();
  /** Receivers of a delivery being decided (until its commit is submitted or it ends). */
  private readonly delivering = new Set<string>();
  /** Messages posted here and not sent yet (waiting behind their sender's earlier ones). */
  private readonly unsent = new Set<string>();
  /** Messages of commits submitted here and not posted yet ({@link awaitPost}). */
  private readonly committing = new Set<string>();
  /** Per such commit (`keyOfCommit`), its messages' keys. */
  private readonly committingBy = new Map<string, string[]>();
  /** Spawns posted and not sent yet, and the messages that wait for them. */
  private readonly spawns = new SpawnWaits();
  /** Messages in a mailbox or being delivered (never queued twice). */
  private readonly claimed = new Set<string>();
  /** Per receiver being delivered to, what its commits post. */
  private readonly frames = new Map<string, Frame>();
  /** Per actor, deliveries to it whose commit is submitted but not settled yet. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Commits whose messages a delivery took when they were submitted (`keyOfCommit`). */
  private readonly taken = new Set<string>();
  /** Per sender, its posted batches not yet delivered (one sender's batches in order). */
  private readonly senders = new Map<string, Promise<void>>();
  /** The deliveries under way, by tree. */
  private readonly tasks = new DeliveryTasks();
  /**
   * Per commit with messages submitted outside a delivery and not posted yet
   * (`keyOfCommit`): resolves its tracked cascade once it is posted
   * ({@link awaitPost}).
   */
  private readonly cascades = new Map<string, (run: Promise<unknown> | undefined) => void>();
  /** Timers armed after some of their step's messages, waiting for their place. */
  private readonly placed = new PlacedTimers(keyOf);
  private closed = false;

  constructor(private readonly hooks: CourierHooks) {}

  /**
   * A commit posted these messages: delivered soon, in this process. Posted while
   * the sender was itself being delivered a message, they follow that delivery
   * depth first; otherwise they start a delivery of their own.
   */
  post(batch: PostedBatch): void {
    if (this.taken.delete(keyOfCommit(batch.from, batch.fromSeq))) return;
    const posted = this.known(postedOf(batch));
    const frame = this.frames.get(batch.from);
    if (frame !== undefined) {
      frame.posted.push(...posted);
      this.posted(batch, undefined);
      return;
    }
    const previous = this.senders.get(batch.from) ?? Promise.resolve();
    const run = previous.then(() =>
      this.fromSender(batch.from, posted, batch.finished === true || batch.relayed === true),
    );
    this.senders.set(batch.from, run);
    const task = run.finally(() => {
      if (this.senders.get(batch.from) === run) this.senders.delete(batch.from);
    });
    this.tasks.track(task, treeOf(batch.from));
    this.posted(batch, task);
  }

  /**
   * A commit is being submitted. When it is the commit of a delivery under way, the
   * delivery takes the messages it posts now and the courier goes on while it is
   * made durable.
   */
  submitting(batch: PostedBatch, done: Promise<unknown>): void {
    if (batch.arms !== undefined) this.placed.place(batch, batch.arms);
    const frame = this.frames.get(batch.from);
    if (frame?.submitted === undefined) {
      if (batch.messages.length > 0) this.awaitPost(batch, done);
      return;
    }
    if (batch.messages.length > 0) {
      frame.posted.push(...this.known(postedOf(batch)));
      frame.taken = keyOfCommit(batch.from, batch.fromSeq);
      this.taken.add(frame.taken);
    }
    const go = frame.submitted;
    frame.submitted = undefined;
    go();
  }

  /**
   * Notes the messages of a commit submitted outside a delivery until it is posted
   * ({@link post}, right after the commit resolves) or fails: a pass of
   * {@link deliverAll} that reads them meanwhile leaves them to the post, which
   * puts them in their place in XState's order. Delivered by the pass, they went
   * alongside the post's delivery of the same commit, out of that order (a child's
   * greeting behind its parent's later message to itself).
   */
  private awaitPost(batch: PostedBatch, done: Promise<unknown>): void {
    const keys = batch.messages.map((m) =>
      keyOf({ ...m, from: batch.from, fromSeq: batch.fromSeq }),
    );
    for (const key of keys) this.committing.add(key);
    const commit = keyOfCommit(batch.from, batch.fromSeq);
    this.committingBy.set(commit, keys);
    // Its messages' cascade is under way from now on ({@link settledFor}).
    this.tasks.track(
      new Promise<unknown>((resolve) => this.cascades.set(commit, resolve)),
      treeOf(batch.from),
    );
    const release = () => this.posted(batch, undefined);
    // Posted at once when it resolves; a turn later at the latest, whatever happens.
    done.then(() => setTimeout(release, 0), release);
  }

  /**
   * A commit noted by {@link awaitPost} is posted (or failed, or given up); `run`:
   * the delivery of its messages, when it has one of its own.
   */
  private posted(
    batch: Pick<PostedBatch, 'from' | 'fromSeq'>,
    run: Promise<unknown> | undefined,
  ): void {
    const commit = keyOfCommit(batch.from, batch.fromSeq);
    const cascade = this.cascades.get(commit);
    if (cascade !== undefined) {
      this.cascades.delete(commit);
      cascade(run?.then(noop, noop));
    }
    const keys = this.committingBy.get(commit);
    if (keys === undefined) return;
    this.committingBy.delete(commit);
    for (const key of keys) this.committing.delete(key);
  }

  /**
   * Whether, after a commit of this actor, the courier goes on delivering to other
   * actors (a delivery is under way and this actor has nothing more queued): their
   * commits can join this one's transaction.
   */
  deliversElsewhere(actorId: string): boolean {
    if (this.frames.size === 0 && this.inFlight.size === 0) return false;
    return (this.mailboxes.get(actorId)?.length ?? 0) === 0;
  }

  /**
   * Whether a spawn of `actorId` is posted and not sent yet: XState's child of that
   * id exists from the spawning step on, so the stored actor under the id, if any,
   * is an earlier one that finished or was stopped.
   */
  spawning(actorId: string): boolean {
    return this.spawns.has(actorId);
  }

  /** Whether a delivery is under way. */
  get busy(): boolean {
    return this.tasks.busy;
  }

  /**
   * Resolves once the deliveries under way now have finished, with all they set
   * off in turn (later ones are not waited for). An outcome from outside — an
   * invoked promise's result — is delivered after them: XState runs a step's
   * deliveries synchronously, children starting and answering at once, so no
   * promise can settle before them (a child's greeting reaches its parent before
   * the result of a promise the same step invoked, however soon it resolves).
   */
  settled(): Promise<void> {
    return this.tasks.settled();
  }

  /**
   * Waits for the deliveries under way in `actorId`'s tree, and for those of the
   * commits with messages submitted there and not yet durable: XState runs a
   * cascade of messages synchronously, so a timer that falls due, or a promise
   * that settles, while one is under way takes its turn after it. With `passes`,
   * also for passes over pending messages (`deliverAll`) under way. Until none is
   * left: a delivery goes on while its commit is made durable, which is a task of
   * its own, started after the delivery.
   */
  settledFor(actorId: string, passes = true): Promise<void> {
    return this.tasks.settledFor(actorId, passes);
  }

  /** Whether a delivery is under way in `tree` ({@link settledFor} would wait). */
  busyIn(tree: string): boolean {
    return this.tasks.busyIn(tree);
  }

  /** Waits until every delivery under way has finished. */
  idle(): Promise<void> {
    return this.tasks.idle();
  }

  /**
   * Delivers every pending message of the store this runtime owns, oldest first:
   * each commit's messages as that commit's batch, depth first, its sender holding
   * what is sent to it meanwhile — as {@link post} does live — so a spawned
   * child's greeting reaches its parent before the parent's later message to
   * itself after a crash too. Resolves with how many rows it handed over.
   *
   * A delivery under way, as {@link post}'s are: an invoked promise that settles
   * meanwhile (one a recovered commit started) has its outcome delivered after it
   * ({@link settled}), as XState delivers a step's messages before any promise
   * can settle.
   */
  deliverAll(limit = 500): Promise<number> {
    const run = this.deliverPages(limit);
    this.tasks.track(
      run.catch(() => undefined),
      undefined,
    );
    return run;
  }

  private async deliverPages(limit: number): Promise<number> {
    let handed = 0;
    let afterId = 0;
    /** Sender and receiver pairs with a message this courier orders itself (see below). */
    const behind = new Set<string>();
    for (;;) {
      const page = await this.hooks.store.pendingMessages({ afterId, limit });
      if (page.length === 0) return handed;
      const owned = new Map<string, boolean>();
      const batches = new Map<string, Posted[]>();
      for (const row of page) {
        const key = keyOf(row);
        const pair = `${row.from}\u0000${row.to}`;
        // One posted here goes in its place in XState's order, when its turn comes; so
        // does its sender's next one to the same receiver, which this page may show
        // before its commit is posted here: delivered now, it would overtake it. The
        // same for one left to the worker that holds the receiver's lease (a spawn
        // after its stop would find the child running).
        if (
          this.claimed.has(key) ||
          this.unsent.has(key) ||
          this.committing.has(key) ||
          behind.has(pair)
        ) {
          behind.add(pair);
          continue;
        }
        if (row.kind !== 'spawn') {
          let mine = owned.get(row.to);
          if (mine === undefined) owned.set(row.to, (mine = await this.hooks.owns(row.to)));
          if (!mine) {
            behind.add(pair);
            continue;
          }
        }
        const commit = keyOfCommit(row.from, row.fromSeq);
        const batch = batches.get(commit);
        if (batch === undefined) batches.set(commit, [fromRow(row)]);
        else batch.push(fromRow(row));
      }
      // This page's rows are this courier's to order now: one met while another
      // message's row is looked up keeps its place (its commit's turn) instead of
      // being taken for another process's and put ahead (see {@link ahead}).
      const keys = [...batches.values()].flat().map(keyOf);
      for (const key of keys) this.unsent.add(key);
      for (const batch of batches.values()) this.spawns.note(batch);
      try {
        const pending: PendingBatch<Posted>[] = [];
        for (const [key, batch] of batches) {
          const { from, fromSeq } = batch[0] as Posted;
          handed += batch.length;
          const { marks, ...info } = await this.senderInfo(from, fromSeq);
          // Sent by system id, as the commit's row says (Posted.bySystemId).
          const posted =
            marks === undefined
              ? batch
              : batch.map((p): Posted => (marks.has(p.idx) ? { ...p, bySystemId: true } : p));
          pending.push({ key, from, posted, ...info });
        }
        for (const nested of nestBatches(pending)) await this.sendNested(nested);
      } finally {
        for (const key of keys) this.unsent.delete(key);
        // A spawn never sent (its delivery given up): what waited for it is released,
        // to be read back from the store by a later pass.
        const released = this.spawns.forget((spawn) => keys.includes(keyOf(spawn)));
        for (const q of released) this.claimed.delete(keyOf(q));
      }
      afterId = page.at(-1)?.id ?? afterId;
    }
  }

  close(): void {
    this.closed = true;
  }

  /**
   * Of a commit read back from the store: whether its sender is free while its
   * messages are delivered ({@link fromSender}) — it has finished, or the commit
   * relayed a delayed send that fell due (its row's metadata names the receiver) —
   * and the message the commit took, if any ({@link nestBatches}).
   */
  private async senderInfo(
    from: string,
    fromSeq: number,
  ): Promise<Pick<PendingBatch<Posted>, 'free' | 'cause'> & { marks?: ReadonlySet<number> }> {
    const { store } = this.hooks;
    const [found] = await store.history(from, { afterSeq: fromSeq - 1, limit: 1 });
    const row = found?.seq === fromSeq ? found : undefined;
    const cause = row === undefined ? undefined : causeOf(row.metadata);
    const marks = row === undefined ? undefined : bySystemIdOf(row.metadata);
    const more = marks === undefined ? {} : { marks };
    if ((await store.loadActor(from))?.status !== 'active') return { free: true, cause, ...more };
    return { free: row !== undefined && isRelay(row.metadata), cause, ...more };
  }

  /** A commit's messages read back, with the commits they caused nested ({@link nestBatches}). */
  private async sendNested(nested: NestedBatch<Posted>): Promise<void> {
    const run: Posted[] = [];
    const held = heldIn(nested.items.flatMap((item) => ('message' in item ? [item.message] : [])));
    // As {@link fromSender}, with what the nested commits post delivered in their place.
    const hold = !nested.free && !this.processing.has(nested.from);
    if (hold) this.processing.add(nested.from);
    try {
      for (const item of nested.items) {
        if ('message' in item) {
          run.push(item.message);
          continue;
        }
        await this.sendAll(run.splice(0), held);
        await this.sendNested(item.batch);
      }
      await this.sendAll(run.splice(0), held);
    } finally {
      if (hold) this.processing.delete(nested.from);
    }
    if (hold && (this.mailboxes.get(nested.from)?.length ?? 0) > 0) await this.flush(nested.from);
  }

  /** Notes messages this process posted: this courier's to order until they are sent. */
  private known(posted: Posted[]): Posted[] {
    for (const p of posted) this.unsent.add(keyOf(p));
    this.spawns.note(posted);
    return posted;
  }

  /**
   * A sender's messages from a commit made outside a delivery (a caller's event, a
   * timer, an invoke's outcome, a creation): the sender counts as processing until
   * they are delivered, as in XState, so answers to it wait for its later messages.
   * Not one its commit finished: that actor is gone, and what is sent to its id now
   * (a stop, a spawn of it again: a new actor, whose greeting comes first) goes at
   * once. Nor one whose commit relayed a delayed send: XState's scheduler delivers
   * it while the sender is idle, so what its receiver answers reaches the sender
   * at once (`free` covers both).
   */
  private async fromSender(from: string, posted: readonly Posted[], free: boolean): Promise<void> {
    // A sender its commit finished is gone, as in XState: nothing waits for it.
    const hold = !free && !this.processing.has(from);
    if (hold) this.processing.add(from);
    try {
      await this.sendAll(posted);
    } finally {
      if (hold) this.processing.delete(from);
    }
    // What was sent to it meanwhile: taken after its step, as XState's mailbox does.
    if (hold && (this.mailboxes.get(from)?.length ?? 0) > 0) {
      const base = posted[0]?.base;
      await this.flush(from, base === undefined ? undefined : [...base, 2 * posted.length + 1]);
    }
  }

  /**
   * Sends one commit's messages in their order, looking up the next ones' rows
   * meanwhile. `held`: the commit's events to children it spawns, sent before their
   * spawns (all of the commit's, when `posted` is a part of them).
   */
  private async sendAll(posted: readonly Posted[], held = heldIn(posted)): Promise<void> {
    for (let i = 0; i < posted.length; i++) {
      const last = Math.min(posted.length, i + 1 + LOOK_AHEAD);
      for (let j = i + 1; j < last; j++) this.lookAhead(posted[j] as Posted);
      const p = posted[i] as Posted;
      if (held !== undefined) this.relayHeld(held, p);
      if (!this.placed.empty) await this.arm(this.placed.takeBefore(keyOf(p)));
      // Where what it sets off is armed: after the timers its step armed before it,
      // before those armed after it (Rank, ./ledger.ts).
      await this.send(p, p.base === undefined ? undefined : [...p.base, 2 * p.idx + 1]);
      if (!this.placed.empty) await this.arm(this.placed.takeAfter(keyOf(p)));
    }
  }

  /**
   * Relays the held events ({@link heldIn}) due before message `p` of their commit:
   * as XState relays an event to a child that has not started, each waits in the
   * child's mailbox (SpawnWaits) behind what other actors sent it before,
   * and the child takes them all once started, before anything the first of them
   * sets off (a grandchild's greeting waits behind them).
   */
  private relayHeld(held: readonly Held[], p: Posted): void {
    for (const { message, spawn, at } of held) {
      // A delivery's messages may be of several commits: only `p`'s own are due.
      if (spawn.from !== p.from || spawn.fromSeq !== p.fromSeq || at > p.idx) continue;
      if (!this.spawns.isPending(spawn)) continue;
      const key = keyOf(message);
      if (this.claimed.has(key)) continue;
      this.claimed.add(key);
      this.unsent.delete(key);
      this.spawns.hold(message);
    }
  }

  /** A commit failed: the timers it placed are never armed. */
  unplace(batch: PostedBatch): void {
    if (batch.arms !== undefined) this.placed.unplace(batch, batch.arms);
  }

  /**
   * Arms placed timers that the courier reached, once the deliveries under way are
   * committed: the messages sent before, depth first, have all been handed over by
   * now (or wait in the mailbox of an actor that is processing, as in XState).
   */
  private async arm(arms: ReadonlyArray<() => void> | undefined): Promise<void> {
    if (arms === undefined) return;
    if (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()]);
    for (const arm of arms) arm();
  }

  /**
   * Starts looking up a posted message's row, once the commit that posted it is on
   * disk. A row found early stays valid: rows are only ever deleted, and a delivery
   * of a row consumed meanwhile by another process fails its compare-and-set.
   */
  private lookAhead(p: Posted): void {
    if (p.row !== undefined || p.lookup !== undefined || this.claimed.has(keyOf(p))) return;
    const lookup = (this.inFlight.get(p.from) ?? Promise.resolve()).then(() => this.find(p));
    // Its failure is reported by the delivery that awaits it.
    lookup.catch(() => undefined);
    p.lookup = lookup;
  }

  /**
   * Queues a message in its receiver's mailbox; delivers it now unless the receiver
   * is busy. A stop of a receiver that is processing (its own messages being
   * delivered) goes now all the same, as XState's stop of an actor clears its
   * mailbox and comes next: the messages queued for it before are consumed after
   * it, by an actor that has finished, as XState drops them; and a child spawned
   * again under its id, a new actor in XState, is not held up behind the old one.
   * Not while a delivery to the receiver is being decided: the stop waits for it.
   */
  private async send(p: Posted, at?: Rank): Promise<void> {
    this.unsent.delete(keyOf(p));
    if (p.kind !== 'spawn' && this.spawns.waits(p)) {
      const key = keyOf(p);
      if (this.claimed.has(key)) return;
      this.claimed.add(key);
      this.spawns.hold(p);
      return;
    }
    const waited = this.spawns.start(p);
    if (!this.queue(p)) return;
    // The child starts, then takes what waited for it.
    if (waited !== undefined) (this.mailboxes.get(p.to) as Posted[]).push(...waited);
    if (this.processing.has(p.to)) {
      if (p.kind !== 'stop' || this.delivering.has(p.to)) return;
      const box = this.mailboxes.get(p.to) as Posted[];
      box.unshift(box.pop() as Posted);
      this.processing.delete(p.to);
    }
    await this.flush(p.to, at);
  }

  private queue(p: Posted): boolean {
    const key = keyOf(p);
    if (this.claimed.has(key)) return false;
    this.claimed.add(key);
    const box = this.mailboxes.get(p.to);
    if (box === undefined) this.mailboxes.set(p.to, [p]);
    else box.push(p);
    return true;
  }

  /**
   * Delivers the receiver's mailbox, each message followed by what its commit
   * sent; `at`: where in the arm order, the deliveries' steps taking their places
   * under it one after another (Rank, ./ledger.ts).
   */
  private async flush(to: string, at?: Rank): Promise<number> {
    let delivered = 0;
    let k = 0;
    this.processing.add(to);
    try {
      for (;;) {
        const box = this.mailboxes.get(to);
        const next = box?.shift();
        if (next === undefined) break;
        const posted = await this.deliver(next, at === undefined ? undefined : [...at, k++]);
        if (posted === undefined) continue;
        delivered++;
        await this.sendAll(posted);
      }
    } finally {
      this.processing.delete(to);
      const box = this.mailboxes.get(to);
      if (box !== undefined && box.length === 0) this.mailboxes.delete(to);
    }
    return delivered;
  }

  /**
   * Delivers one message; returns what the receiver's commit posted (as soon as the
   * commit is submitted), or undefined when the message was not delivered here
   * (delivered elsewhere; its receiver is another worker's; or the delivery failed,
   * logged: it stays pending).
   */
  private async deliver(p: Posted, base?: Rank): Promise<Posted[] | undefined> {
    const key = keyOf(p);
    // Claimed until its delivery settles: a message whose commit is in flight is still
    // pending in the store, and must not be queued again (by deliverAll) meanwhile.
    let started = false;
    let requeued = false;
    this.delivering.add(p.to);
    try {
      if (this.closed) return undefined;
      // The commit that posted it must be on disk before its row is looked for, and
      // the receiver's own last one before it is delivered to (a spawn reads the row).
      await this.inFlight.get(p.from);
      await this.inFlight.get(p.to);
      let row = p.row ?? (await (p.lookup ?? this.find(p)));
      if (row === undefined) return undefined;
      if (p.row === undefined && row.kind !== 'spawn' && !(await this.hooks.owns(row.to))) {
        return undefined;
      }
      if (p.older !== undefined) {
        // Met older messages to the receiver: looked up again now that the receiver's
        // own deliveries have settled (a lookup made ahead may have seen them pending).
        p.older = undefined;
        row = await this.find(p);
        if (row === undefined) return undefined;
        const older = p.older as MessageRow[] | undefined;
        p.older = undefined;
        const order = older === undefined ? 'now' : await this.putBehind(p, row, older);
        if (order === 'wait') return undefined;
        if (order === 'behind') {
          requeued = true;
          return undefined;
        }
      }
      let submitted: () => void = () => {};
      const onSubmit = new Promise<'submitted'>((resolve) => {
        submitted = () => resolve('submitted');
      });
      const frame: Frame = { posted: [], submitted };
      this.frames.set(p.to, frame);
      started = true;
      const run = this.run(row, base).finally(() => {
        if (this.frames.get(p.to) === frame) this.frames.delete(p.to);
        // A commit that failed posts nothing: what it would have posted is no news.
        if (frame.taken !== undefined) this.taken.delete(frame.taken);
        this.claimed.delete(key);
      });
      const first = await Promise.race([run, onSubmit]);
      if (first === 'submitted') {
        this.frames.delete(p.to);
        this.pending(p.to, run);
        return frame.posted;
      }
      return first ? frame.posted : undefined;
    } catch (error) {
      this.failed(p.to, error);
      return undefined;
    } finally {
      this.delivering.delete(p.to);
      if (!started && !requeued) this.claimed.delete(key);
    }
  }

  /**
   * Messages to one receiver are delivered in the order they were posted, across
   * processes: when older pending messages to `p`'s receiver must go first
   * ({@link ahead}: another process posted them and has not delivered them, or a
   * killed worker's last statement landed late), they go into the receiver's
   * mailbox ahead of `p`, and `p` after them: `behind`. A parent moved by another
   * process and then moved on here would otherwise have its child take this
   * process's spawn before that process's stop, and the spawn, finding the child
   * running, would be refused. `now` when there are none; `wait` when this runtime
   * may not deliver them (another's lease): `p` stays pending too.
   */
  private async putBehind(
    p: Posted,
    row: MessageRow,
    found: readonly MessageRow[],
  ): Promise<'now' | 'behind' | 'wait'> {
    const older = found.filter((m) => this.ahead(p, m));
    if (older.length === 0) return 'now';
    const unclaimed = older.filter((m) => !this.claimed.has(keyOf(m)));
    if (unclaimed.some((m) => m.kind !== 'spawn') && !(await this.hooks.owns(p.to))) {
      return 'wait';
    }
    // Those queued here already (behind `p`) move ahead of it, in the order posted.
    const keys = new Set(older.map(keyOf));
    const box = this.mailboxes.get(p.to) ?? [];
    const rest = box.filter((q) => !keys.has(keyOf(q)));
    for (const key of keys) this.claimed.add(key);
    box.length = 0;
    box.push(...older.map(fromRow), fromRow(row), ...rest);
    this.mailboxes.set(p.to, box);
    return 'behind';
  }

  /**
   * Whether an older pending row to `p`'s receiver, met while looking up `p`, must
   * be delivered first: one this courier has not claimed, nor holds to send (posted
   * or being committed here, or read by a pass of {@link deliverAll}) unless `p`'s sender sent it
   * before `p`; or one it queued in the receiver's mailbox behind `p` that an
   * earlier transition of `p`'s own sender
   * posted — read by {@link deliverAll} from the store (another process's, landed
   * late) after `p` was taken out of the mailbox. One sender's messages to one
   * receiver arrive in the order sent, in XState as here. Older rows from other
   * senders that this courier queued keep their places: the mailbox holds XState's
   * order, which is not the rows' (a child's greeting goes before its parent's
   * earlier message to itself).
   */
  private ahead(p: Posted, m: MessageRow): boolean {
    const key = keyOf(m);
    // Posted here (or being committed here) or read by a pass, and not sent yet: it
    // goes in its place in XState's order, which puts one sender's messages to one
    // receiver in the order sent.
    if (!this.claimed.has(key)) {
      return !(this.unsent.has(key) || this.committing.has(key)) || sentBefore(m, p);
    }
    // A stop overtakes what its receiver has queued (see {@link send}).
    if (p.kind === 'stop' || !sentBefore(m, p)) return false;
    return this.mailboxes.get(p.to)?.some((q) => keyOf(q) === key) ?? false;
  }

  /** Runs one delivery: true when it was made here or elsewhere, false when it stays pending. */
  private async run(row: MessageRow, base: Rank | undefined): Promise<boolean> {
    try {
      if (row.kind === 'spawn') await this.hooks.spawn(row, base);
      else await (await this.hooks.actor(row.to)).deliverMessage(row, base);
      return true;
    } catch (error) {
      if (error instanceof LeaseLostError) return false;
      if (error instanceof ConcurrencyError) return true; // delivered elsewhere
      throw error;
    }
  }

  /** A delivery whose commit is submitted: waited for before what it posted is delivered. */
  private pending(actorId: string, run: Promise<boolean>): void {
    const settled = run.then(
      () => undefined,
      (error: unknown) => this.failed(actorId, error),
    );
    const before = this.inFlight.get(actorId);
    const all = before === undefined ? settled : Promise.all([before, settled]);
    this.inFlight.set(actorId, all);
    this.tasks.track(
      all.finally(() => {
        if (this.inFlight.get(actorId) === all) this.inFlight.delete(actorId);
      }),
      treeOf(actorId),
    );
  }

  private failed(actorId: string, error: unknown): void {
    this.hooks.logger.error({ actorId, err: error }, 'message delivery failed; it stays pending');
  }

  /**
   * The pending row of a posted message, if it is still pending (oldest first: the
   * rows before it, nearly always none, are noted in {@link Posted.older}).
   */
  private async find(p: Posted): Promise<MessageRow | undefined> {
    let afterId = 0;
    const older: MessageRow[] = [];
    for (let limit = FIRST_PAGE; ; limit = PAGE) {
      const page = await this.hooks.store.pendingMessages({ to: p.to, afterId, limit });
      const at = page.findIndex(
        (m) => m.from === p.from && m.fromSeq === p.fromSeq && m.idx === p.idx,
      );
      // Older rows this courier is delivering or has queued are its own to order,
      // save one sender's queued behind its later message (see {@link ahead}).
      const end = at >= 0 ? at : page.length;
      for (let i = 0; i < end; i++) {
        const m = page[i] as MessageRow;
        if (this.ahead(p, m)) older.push(m);
      }
      if (at >= 0) {
        if (older.length > 0) p.older = older;
        return page[at];
      }
      if (page.length < limit) return undefined;
      afterId = page.at(-1)?.id ?? afterId;
    }
  }
}
