/**
 * Migrating a stored actor to its chart's current version: once, and on the
 * record. The first process that loads an actor stored at an older chart version
 * runs the chart's migrations and commits, with compare-and-set on the actor's
 * version, a log row `agentcharts.migrated` (hash-chained like any transition,
 * carrying the migrated snapshot so that `verify` can restart replay from it)
 * together with the new chart version on the actor row. A later load, here or in
 * another process, finds the current version and migrates nothing; a process
 * that loses the race reads the migrated row instead.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import { ConcurrencyError, StoreError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorHead, ActorRow } from '../store/types.ts';
import { decodeActor, encodeSnapshot, type ChartVersioning } from './codec.ts';
import { legacyLedger } from './legacy.ts';
import { nextDue, type Ledger } from './ledger.ts';
import { buildTransitionRow, checkHead } from './row.ts';
import type { DurableRuntime } from './runtime.ts';

/** The event type of a migration row. */
export const MIGRATION_EVENT = 'agentcharts.migrated';

/** The event a migration row logs: the versions and the migrated snapshot. */
export interface MigrationEvent {
  type: typeof MIGRATION_EVENT;
  from: number;
  to: number;
  /** The persisted snapshot the migrations produced (a replay checkpoint). */
  snapshot: unknown;
}

/** Attempts before giving up when other processes keep moving the actor. */
const ATTEMPTS = 5;

/**
 * Decodes a stored actor for `machine` (checked against the head of its chain)
 * and, when it was stored at an older chart version, commits its migration
 * first. Returns the head as stored afterwards and the live snapshot.
 */
export async function loadMigrated(
  runtime: DurableRuntime,
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  found: ActorHead,
): Promise<{ found: ActorHead; snapshot: AnyMachineSnapshot; ledger: Ledger }> {
  let current = found;
  for (let attempt = 1; ; attempt++) {
    // Decoded first: a state the chart no longer has is a version problem
    // (SnapshotVersionError) before it is a chain problem.
    const decoded = decodeActor(machine, versioning, current.actor);
    const snapshot = decoded.snapshot;
    checkHead(current.actor, current.head);
    const ledger =
      decoded.ledger ?? (await legacyLedger(runtime.store, current.actor.id, snapshot));
    if (current.actor.chartVersion === versioning.version) {
      return { found: current, snapshot, ledger };
    }
    try {
      return {
        found: await commitMigration(runtime, machine, versioning, current, snapshot, ledger),
        snapshot,
        ledger,
      };
    } catch (error) {
      if (!(error instanceof ConcurrencyError) || attempt === ATTEMPTS) throw error;
      const again = await runtime.store.loadActorHead(current.actor.id);
      if (!again) {
        throw new StoreError({ operation: 'load', kind: 'not_found', actorId: current.actor.id });
      }
      current = again;
    }
  }
}

async function commitMigration(
  runtime: DurableRuntime,
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  found: ActorHead,
  snapshot: AnyMachineSnapshot,
  ledger: Ledger,
): Promise<ActorHead> {
  const row = found.actor;
  const now = runtime.clock.now();
  const encoded = encodeSnapshot(machine, snapshot, ledger);
  const state = stateLabel(snapshot.value);
  const event: MigrationEvent = {
    type: MIGRATION_EVENT,
    from: row.chartVersion,
    to: versioning.version,
    snapshot: JSON.parse(encoded) as unknown,
  };
  const transition = buildTransitionRow({
    actorId: row.id,
    seq: row.version + 1,
    fromState: row.state,
    toState: state,
    eventType: MIGRATION_EVENT,
    event: JSON.stringify(event),
    at: now,
    metadata: JSON.stringify({
      source: 'migration',
      from: row.chartVersion,
      to: versioning.version,
    }),
    prevHash: row.headHash,
    chartVersion: versioning.version,
    snapshot: encoded,
  });
  const actor: ActorRow = {
    ...row,
    chartVersion: versioning.version,
    version: row.version + 1,
    state,
    status: snapshot.status,
    snapshot: encoded,
    updatedAt: now,
    headHash: transition.hash,
  };
  await runtime.commit({
    actorId: row.id,
    expectedVersion: row.version,
    actor,
    transition,
    nextDueAt: nextDue(ledger),
    previous: { state: row.state, status: row.status, chartVersion: row.chartVersion },
  });
  runtime.logger.info(
    { actorId: row.id, machineId: machine.id, from: row.chartVersion, to: versioning.version },
    'actor migrated to the chart version',
  );
  return { ...found, actor, head: transition };
}
