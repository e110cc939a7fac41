/**
 * Time travel through a durable actor's trail: the snapshot after any of its
 * transitions, rebuilt by replaying the logged events from the creation through
 * the chart's pure `transition()` (as `verify` does), and checked against the
 * snapshot hash that step's audit row recorded and against the hash chain.
 */
import type { AnyMachineSnapshot, EventObject, StateValue } from 'xstate';
import type { ChartDefinition } from '../core/chart.ts';
import { AgentchartsError } from '../core/errors.ts';
import { encodeSnapshot, restoreSnapshot } from '../durable/codec.ts';
import { MIGRATION_EVENT } from '../durable/migrate.ts';
import { EMPTY_LEDGER, ledgerOf } from '../durable/ledger.ts';
import { parentOfLog, replayRow, START, type Replayed } from '../durable/replay.ts';
import { GENESIS_HASH, hashTransition, sha256 } from '../durable/row.ts';
import type { PersistedSnapshot } from '../core/chart.ts';
import type { ActorRow, Store, TransitionRow } from '../store/types.ts';
import { diffJson, type JsonChange } from './json-diff.ts';

/** Steps a replay reads at most (the rows before the one asked for). */
export const MAX_REPLAY_STEPS = 20_000;

/** How the replayed snapshot compares with the hash its row recorded. */
export type SnapshotCheck =
  /** The replay gives exactly the snapshot the row hashed when it was written. */
  | 'match'
  /** It does not: the log, the chart or the store disagree (`verify` says more). */
  | 'mismatch'
  /** The row was written before agentcharts recorded snapshot hashes. */
  | 'unrecorded'
  /** The step could not be replayed (an event the chart throws on, an unknown version). */
  | 'not_replayed';

/** One step of the trail, as time travel shows it. */
export interface TrailStep {
  seq: number;
  /** The actor's version (the last step). */
  last: number;
  eventType: string;
  event: unknown;
  from: string | null;
  to: string;
  at: number;
  /** The snapshot after this step (null when it could not be replayed). */
  value: StateValue | null;
  status: string | null;
  context: unknown;
  /** The context after the step before (null at the creation). */
  previousContext: unknown;
  /** The context's changes from the step before, at most 200. */
  diff: JsonChange[];
  /** The state after each step from the creation to this one. */
  path: Array<{ seq: number; state: string; value: StateValue | null }>;
  snapshotCheck: SnapshotCheck;
  /** Whether every row up to this one matches its hash and links to the one before. */
  chainIntact: boolean;
}

/** The step asked for is not in the trail, or too far to replay. */
export class TrailStepError extends AgentchartsError {
  override name = 'TrailStepError';
  readonly actorId: string;
  readonly seq: number;
  readonly reason: 'not_in_trail' | 'too_long';
  constructor(actorId: string, seq: number, reason: 'not_in_trail' | 'too_long') {
    super(
      'TRAIL_STEP',
      reason === 'not_in_trail'
        ? `actor ${actorId} has no step ${seq}`
        : `step ${seq} of ${actorId} is past the ${MAX_REPLAY_STEPS} steps a replay reads`,
    );
    this.actorId = actorId;
    this.seq = seq;
    this.reason = reason;
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Rows 1..seq of an actor, page by page. */
async function rowsUpTo(store: Store, actorId: string, seq: number): Promise<TransitionRow[]> {
  const rows: TransitionRow[] = [];
  while (rows.length < seq) {
    const page = await store.history(actorId, {
      afterSeq: rows.length,
      limit: Math.min(500, seq - rows.length),
    });
    if (page.length === 0) break;
    rows.push(...page);
  }
  return rows;
}

/**
 * The step `seq` of an actor's trail: its snapshot and context replayed from the
 * log, checked against the row's snapshot hash and the chain, the context diff
 * to the step before, and the states along the way.
 *
 * @example
 * const step = await trailStep(store, chart, actorRow, 3);
 * if (step.snapshotCheck !== 'match') console.warn('replay differs at', step.seq);
 */
export async function trailStep(
  store: Store,
  chart: Pick<ChartDefinition, 'machine' | 'version'>,
  actor: ActorRow,
  seq: number,
): Promise<TrailStep> {
  if (!Number.isInteger(seq) || seq < 1 || seq > actor.version) {
    throw new TrailStepError(actor.id, seq, 'not_in_trail');
  }
  if (seq > MAX_REPLAY_STEPS) throw new TrailStepError(actor.id, seq, 'too_long');
  const rows = await rowsUpTo(store, actor.id, seq);
  const row = rows[seq - 1];
  if (row?.seq !== seq) throw new TrailStepError(actor.id, seq, 'not_in_trail');

  const machine = chart.machine;
  const parentId = parentOfLog(rows);
  let state: Replayed = START;
  let snapshot: AnyMachineSnapshot | undefined;
  let previous: AnyMachineSnapshot | undefined;
  let replayable = true;
  let chainIntact = true;
  let prevHash = GENESIS_HASH;
  const path: TrailStep['path'] = [];
  for (const r of rows) {
    const { hash, ...content } = r;
    if (r.prevHash !== prevHash || hashTransition(content) !== hash) chainIntact = false;
    prevHash = hash;
    previous = snapshot;
    if (replayable) {
      const event = parse(r.event) as (EventObject & { input?: unknown }) | undefined;
      try {
        if (!event || typeof event.type !== 'string') throw new Error('unreadable event');
        if (event.type === MIGRATION_EVENT) {
          // A migration row carries the migrated snapshot; replay goes on from it.
          const migrated = (event as { snapshot?: PersistedSnapshot; to?: number }).snapshot;
          if (migrated === undefined || (event as { to?: number }).to !== chart.version) {
            throw new Error('a migration to another chart version');
          }
          snapshot = restoreSnapshot(machine, migrated);
          state = { snapshot, ledger: ledgerOf(migrated) ?? EMPTY_LEDGER };
        } else {
          const step = replayRow(machine, actor.id, parentId, state, r, event);
          if (!step.ok) throw new Error(step.detail);
          state = { snapshot: step.snapshot, ledger: step.ledger };
          snapshot = step.snapshot;
        }
      } catch {
        replayable = false;
        snapshot = undefined;
      }
    }
    path.push({
      seq: r.seq,
      state: r.toState,
      value: snapshot ? (snapshot.value as StateValue) : null,
    });
  }

  let snapshotCheck: SnapshotCheck = 'not_replayed';
  if (snapshot) {
    // A row written before ledgers hashed the snapshot without one.
    snapshotCheck =
      row.snapshotHash === null
        ? 'unrecorded'
        : sha256(encodeSnapshot(machine, snapshot, state.ledger)) === row.snapshotHash ||
            sha256(encodeSnapshot(machine, snapshot)) === row.snapshotHash
          ? 'match'
          : 'mismatch';
  }
  const context = snapshot
    ? (JSON.parse(JSON.stringify(snapshot.context ?? null)) as unknown)
    : null;
  const previousContext = previous
    ? (JSON.parse(JSON.stringify(previous.context ?? null)) as unknown)
    : null;
  return {
    seq,
    last: actor.version,
    eventType: row.eventType,
    event: parse(row.event) ?? null,
    from: row.fromState,
    to: row.toState,
    at: row.at,
    value: snapshot ? (snapshot.value as StateValue) : null,
    status: snapshot ? snapshot.status : null,
    context,
    previousContext,
    diff: snapshot ? diffJson(previousContext, context, 200) : [],
    path,
    snapshotCheck,
    chainIntact,
  };
}
