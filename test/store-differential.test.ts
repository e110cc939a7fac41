/**
 * The Store contract, differentially: random sequences of `commit` batches are
 * applied to the memory store (the oracle: the reference semantics, see
 * src/store/memory.ts), to SQLite (a file) and to PostgreSQL (a throwaway server,
 * a fresh schema per case), and after every batch the per-write results and
 * everything observable must agree.
 *
 * A case is a list of batches of abstract writes over a small pool of actor ids.
 * A writer model turns them into concrete ActorWrites: it knows what it wrote
 * successfully (the memory store's results) and, within a batch, builds a write
 * on top of its earlier one for the same actor, whether or not that one will be
 * refused. The mix: creations (some of existing actors), updates on the writer's
 * head or on the committed one (a competing writer), stale versions, forged
 * `prevHash`es, messages sent and delivered (a pending one, one addressed to
 * another actor, one already delivered, one delivered earlier in the batch), steps
 * begun, parents, users, timers, fenced writes and malformed writes; between
 * batches, leases taken, messages dropped and steps started.
 *
 * Results are compared as the error's class, `kind` (StoreError), the versions
 * (ConcurrencyError) and owner and holder (LeaseLostError). Message ids are the
 * store's own, so a message is named by what the contract makes unique (its
 * sender, the sender's seq, its index), the id a write consumes or drops is looked
 * up per store under that name, and pending messages are compared without ids; what
 * the contract says of ids (order, never reused) is checked per store.
 *
 * One fixed seed and run count, so a CI run is the run that passed here;
 * `AGENTCHARTS_STORE_DIFF_SEED=<n>` and `AGENTCHARTS_STORE_DIFF_RUNS=<n>` explore,
 * `AGENTCHARTS_STORE_DIFF_STATS=1` prints the mix of outcomes.
 */
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { ConcurrencyError, LeaseLostError, StoreError } from '../src/core/errors.ts';
import { openStore } from '../src/store/open.ts';
import type {
  ActorStatus,
  ActorWrite,
  MessageKind,
  MessageRow,
  OutgoingMessage,
  Store,
} from '../src/store/types.ts';
import { postgresAvailable, usePostgres } from './support/postgres.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const SEED = Number(process.env['AGENTCHARTS_STORE_DIFF_SEED'] ?? 20_261_208);
const RUNS = Number(process.env['AGENTCHARTS_STORE_DIFF_RUNS'] ?? 60);
/** A property runs all its cases in one test; never a timed assertion. */
const TIMEOUT = 300_000;

// ---------------------------------------------------------------- the cases

/** Actor ids: `Z` sorts before `a` by bytes (the stores' id order) but not in ICU. */
const IDS = ['a', 'b', 'Z', 'kid1'] as const;
type Id = (typeof IDS)[number];
const STATES = ['idle', 'running', 'waiting'] as const;
const STATUSES: readonly ActorStatus[] = ['active', 'done', 'error', 'stopped'];
const STEP_NAMES = ['charge', 'mail'] as const;
const OWNERS = ['w1', 'w2'] as const;
const KINDS: readonly MessageKind[] = ['event', 'spawn', 'stop'];

/** What a write carries beyond its place in the actor's chain. */
interface Shape {
  state: number;
  status: number;
  chartVersion: number;
  /** Due times of the timers pending after it, relative to its time. */
  timers: readonly number[];
  out: ReadonlyArray<{ to: Id; kind: MessageKind }>;
  steps: readonly string[];
  /** Updates: tell the store the previous state, status and chart version. */
  previous: boolean;
  /** Updates: claim another creation time (the stores keep the first). */
  otherCreatedAt: boolean;
  /** Another machine id than the actor's own (the stores store the new one). */
  otherMachine: boolean;
  userId: 'u1' | 'u2' | undefined;
  parent: Id | undefined;
  /** The transition row records a chart version and a snapshot hash. */
  recorded: boolean;
}

/** Which message a write delivers. */
type Consume =
  { from: 'mine' | 'other' | 'gone'; k: number } | { from: 'again' } | { from: 'bogus' };

/** Malformed writes, each refused alone as `invalid_write`. */
const DEFECTS = [
  'updatedAt',
  'createdAt',
  'at',
  'chartVersion',
  'nextDueAt',
  'actorId',
  'transitionActorId',
  'version',
  'seq',
  'status',
  'userId',
  'negative',
] as const;
type Defect = (typeof DEFECTS)[number];

type Op =
  | {
      op: 'create';
      id: Id;
      /** Create the next actor (in pool order from `id`) the writer knows nothing of. */
      fresh: boolean;
      shape: Shape;
      consume: Consume | undefined;
    }
  | {
      op: 'update';
      id: Id;
      /** On the writer's own head (its earlier write of the batch), or on the committed one. */
      base: 'batch' | 'committed';
      shape: Shape;
      consume: Consume | undefined;
      fence: { owner: string; nowShift: number } | undefined;
    }
  | { op: 'stale'; id: Id; delta: number; shape: Shape }
  | { op: 'forge'; id: Id; shape: Shape }
  | { op: 'invalid'; id: Id; create: boolean; defect: Defect; shape: Shape };

interface Batch {
  /** Leases taken before the batch (`acquireLeases` with `actorIds`). */
  lease: { id: Id; owner: string; span: number } | undefined;
  /** A message dropped before the batch (`dropMessage`): the k-th ever sent, maybe gone. */
  drop: number | undefined;
  /** A step begun earlier whose first run is claimed before the batch (`startStep`): the k-th. */
  start: number | undefined;
  writes: Op[];
}

const idArb = fc.constantFrom(...IDS);
/** `arbitrary` one time in `1 + odds`, otherwise undefined (shrinking to undefined). */
const rarely = <T>(arbitrary: fc.Arbitrary<T>, odds: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: odds, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
const shapeArb: fc.Arbitrary<Shape> = fc.record({
  state: fc.nat(STATES.length - 1),
  status: fc.oneof(
    { weight: 5, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.nat(STATUSES.length - 1) },
  ),
  chartVersion: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, fc.constant(2)),
  timers: fc.oneof(
    { weight: 2, arbitrary: fc.constant([]) },
    fc.array(fc.integer({ min: -50, max: 500 }), { minLength: 1, maxLength: 2 }),
  ),
  out: fc.oneof(
    { weight: 2, arbitrary: fc.constant([]) },
    fc.array(fc.record({ to: idArb, kind: fc.constantFrom(...KINDS) }), {
      minLength: 1,
      maxLength: 3,
    }),
  ),
  steps: fc.oneof(
    { weight: 3, arbitrary: fc.constant([]) },
    fc.array(fc.constantFrom(...STEP_NAMES), { minLength: 1, maxLength: 2 }),
  ),
  previous: fc.boolean(),
  otherCreatedAt: fc.boolean(),
  otherMachine: fc.boolean(),
  userId: rarely(fc.constantFrom('u1' as const, 'u2' as const), 1),
  parent: rarely(idArb, 4),
  recorded: fc.boolean(),
});

const consumeArb: fc.Arbitrary<Consume | undefined> = fc.oneof(
  { weight: 16, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fc.record({ from: fc.constant('mine' as const), k: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ from: fc.constant('other' as const), k: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ from: fc.constant('gone' as const), k: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.constant({ from: 'again' as const }) },
  { weight: 1, arbitrary: fc.constant({ from: 'bogus' as const }) },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      id: idArb,
      base: fc.oneof(
        { weight: 6, arbitrary: fc.constant('batch' as const) },
        fc.constant('committed' as const),
      ),
      shape: shapeArb,
      consume: consumeArb,
      fence: rarely(
        fc.record({
          owner: fc.constantFrom(...OWNERS),
          nowShift: fc.integer({ min: -5, max: 40 }),
        }),
        12,
      ),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      id: idArb,
      fresh: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
      shape: shapeArb,
      consume: consumeArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('stale' as const),
      id: idArb,
      delta: fc.constantFrom(-1, 1, 2),
      shape: shapeArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('forge' as const), id: idArb, shape: shapeArb }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('invalid' as const),
      id: idArb,
      create: fc.boolean(),
      defect: fc.constantFrom(...DEFECTS),
      shape: shapeArb,
    }),
  },
);

const batchArb: fc.Arbitrary<Batch> = fc.record({
  lease: rarely(
    fc.record({
      id: idArb,
      owner: fc.constantFrom(...OWNERS),
      span: fc.integer({ min: -10, max: 200 }),
    }),
    4,
  ),
  drop: rarely(fc.nat(7), 6),
  start: rarely(fc.nat(7), 3),
  writes: fc.array(opArb, { minLength: 1, maxLength: 4 }),
});

const caseArb = fc.array(batchArb, { minLength: 1, maxLength: 8 });

// ---------------------------------------------------------------- the writer

/** The head of an actor's chain as the writer believes it. */
interface Head {
  version: number;
  hash: string;
  state: string;
  status: ActorStatus;
  chartVersion: number;
}

/** A message's name in every store: its sender, the sender's seq and its index. */
const messageKey = (m: { from: string; fromSeq: number; idx: number }) =>
  `${m.from}/${m.fromSeq}/${m.idx}`;

/** A write as the writer built it: the consumed message by name, resolved per store. */
interface Built {
  write: ActorWrite;
  /** The head it moves the actor to, when it is written. */
  head: Head;
  /** The name of the message it consumes (`undefined`: none; `bogus`: an id no store gave). */
  consume: string | undefined;
  op: Op;
  /** The actor it writes. */
  id: Id;
}

const BOGUS = 'bogus';
const BOGUS_ID = 987_654_321;

/** A snapshot with its pending timers where the runtime keeps them (store-read). */
function snapshotOf(state: string, n: number, timers: readonly number[]): string {
  return JSON.stringify({
    value: state,
    context: { n },
    agentcharts:
      timers.length === 0
        ? {}
        : {
            timers: timers.map((due, i) => ({
              key: `t${i}`,
              sendId: `t${i}`,
              event: { type: `xstate.after.t${i}` },
              due,
            })),
          },
  });
}

/** What the writer knows while it builds one batch. */
interface Writer {
  /** Heads of the actors as committed (the memory store's results so far). */
  committed: Map<Id, Head>;
  /** Heads as this batch's writes so far would leave them. */
  batch: Map<Id, Head>;
  /** Writes built so far (hashes and bodies are unique per write). */
  serial: number;
  /** Pending messages by name, in the memory store's order, before this batch. */
  pending: ReadonlyArray<{ key: string; to: string; from: string }>;
  /** Every message ever sent, by name. */
  sent: ReadonlySet<string>;
  /** The message the batch's last consuming write named. */
  lastConsumed: string | undefined;
  /** The keys of the steps begun so far. */
  steps: string[];
}

function resolveConsume(
  writer: Writer,
  id: Id,
  consume: Consume | undefined,
): { key: string | undefined; from: string | undefined } {
  if (consume === undefined) return { key: undefined, from: undefined };
  const pick = <T>(list: readonly T[], k: number) => list[k % list.length];
  switch (consume.from) {
    case 'mine': {
      const m = pick(
        writer.pending.filter((p) => p.to === id),
        consume.k,
      );
      return { key: m?.key, from: m?.from };
    }
    case 'other': {
      const m = pick(
        writer.pending.filter((p) => p.to !== id),
        consume.k,
      );
      return { key: m?.key ?? BOGUS, from: undefined };
    }
    case 'gone': {
      const pendingKeys = new Set(writer.pending.map((p) => p.key));
      const gone = [...writer.sent].filter((key) => !pendingKeys.has(key));
      return { key: pick(gone, consume.k) ?? BOGUS, from: undefined };
    }
    case 'again':
      return { key: writer.lastConsumed ?? BOGUS, from: undefined };
    case 'bogus':
      return { key: BOGUS, from: undefined };
  }
}

/** Builds the concrete write of `op`, the `index`-th of a batch at `clock`. */
function build(writer: Writer, op: Op, clock: number, index: number): Built {
  const n = ++writer.serial;
  const at = clock + index;
  const { shape } = op;
  // An update goes to the next actor (in pool order from its id) the writer knows
  // of, so that most find their actor; with none known, to its own id (not_found).
  // A fresh creation goes to the next one it knows nothing of.
  const known = (id: Id) => writer.batch.has(id) || writer.committed.has(id);
  const from = IDS.indexOf(op.id);
  const next = (wanted: (id: Id) => boolean) =>
    IDS.map((_, i) => IDS[(from + i) % IDS.length] ?? op.id).find(wanted) ?? op.id;
  const id =
    op.op === 'update'
      ? next(known)
      : op.op === 'create' && op.fresh
        ? next((i) => !known(i))
        : op.id;
  const state = STATES[shape.state] ?? 'idle';
  const status = STATUSES[shape.status] ?? 'active';
  const chartVersion = shape.chartVersion;
  const hash = `${id}#${n}`;
  // An update on its own head of an actor the writer knows nothing of creates it.
  const creating =
    op.op === 'create' ||
    (op.op === 'invalid' && op.create) ||
    (op.op === 'update' && op.base === 'batch' && !known(id));
  // Updates build on a head: the writer's own in this batch, or the committed one;
  // an actor the writer knows nothing of gets a head it imagines (not_found).
  const imagined: Head = {
    version: 1,
    hash: `${id}#imagined`,
    state: 'idle',
    status: 'active',
    chartVersion: 1,
  };
  const base =
    (op.op === 'update' && op.base === 'committed'
      ? writer.committed.get(id)
      : (writer.batch.get(id) ?? writer.committed.get(id))) ?? imagined;
  let expectedVersion = creating ? 0 : base.version;
  if (op.op === 'stale') {
    expectedVersion = base.version + op.delta;
    if (expectedVersion < 1) expectedVersion = base.version + 2;
  }
  const version = expectedVersion + 1;
  const prevHash = creating ? 'genesis' : op.op === 'forge' ? `forged#${n}` : base.hash;
  const consumed = resolveConsume(
    writer,
    id,
    op.op === 'create' || op.op === 'update' ? op.consume : undefined,
  );
  if (consumed.key !== undefined && consumed.key !== BOGUS) writer.lastConsumed = consumed.key;
  const parentId = shape.parent ?? (creating ? consumed.from : undefined);
  const dues = shape.timers.map((t) => at + t);
  const out: OutgoingMessage[] = shape.out.map((m, idx) => ({
    to: m.to,
    kind: m.kind,
    body: JSON.stringify({ type: `M${n}.${idx}` }),
    idx,
  }));
  const write: ActorWrite = {
    actorId: id,
    expectedVersion,
    actor: {
      id,
      machineId: shape.otherMachine ? 'other' : id.startsWith('kid') ? 'child' : 'parent',
      chartVersion,
      version,
      state,
      status,
      snapshot: snapshotOf(state, n, dues),
      createdAt: !creating && shape.otherCreatedAt ? at - 7 : at,
      updatedAt: at,
      headHash: hash,
    },
    transition: {
      actorId: id,
      seq: version,
      fromState: creating ? null : base.state,
      toState: state,
      eventType: creating ? 'xstate.init' : 'NEXT',
      event: JSON.stringify({ type: creating ? 'xstate.init' : 'NEXT', n }),
      at,
      metadata: JSON.stringify({ source: 'send', n }),
      prevHash,
      hash,
      chartVersion: shape.recorded ? chartVersion : null,
      snapshotHash: shape.recorded ? `sha#${n}` : null,
    },
    ...(dues.length > 0 ? { nextDueAt: Math.min(...dues) } : {}),
    ...(out.length > 0 ? { messagesOut: out } : {}),
    ...(shape.steps.length > 0
      ? {
          stepsBegin: shape.steps.map((name, i) => ({
            key: `${id}:${name}`,
            name,
            startedAt: at + i,
          })),
        }
      : {}),
    ...(parentId !== undefined ? { parentId } : {}),
    ...(shape.userId !== undefined ? { userId: shape.userId } : {}),
    ...(!creating && shape.previous
      ? {
          previous: {
            state: base.state,
            status: base.status,
            chartVersion: base.chartVersion,
          },
        }
      : {}),
    ...(op.op === 'update' && op.fence !== undefined
      ? { lease: { owner: op.fence.owner, now: clock + op.fence.nowShift } }
      : {}),
  };
  if (op.op === 'invalid') spoil(write, op.defect);
  const head: Head = { version, hash, state, status, chartVersion };
  // The writer believes the writes it makes (a competing writer's on the committed
  // head too, and malformed ones): its next write of the actor in this batch builds
  // on it. A stale or forged write is another writer's, which this one never saw.
  if (op.op !== 'stale' && op.op !== 'forge') writer.batch.set(id, head);
  return { write, head, consume: consumed.key, op, id };
}

/** Makes `write` malformed as `defect` says. */
function spoil(write: ActorWrite, defect: Defect): void {
  const other = write.actorId === 'a' ? 'b' : 'a';
  switch (defect) {
    case 'updatedAt':
      write.actor.updatedAt += 0.5;
      break;
    case 'createdAt':
      write.actor.createdAt += 0.25;
      break;
    case 'at':
      write.transition.at += 0.5;
      break;
    case 'chartVersion':
      write.actor.chartVersion = 1.5;
      break;
    case 'nextDueAt':
      write.nextDueAt = 1.5;
      break;
    case 'actorId':
      write.actor.id = other;
      break;
    case 'transitionActorId':
      write.transition.actorId = other;
      break;
    case 'version':
      write.actor.version += 1;
      write.transition.seq += 1;
      break;
    case 'seq':
      write.transition.seq += 1;
      break;
    case 'status':
      write.actor.status = 'sleeping' as ActorStatus;
      break;
    case 'userId':
      write.userId = '';
      break;
    case 'negative':
      write.expectedVersion = -1;
      write.actor.version = 0;
      write.transition.seq = 0;
      break;
  }
}

// ---------------------------------------------------------------- comparing

/** A write's result as compared: the error's class and the fields the contract names. */
function outcome(result: Error | null): unknown {
  if (result === null) return null;
  const o: Record<string, unknown> = { name: result.name };
  if (result instanceof StoreError) {
    o['kind'] = result.kind;
    o['actorId'] = result.actorId;
    // The detail of a malformed write comes from the shared rules (others: the driver's).
    if (result.kind === 'invalid_write') o['detail'] = result.detail;
  } else if (result instanceof ConcurrencyError) {
    o['actorId'] = result.actorId;
    o['expectedVersion'] = result.expectedVersion;
    o['actualVersion'] = result.actualVersion;
  } else if (result instanceof LeaseLostError) {
    o['actorId'] = result.actorId;
    o['owner'] = result.owner;
    o['holder'] = result.holder;
  } else {
    o['message'] = result.message;
  }
  return o;
}

/** A message without the store's id. */
function message(m: MessageRow) {
  return {
    to: m.to,
    from: m.from,
    fromSeq: m.fromSeq,
    idx: m.idx,
    kind: m.kind,
    body: m.body,
    at: m.at,
  };
}

/**
 * Everything observable after a batch. Pending messages are compared without
 * their ids and ordered by name: the contract orders by id only the messages of
 * one sender (MessageRow.id), so messages of different senders sent in one batch
 * may be numbered in any order. {@link checkMessageOrder} checks what is promised.
 */
async function observe(store: Store, clock: number) {
  // One query after another: in parallel, PostgreSQL would open a connection each.
  const actors = await store.listActors({ limit: 1000 });
  const pending = await store.pendingMessages({ limit: 1000 });
  const steps = await store.listSteps();
  const withHistory = await store.actorIdsWithHistory();
  const nextDue = await store.nextTimerDue();
  const due = await store.dueTimers(clock, 100);
  const counts = await store.countActors();
  const dwell = await store.actorsInStates({ states: STATES, limit: 1000 });
  const entries = await store.countStateEntries({ toStates: STATES, since: 0, limit: 1000 });
  const feed = await store.transitionsSince({ since: 0, limit: 1000 });
  const forU1 = await store.listActors({ userId: 'u1', limit: 1000 });
  const perActor = [];
  for (const id of IDS) {
    perActor.push({
      id,
      history: await store.history(id),
      head: await store.loadActorHead(id),
      log: await store.readActorLog(id),
      children: (await store.childrenOf(id)).map((c) => c.id),
      timers: await store.timers(id),
      lease: await store.lease(id),
      pendingTo: (await store.pendingMessages({ to: id, limit: 1000 })).map(message).sort(byName),
    });
  }
  const state = {
    actors,
    messages: pending.map(message).sort(byName),
    steps,
    withHistory,
    nextDue,
    due,
    counts,
    dwell,
    entries,
    feed,
    forU1: forU1.map((a) => a.id),
    perActor,
  };
  return { state, pending };
}

function byName(x: ReturnType<typeof message>, y: ReturnType<typeof message>): number {
  return x.from < y.from ? -1 : x.from > y.from ? 1 : x.fromSeq - y.fromSeq || x.idx - y.idx;
}

/**
 * What the contract says of message ids, per store: pending messages come in id
 * order, a sender's in the order it sent them, an older batch's before a newer
 * one's; an id is never given to another message.
 */
function checkMessageOrder(
  pending: readonly MessageRow[],
  sentIn: ReadonlyMap<string, number>,
  ids: Map<string, number>,
): string | undefined {
  const lastOf = new Map<string, { fromSeq: number; idx: number }>();
  let lastId = -Infinity;
  let lastBatch = -Infinity;
  for (const m of pending) {
    const key = messageKey(m);
    if (m.id <= lastId) return `message ${key} (id ${m.id}) comes after id ${lastId}`;
    lastId = m.id;
    const batch = sentIn.get(key) ?? Infinity;
    if (batch < lastBatch)
      return `message ${key} of batch ${batch} comes after batch ${lastBatch}'s`;
    lastBatch = batch;
    const last = lastOf.get(m.from);
    if (
      last !== undefined &&
      (last.fromSeq > m.fromSeq || (last.fromSeq === m.fromSeq && last.idx >= m.idx))
    ) {
      return `message ${key} comes after ${m.from}/${last.fromSeq}/${last.idx}`;
    }
    lastOf.set(m.from, m);
    const known = ids.get(key);
    if (known !== undefined && known !== m.id)
      return `message ${key} changed id ${known} → ${m.id}`;
    for (const [other, id] of ids) {
      if (id === m.id && other !== key)
        return `id ${m.id} of message ${other} given again to ${key}`;
    }
    ids.set(key, m.id);
  }
  return undefined;
}

/** Up to `max` paths where `a` and `b` differ, with both values. */
function differences(a: unknown, b: unknown, path = '', out: string[] = [], max = 6): string[] {
  if (out.length >= max || isDeepStrictEqual(a, b)) return out;
  if (
    typeof a === 'object' &&
    typeof b === 'object' &&
    a !== null &&
    b !== null &&
    Array.isArray(a) === Array.isArray(b) &&
    !(Array.isArray(a) && Array.isArray(b) && a.length !== b.length)
  ) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      differences(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
        out,
        max,
      );
    }
    return out;
  }
  out.push(`${path || '(root)'}: memory ${JSON.stringify(a)} ≠ ${JSON.stringify(b)}`);
  return out;
}

/** A write as the failure report shows it. */
function summary(built: Built): Record<string, unknown> {
  const { write, op } = built;
  return {
    op:
      op.op === 'invalid'
        ? `invalid:${op.defect}`
        : op.op === 'update'
          ? `update(${op.base})`
          : op.op,
    actorId: write.actorId,
    expectedVersion: write.expectedVersion,
    version: write.actor.version,
    prevHash: write.transition.prevHash,
    hash: write.transition.hash,
    state: write.actor.state,
    status: write.actor.status,
    ...(built.consume !== undefined ? { consume: built.consume } : {}),
    ...(write.messagesOut ? { out: write.messagesOut.map((m) => `${m.to}:${m.kind}`) } : {}),
    ...(write.stepsBegin ? { steps: write.stepsBegin.map((s) => s.key) } : {}),
    ...(write.parentId !== undefined ? { parentId: write.parentId } : {}),
    ...(write.userId !== undefined ? { userId: write.userId } : {}),
    ...(write.previous ? { previous: write.previous } : {}),
    ...(write.lease ? { lease: write.lease } : {}),
    ...(write.nextDueAt !== undefined ? { nextDueAt: write.nextDueAt } : {}),
  };
}

// ---------------------------------------------------------------- the run

interface Target {
  name: string;
  store: Store;
  /** Message name → this store's id, for every message it ever listed. */
  ids: Map<string, number>;
}

/** Outcome tallies over a run, printed with `AGENTCHARTS_STORE_DIFF_STATS=1`. */
const tally = new Map<string, number>();

async function runCase(batches: readonly Batch[], targets: readonly Target[]): Promise<void> {
  const [oracle] = targets;
  if (oracle === undefined) throw new Error('no oracle');
  const writer: Writer = {
    committed: new Map(),
    batch: new Map(),
    serial: 0,
    pending: [],
    sent: new Set(),
    lastConsumed: undefined,
    steps: [],
  };
  const sentIn = new Map<string, number>();
  const trace: unknown[] = [];
  const fail: (why: string) => never = (why) => {
    throw new Error(`${why}\nbatches:\n${trace.map((t) => JSON.stringify(t)).join('\n')}`);
  };

  for (const [b, batch] of batches.entries()) {
    const clock = 10_000 + 100 * b;
    const step: Record<string, unknown> = { batch: b };
    trace.push(step);

    /** Runs `call` on every store; what each returns must be what the memory store returns. */
    const same = async (what: string, call: (target: Target) => Promise<unknown>) => {
      const got = await Promise.all(targets.map(call));
      step[what] = got[0];
      for (const [i, value] of got.entries()) {
        if (!isDeepStrictEqual(value, got[0])) {
          fail(`${what} differs: ${targets[i]?.name} ${JSON.stringify(value)}`);
        }
      }
    };
    if (batch.lease !== undefined) {
      const { id, owner, span } = batch.lease;
      const request = { owner, now: clock, leaseUntil: clock + span, limit: 10, actorIds: [id] };
      step['leaseRequest'] = request;
      await same('acquireLeases', (t) => t.store.acquireLeases(request));
    }
    const dropped =
      batch.drop === undefined ? undefined : [...writer.sent][batch.drop % writer.sent.size];
    if (dropped !== undefined) {
      step['drop'] = dropped;
      await same('dropMessage', (t) => t.store.dropMessage(t.ids.get(dropped) ?? BOGUS_ID));
    }
    const started =
      batch.start === undefined ? undefined : writer.steps[batch.start % writer.steps.length];
    if (started !== undefined) {
      step['start'] = started;
      await same('startStep', (t) => t.store.startStep(started, clock));
    }

    writer.batch = new Map();
    writer.lastConsumed = undefined;
    const built = batch.writes.map((op, i) => build(writer, op, clock, i));
    step['writes'] = built.map(summary);
    const perStore = (target: Target) =>
      built.map(({ write, consume }) => {
        if (consume === undefined) return write;
        const id = consume === BOGUS ? BOGUS_ID : target.ids.get(consume);
        if (id === undefined) fail(`${target.name} never listed message ${consume}`);
        return { ...write, consumeMessage: id };
      });
    const results = await Promise.all(
      targets.map(async (target): Promise<unknown[] | { rejected: unknown }> => {
        try {
          return (await target.store.commit(perStore(target))).map(outcome);
        } catch (error) {
          return { rejected: outcome(error instanceof Error ? error : new Error(String(error))) };
        }
      }),
    );
    const [expected] = results;
    step['results'] = Object.fromEntries(targets.map((t, i) => [t.name, results[i]]));
    for (const [i, got] of results.entries()) {
      if (!isDeepStrictEqual(got, expected)) {
        fail(`commit results differ (batch ${b}): ${targets[i]?.name} deviates from memory`);
      }
    }
    if (!Array.isArray(expected)) return fail('the memory store rejected the batch');
    for (const [i, result] of expected.entries()) {
      const w = built[i];
      if (result === null && w !== undefined) writer.committed.set(w.id, w.head);
      const { name, kind } = (result ?? { name: 'ok' }) as { name: string; kind?: string };
      const what = `${w?.op.op ?? ''}${w?.consume === undefined ? '' : '+consume'}`;
      const key = `${what} → ${name}${kind === undefined ? '' : `:${kind}`}`;
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }

    const seen = await Promise.all(targets.map((t) => observe(t.store, clock)));
    for (const [i, target] of targets.entries()) {
      const pending = seen[i]?.pending ?? [];
      for (const m of pending) if (!sentIn.has(messageKey(m))) sentIn.set(messageKey(m), b);
      const wrong = checkMessageOrder(pending, sentIn, target.ids);
      if (wrong !== undefined) fail(`${target.name}: ${wrong} (after batch ${b})`);
    }
    const reference = seen[0]?.state;
    for (const [i, target] of targets.entries()) {
      const diff = differences(reference, seen[i]?.state);
      if (diff.length > 0) {
        fail(
          `state differs after batch ${b}: ${target.name} deviates from memory\n${diff.join('\n')}`,
        );
      }
    }
    const pending = seen[0]?.pending ?? [];
    writer.pending = pending.map((m) => ({ key: messageKey(m), to: m.to, from: m.from }));
    writer.sent = new Set(sentIn.keys());
    writer.steps = (seen[0]?.state.steps ?? []).map((row) => row.key).sort();
  }
}

describe('stores agree with the memory store, commit by commit', () => {
  const dir = suiteTempDir('agentcharts-store-diff-');
  const withPostgres = postgresAvailable();
  const postgres = usePostgres();
  let files = 0;

  it(
    `${withPostgres ? 'SQLite and PostgreSQL' : 'SQLite'} give every write and every read the memory store gives`,
    async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, async (batches) => {
          const targets: Target[] = [
            { name: 'memory', store: openStore('memory:'), ids: new Map() },
            {
              name: 'sqlite',
              store: openStore(`sqlite:${join(dir(), `${++files}.db`)}`),
              ids: new Map(),
            },
          ];
          try {
            if (withPostgres) {
              const server = postgres();
              if (server === undefined) throw new Error('the PostgreSQL server did not start');
              targets.push({
                name: 'postgres',
                store: openStore(server.freshUrl()),
                ids: new Map(),
              });
            }
            await runCase(batches, targets);
          } finally {
            await Promise.all(targets.map((t) => t.store.close()));
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
      if (process.env['AGENTCHARTS_STORE_DIFF_STATS']) {
        console.log([...tally].sort(([x], [y]) => (x < y ? -1 : 1)));
      }
    },
    TIMEOUT,
  );

  if (!withPostgres) it.skip('SKIPPED: PostgreSQL not installed', () => undefined);
});
