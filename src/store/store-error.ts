/**
 * A driver's failure as the store's typed error: both SQL stores wrap what their
 * driver throws the same way, each with its own classification of the kind.
 */
import { StoreError, type StoreOperation } from '../core/errors.ts';

/**
 * Wraps any failure as a StoreError of `operation`, its kind as `classify` reads
 * it, keeping StoreErrors as they are. The detail is the driver's code and message
 * (every message of an AggregateError, as `pg` throws for a refused connection).
 */
export function wrapStoreError(
  error: unknown,
  operation: StoreOperation,
  classify: (error: unknown) => string,
  actorId?: string,
): StoreError {
  if (error instanceof StoreError) return error;
  const code =
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
      ? `${error.code}: `
      : '';
  const message =
    error instanceof AggregateError && error.message === ''
      ? error.errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ')
      : error instanceof Error
        ? error.message
        : String(error);
  return new StoreError(
    { operation, kind: classify(error), actorId, detail: `${code}${message}` },
    { cause: error },
  );
}
