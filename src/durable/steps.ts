/**
 * Idempotent steps: a side effect run at most once per actor and name, keyed
 * `<actorId>:<name>`. The step row is marked `executing`, the function runs, and
 * the row is marked `done` with its JSON result (or `failed`), each durably. A row
 * found `executing` after a crash is uncertain: never re-run blindly, settled by a
 * reconcile hook (did the refund happen?).
 */
import { UncertainStepError } from '../core/errors.ts';
import type { Clock } from '../core/clock.ts';
import type { StepRow, Store } from '../store/types.ts';
import { EXPECTED, isStore, requireArg } from '../core/options.ts';

/** What a reconcile hook decides about an uncertain step. */
export type StepReconciliation =
  | { status: 'done'; result: unknown }
  /** The side effect did not happen: the next `step()` call runs it again. */
  | { status: 'not_done'; reason: string };

export interface UncertainStep {
  key: string;
  actorId: string;
  name: string;
  startedAt: number;
  attempts: number;
}

/** Settles an uncertain step, e.g. by asking the payment provider whether the refund exists. */
export type ReconcileHook = (
  step: UncertainStep,
) => Promise<StepReconciliation> | StepReconciliation;

/** The idempotency key of a step. */
export function stepKey(actorId: string, name: string): string {
  return `${actorId}:${name}`;
}

/**
 * Runs `fn` once for `key`: a stored `done` result is returned without running it,
 * an `executing` row throws {@link UncertainStepError}, a `failed` one runs again.
 */
export async function runStep<T>(
  store: Store,
  clock: Clock,
  step: { key: string; actorId: string; name: string },
  fn: (key: string) => Promise<T> | T,
): Promise<T> {
  const { row, created } = await store.beginStep({ ...step, startedAt: clock.now() });
  if (!created) {
    if (row.status === 'done') return JSON.parse(row.result ?? 'null') as T;
    if (row.status === 'executing') {
      throw new UncertainStepError({ actorId: step.actorId, key: step.key });
    }
    await store.restartStep(step.key, clock.now());
  }
  let result: T;
  try {
    result = await fn(step.key);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await store.finishStep(step.key, 'failed', JSON.stringify({ error: message }), clock.now());
    throw error;
  }
  await store.finishStep(step.key, 'done', JSON.stringify(result ?? null), clock.now());
  return result;
}

/** Applies a reconcile decision to a step row. */
export async function settleStep(
  store: Store,
  key: string,
  decision: StepReconciliation,
  now: number,
): Promise<void> {
  requireArg('settleStep', 'store', isStore(store), EXPECTED.store);
  requireArg('settleStep', 'key', typeof key === 'string', EXPECTED.string);
  requireArg(
    'settleStep',
    'decision',
    typeof (decision as { status?: unknown } | null)?.status === 'string',
    "a reconciliation ({ status: 'done', result } or { status: 'retry' } …)",
  );
  requireArg('settleStep', 'now', Number.isFinite(now), 'a time in ms');
  if (decision.status === 'done') {
    await store.finishStep(key, 'done', JSON.stringify(decision.result ?? null), now);
  } else {
    await store.finishStep(key, 'failed', JSON.stringify({ reconciled: decision.reason }), now);
  }
}

/**
 * The step row another run settled while this one was writing its own outcome
 * (`error`, the write refused): that recorded outcome is the step's. A process that
 * stopped can have its last statement land after recovery read the step as
 * `executing` (a networked store runs what it received), and two runs of one step
 * record one outcome. Rethrows `error` when the step is still executing or gone.
 */
export async function settledMeanwhile(
  store: Store,
  key: string,
  error: unknown,
): Promise<StepRow & { status: 'done' | 'failed' }> {
  const row = await store.getStep(key).catch(() => undefined);
  if (row === undefined || row.status === 'executing') throw error;
  return row as StepRow & { status: 'done' | 'failed' };
}
