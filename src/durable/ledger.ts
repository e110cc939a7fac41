/**
 * What a durable actor owes besides its XState snapshot: the delayed events it has
 * scheduled and the invoked promises whose result it awaits. XState keeps both in
 * memory only (its scheduler and its running child actors); a durable actor keeps
 * them on its row, inside the persisted snapshot, so that one commit moves state
 * and obligations together, a reload knows exactly what is pending, and `verify`
 * replays them from the log like the state itself.
 *
 * Stored under the key `agentcharts` of the snapshot JSON (`{}` when nothing is
 * pending; a snapshot without the key was written before the ledger existed);
 * XState's `restoreSnapshot` ignores it. A timer whose key is also its id, its
 * send id and its event's only field, the type (every `after` delay), is written
 * once: `{ "after": key, "due": … }`, where the long form would repeat the string
 * four times (half the snapshot of a task paused for approval).
 */
import type { EventObject } from 'xstate';
import { PENDING_KEY } from '../store/pending-timers.ts';

/** A delayed event (`after`, `raise` or `sendTo` with a delay) not yet delivered. */
/**
 * Where a timer was armed in the order XState arms them, compared element by
 * element ({@link compareRanks}). A step's place is its base: a step a caller,
 * a timer or an outcome sets off takes `[n]` from its process's counter (above
 * every rank the process has loaded); a step that takes message `j` of a commit
 * whose base is `B`, delivered depth first as XState delivers it, takes
 * `B ++ [2j + 1, k]` (`k`: the deliveries made there, in order). The step's
 * `i`-th timer armed after `p` of its messages gets `base ++ [2p, i]`: after
 * what the receivers of those messages armed, before what the next one's arms
 * (Effects.timerPlaces).
 */
export type Rank = readonly number[];

/** Orders two ranks: negative when `a` was armed first. */
export function compareRanks(a: Rank, b: Rank): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Whether a stored value is a rank (non-negative safe integers). */
export function isRank(value: unknown): value is Rank {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)
  );
}

export interface PendingTimer {
  /** Unique among the actor's pending timers: the store's timer id. */
  key: string;
  /** The id it was scheduled with: an explicit `id`, or the `after` event type. */
  id?: string | undefined;
  /**
   * The id `cancel()` finds it by, while it holds it (its `id`). A later delayed
   * send with the same id takes the id over, as in XState's scheduler: the earlier
   * one still fires but can no longer be cancelled; and when it fires, the id is
   * released, so the later one can no longer be cancelled either.
   */
  sendId?: string | undefined;
  event: EventObject;
  /** Absolute due time, ms since the epoch. */
  due: number;
  /**
   * When it was armed (its step's time, ms since the epoch). XState fires timers due
   * at one instant in the order it armed them; this process arms their wake-ups in
   * that order, and one that loads them again (after a restart) orders them by it
   * (./timers.ts). Absent on timers an earlier build wrote.
   */
  at?: number | undefined;
  /**
   * Its place in the order XState armed timers, every actor's of the tree
   * together (absent on timers an earlier build wrote): timers of two actors due
   * at one instant and armed at one instant fire in that order, and a process
   * that loads them again (after a restart) has only this to tell it
   * (./timers.ts). See {@link Rank}.
   */
  rank?: Rank | undefined;
  /** A delayed `sendTo`: the receiver (`'#parent'` or a child id); absent for the actor itself. */
  to?: string | undefined;
  /**
   * A delayed `sendTo` to an actor of the tree found by its system id
   * ({@link TO_ACTOR}): that actor's {@link Ledger.life} when the send was made
   * (absent: its first). XState's scheduler holds the actor itself, so when that
   * actor is stopped and spawned again under its id before the send falls due,
   * the send reaches the stopped one, which ignores it; the new one never sees it.
   */
  life?: number | undefined;
  /**
   * A delayed `sendTo` its sender made in an earlier life (Ledger.life; absent: the
   * sender's current one), carried over when the sender was spawned again under its
   * id. XState's scheduler keeps it under the stopped actor's session: it still
   * falls due, the new actor's cancels never reach it, and its firing releases none
   * of the new actor's ids.
   */
  sentIn?: number | undefined;
}

/** An invoked promise whose outcome the actor still awaits. */
export interface PendingInvoke {
  /** The invoke (child) id. */
  id: string;
  /** Its step key: actor, invoke id and the version that entered the state. */
  key: string;
  /**
   * Its logic (an `actors` key, or XState's name of an inline invoke) and input:
   * what recovery runs again (XState's `children` loses an invoke whose id a
   * sibling took over).
   */
  src?: string | undefined;
  input?: unknown;
}

export interface Ledger {
  readonly timers: readonly PendingTimer[];
  readonly invokes: readonly PendingInvoke[];
  /**
   * Child ids whose place in XState's `children` is held by an actor that has
   * finished (a settled promise, or a child machine whose completion the actor
   * took; either stays there until stopped): `system.get` no longer finds it by
   * its system id, and a stop of a promise's id stops nothing that runs, nor any
   * earlier invoke of the id.
   */
  readonly settled?: readonly string[] | undefined;
  /**
   * A child machine whose parent asked for its snapshots (an invoke's `onSnapshot`,
   * a spawn's `syncSnapshot: true`): after every event it takes while it is active,
   * it sends the parent `xstate.snapshot.<id>` with its snapshot, as XState's child
   * does. Set on its creation, for its whole life.
   */
  readonly sync?: true | undefined;
  /**
   * An actor that failed (status `error`) in a step that had already stopped or
   * spawned children with system ids: XState runs each action as it resolves, so
   * before the throw it had taken the stopped child's system id off the system
   * (`released`; the child itself runs on, its stop never ran) and given a
   * spawned one's to an actor that never starts (`lost`: sends to it are lost).
   * Read by the tree's lookups (./system-ids.ts).
   */
  readonly orphaned?: Readonly<Record<string, 'released' | 'lost'>> | undefined;
  /**
   * A root's own system id (`createDurableActor(…, { systemId })`, as
   * `createActor`'s option): its tree finds it by it (./system-ids.ts). Set on
   * its creation, for its whole life.
   */
  readonly systemId?: string | undefined;
  /**
   * Which life of its id the actor is in: a child machine that finished or was
   * stopped and is spawned again under its id starts over as its next life (absent:
   * its first). XState makes a new actor then; a durable child id is one row, and
   * this tells what a delayed send found by system id held ({@link PendingTimer.life}).
   * Set when it starts over, for that whole life.
   */
  readonly life?: number | undefined;
}

/** The receiver of a delayed `sendTo(parent)`. */
export const TO_PARENT = '#parent';

/**
 * The receiver of a delayed `sendTo` whose child was stopped since: XState still
 * fires it (to the stopped child, which ignores it), and its firing releases its id
 * as any timer's does (see {@link withoutFired}).
 */
export const TO_STOPPED = '#stopped';

/**
 * The prefix of a delayed `sendTo`'s receiver found by system id elsewhere in the
 * actor's tree: `#actor:` and that durable actor's id.
 */
export const TO_ACTOR = '#actor:';

/** Nothing pending. */
export const EMPTY_LEDGER: Ledger = Object.freeze({
  timers: Object.freeze([]),
  invokes: Object.freeze([]),
});

/** The snapshot JSON key that holds the ledger (the stores read the timers there). */
export const LEDGER_KEY = PENDING_KEY;

export function isEmptyLedger(ledger: Ledger): boolean {
  return ledger.timers.length === 0 && ledger.invokes.length === 0;
}

/** The ledger a persisted snapshot carries; undefined when it has none (written before ledgers). */
export function ledgerOf(persisted: unknown): Ledger | undefined {
  const raw = (persisted as Record<string, unknown> | null)?.[LEDGER_KEY] as
    | {
        timers?: unknown;
        invokes?: unknown;
        settled?: unknown;
        sync?: unknown;
        orphaned?: unknown;
        systemId?: unknown;
        life?: unknown;
      }
    | undefined;
  if (raw === undefined) return undefined;
  if (raw === null || typeof raw !== 'object') return EMPTY_LEDGER;
  // Nothing pending (`{}`, most rows): no arrays to build.
  if (
    raw.timers === undefined &&
    raw.invokes === undefined &&
    raw.settled === undefined &&
    raw.sync === undefined &&
    raw.orphaned === undefined &&
    raw.systemId === undefined &&
    raw.life === undefined
  ) {
    return EMPTY_LEDGER;
  }
  const timers = Array.isArray(raw.timers) ? (raw.timers as unknown[]).map(timerOf) : [];
  const invokes = Array.isArray(raw.invokes) ? (raw.invokes as PendingInvoke[]) : [];
  const settled = Array.isArray(raw.settled) ? (raw.settled as string[]) : [];
  const orphaned =
    raw.orphaned !== null && typeof raw.orphaned === 'object'
      ? (raw.orphaned as Ledger['orphaned'])
      : undefined;
  const systemId = typeof raw.systemId === 'string' ? raw.systemId : undefined;
  const life = typeof raw.life === 'number' && raw.life > 1 ? raw.life : undefined;
  return makeLedger(timers, invokes, settled, raw.sync === true, orphaned, systemId, life);
}

/**
 * A ledger of these parts, without the fields that hold nothing (EMPTY_LEDGER when
 * nothing is pending and nothing is owed).
 */
export function makeLedger(
  timers: readonly PendingTimer[],
  invokes: readonly PendingInvoke[],
  settled: readonly string[] | undefined,
  sync: boolean | undefined,
  orphaned?: Ledger['orphaned'],
  systemId?: string,
  life?: number,
): Ledger {
  const hasSettled = settled !== undefined && settled.length > 0;
  if (
    timers.length === 0 &&
    invokes.length === 0 &&
    !hasSettled &&
    sync !== true &&
    orphaned === undefined &&
    systemId === undefined &&
    life === undefined
  ) {
    return EMPTY_LEDGER;
  }
  const ledger: {
    timers: typeof timers;
    invokes: typeof invokes;
    settled?: typeof settled;
    sync?: true;
    orphaned?: typeof orphaned;
    systemId?: string;
    life?: number;
  } = { timers, invokes };
  if (hasSettled) ledger.settled = settled;
  if (sync === true) ledger.sync = true;
  if (orphaned !== undefined) ledger.orphaned = orphaned;
  if (systemId !== undefined) ledger.systemId = systemId;
  if (life !== undefined) ledger.life = life;
  return ledger;
}

/** The ledger a synced child starts with (see {@link Ledger.sync}). */
export const SYNCED_LEDGER: Ledger = Object.freeze({
  timers: Object.freeze([]),
  invokes: Object.freeze([]),
  sync: true as const,
});

/** A stored timer, in its short form (`after`) or its long one. */
function timerOf(stored: unknown): PendingTimer {
  const { after, due, at, rank } = stored as {
    after?: unknown;
    due?: unknown;
    at?: unknown;
    rank?: unknown;
  };
  if (typeof after !== 'string') return stored as PendingTimer;
  const timer: PendingTimer = {
    key: after,
    id: after,
    sendId: after,
    event: { type: after },
    due: due as number,
  };
  if (typeof at === 'number') timer.at = at;
  if (isRank(rank)) timer.rank = rank;
  return timer;
}

/** Whether the timer can be written in its short form (see {@link ledgerOf}). */
function isShort(timer: PendingTimer): boolean {
  const { key, event } = timer;
  if (
    timer.to !== undefined ||
    timer.life !== undefined ||
    timer.id !== key ||
    timer.sendId !== key ||
    event.type !== key
  ) {
    return false;
  }
  for (const field in event) if (field !== 'type') return false;
  return true;
}

/**
 * The ledger after the outcome of `invoke` is taken: it is no longer awaited, and
 * when it was the last of its id to start, its id's place in `children` is held
 * by a settled invoke.
 */
export function withoutSettled(ledger: Ledger, invoke: PendingInvoke): Ledger {
  const invokes = ledger.invokes.filter((i) => i !== invoke);
  const holder = ledger.invokes.findLast((i) => i.id === invoke.id) === invoke;
  const settled = ledger.settled ?? [];
  return {
    ...ledger,
    invokes,
    settled: holder && !settled.includes(invoke.id) ? [...settled, invoke.id] : settled,
  };
}

/** The JSON value stored for a ledger (`{}` when nothing is pending). */
export function ledgerJson(ledger: Ledger): unknown {
  const out: {
    timers?: unknown;
    invokes?: unknown;
    settled?: unknown;
    sync?: true;
    orphaned?: unknown;
    systemId?: string;
    life?: number;
  } = {};
  if (ledger.timers.length > 0) {
    out.timers = ledger.timers.map((t) => {
      if (isShort(t)) {
        const short: Record<string, unknown> = { after: t.key, due: t.due };
        if (t.at !== undefined) short['at'] = t.at;
        if (t.rank !== undefined) short['rank'] = t.rank;
        return short;
      }
      const entry: Record<string, unknown> = { key: t.key };
      if (t.id !== undefined) entry['id'] = t.id;
      if (t.sendId !== undefined) entry['sendId'] = t.sendId;
      entry['event'] = t.event;
      entry['due'] = t.due;
      if (t.at !== undefined) entry['at'] = t.at;
      if (t.rank !== undefined) entry['rank'] = t.rank;
      if (t.to !== undefined) entry['to'] = t.to;
      if (t.life !== undefined) entry['life'] = t.life;
      if (t.sentIn !== undefined) entry['sentIn'] = t.sentIn;
      return entry;
    });
  }
  if (ledger.invokes.length > 0) {
    out.invokes = ledger.invokes.map((i) => {
      const entry: Record<string, unknown> = { id: i.id, key: i.key };
      if (i.src !== undefined) entry['src'] = i.src;
      if (i.input !== undefined) entry['input'] = i.input;
      return entry;
    });
  }
  if (ledger.settled !== undefined && ledger.settled.length > 0) out.settled = ledger.settled;
  if (ledger.sync === true) out.sync = true;
  if (ledger.orphaned !== undefined) out.orphaned = ledger.orphaned;
  if (ledger.systemId !== undefined) out.systemId = ledger.systemId;
  if (ledger.life !== undefined) out.life = ledger.life;
  return out;
}

/** The earliest due time among the pending timers (the actor row's next due), if any. */
export function nextDue(ledger: Ledger): number | undefined {
  let next: number | undefined;
  for (const timer of ledger.timers) if (next === undefined || timer.due < next) next = timer.due;
  return next;
}

/**
 * The ledger after `timer` fired: it is gone, and the id it was scheduled with is
 * released (XState's scheduler forgets the id when any timer scheduled with it
 * fires, even one whose id a later timer had taken over), in the life it was sent
 * in only (PendingTimer.sentIn).
 */
export function withoutFired(ledger: Ledger, timer: PendingTimer): Ledger {
  const timers: PendingTimer[] = [];
  for (const t of ledger.timers) {
    if (t === timer) continue;
    const releases = timer.id !== undefined && t.sendId === timer.id && t.sentIn === timer.sentIn;
    timers.push(releases ? { ...t, sendId: undefined } : t);
  }
  return { ...ledger, timers };
}

/** The pending timer with store id `key`. */
export function pendingTimer(ledger: Ledger, key: string): PendingTimer | undefined {
  return ledger.timers.find((t) => t.key === key);
}

/** The pending invoke with step key `key`. */
export function pendingInvoke(ledger: Ledger, key: string): PendingInvoke | undefined {
  return ledger.invokes.find((i) => i.key === key);
}
