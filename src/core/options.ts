/**
 * Options checked at the door of the public functions: a missing or wrong
 * option is an {@link InvalidOptionsError} naming the function and the field,
 * not a TypeError from deep inside.
 */
import * as z from 'zod';
import { AgentchartsError } from './errors.ts';

/** A public function was called with options it cannot work with. */
export class InvalidOptionsError extends AgentchartsError {
  override name = 'InvalidOptionsError';
  constructor(
    /** The function called: `verify`, `createServer`, … */
    readonly fn: string,
    /** The option at fault (`store`, `options.charts`, `keys.0.secret`). */
    readonly field: string,
    readonly expected: string,
  ) {
    super('INVALID_OPTIONS', `${fn}: ${field} must be ${expected}`);
  }
}

/** Whether `v` looks like a store: what `openStore()` returns. */
export function isStore(v: unknown): boolean {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { commit?: unknown }).commit === 'function' &&
    typeof (v as { loadActor?: unknown }).loadActor === 'function'
  );
}

/** A store, as an option. */
export const storeOption = z.custom<object>(isStore, {
  message: 'a store (what openStore() returns)',
});

/** A list of charts (`defineChart(...)` results). */
export const chartsOption = z.custom<Iterable<unknown>>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function',
  { message: 'an array of charts (defineChart results)' },
);

/** Checks `value` against `schema`; the first problem becomes an {@link InvalidOptionsError}. */
export function checkOptions(fn: string, value: unknown, schema: z.ZodType): void {
  const result = schema.safeParse(value);
  if (result.success) return;
  const issue = result.error.issues[0];
  const field = issue?.path.length ? issue.path.map(String).join('.') : '(arguments)';
  throw new InvalidOptionsError(fn, field, issue?.message ?? 'valid');
}
