/** Reading a stored actor row without building a live actor (recovery's lazy path). */
import { StoreError } from '../core/errors.ts';
import type { RecoverySnapshot } from '../core/recovery.ts';
import type { ActorRow, StepRow } from '../store/types.ts';
import { decodeActorRow } from './codec.ts';
import { ledgerOf } from './ledger.ts';
import type { DurableRuntime } from './runtime.ts';

export type Stored = Partial<RecoverySnapshot> & { children?: Record<string, unknown> };

/** The stored snapshot JSON of a row, parsed (StoreError `corrupt` when it is not JSON). */
export function parseStored(row: ActorRow): Stored {
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.snapshot);
  } catch (cause) {
    throw new StoreError(
      { operation: 'load', kind: 'corrupt', actorId: row.id, detail: 'snapshot is not valid JSON' },
      { cause },
    );
  }
  return parsed !== null && typeof parsed === 'object' ? parsed : {};
}

/** Whether the stored actor still awaits an invoke step's outcome (its ledger lists it). */
export function isAwaitedInvoke(snapshot: string, step: StepRow): boolean {
  let parsed: Stored;
  try {
    parsed = JSON.parse(snapshot) as Stored;
  } catch {
    return false;
  }
  const ledger = ledgerOf(parsed);
  if (ledger) return ledger.invokes.some((invoke) => invoke.key === step.key);
  // Written before ledgers: a child still running in the snapshot.
  const id = step.name.slice('invoke:'.length);
  return parsed.children !== undefined && Object.hasOwn(parsed.children, id);
}

/** Whether a stored actor has anything an adopted live actor must settle (invokes, children). */
export function hasPendingWork(stored: Stored): boolean {
  const ledger = ledgerOf(stored);
  if (ledger) return ledger.invokes.length > 0;
  return Object.keys(stored.children ?? {}).length > 0;
}

/**
 * The stored snapshot as a policy reads it, without building a live actor. A row
 * of another chart version goes through the full load (migrations) instead.
 */
export function storedSnapshot(
  runtime: DurableRuntime,
  row: ActorRow,
  stored: Stored,
): RecoverySnapshot {
  const chart = runtime.requireChart(row.machineId, row.id);
  if (row.chartVersion !== chart.version || stored.value === undefined) {
    return decodeActorRow(chart.machine, chart, row);
  }
  return { value: stored.value, context: stored.context, status: row.status };
}
