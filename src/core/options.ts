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

/** Whether `v` is an object with a function under each of `names`. */
export function hasMethods(v: unknown, ...names: string[]): boolean {
  return (
    typeof v === 'object' &&
    v !== null &&
    names.every((name) => typeof (v as Record<string, unknown>)[name] === 'function')
  );
}

/** Whether `v` looks like a store: what `openStore()` returns. */
export function isStore(v: unknown): boolean {
  return hasMethods(v, 'commit', 'loadActor');
}

/** Whether `v` looks like a durable runtime: what `getRuntime(store)` returns. */
export function isRuntime(v: unknown): boolean {
  return hasMethods(v, 'observe');
}

/** A store, as an option. */
export const storeOption = /* @__PURE__ */ z.custom<object>(isStore, {
  message: 'a store (what openStore() returns)',
});

/** A list of charts (`defineChart(...)` results). */
export const chartsOption = /* @__PURE__ */ z.custom<Iterable<unknown>>(
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

/** What an argument must be, in the words an {@link InvalidOptionsError} uses. */
export const EXPECTED = {
  machine: 'an XState machine (setup(…).createMachine(…))',
  machineOrChart: 'an XState machine (setup(…).createMachine(…)) or its chart (defineChart)',
  store: 'a store (what openStore() returns)',
  actor: 'an actor (createDurableActor or createStrictActor)',
  options: 'an object, or left out',
  object: 'an object',
  string: 'a string',
  array: 'an array',
  runtime: 'a durable runtime (getRuntime(store))',
  text: 'a non-empty string',
} as const;

/** Whether `v` is an XState state machine. */
export function isMachine(v: unknown): boolean {
  return (
    hasMethods(v, 'transition') &&
    typeof (v as { id?: unknown }).id === 'string' &&
    typeof (v as { root?: unknown }).root === 'object'
  );
}

/** Whether `v` is an actor one can read and send to. */
export function isActor(v: unknown): boolean {
  return hasMethods(v, 'getSnapshot', 'send');
}

/** Whether `v` is a plain options object (or absent). */
export function isOptionsBag(v: unknown): boolean {
  return v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v));
}

/** Throws {@link InvalidOptionsError} for `fn`'s `field` unless `ok`. */
export function requireArg(fn: string, field: string, ok: boolean, expected: string): void {
  if (!ok) throw new InvalidOptionsError(fn, field, expected);
}

/** Throws {@link InvalidOptionsError} unless `options` is an object or left out. */
export function requireOptions(fn: string, options: unknown): void {
  requireArg(fn, 'options', isOptionsBag(options), EXPECTED.options);
}

/** Throws {@link InvalidOptionsError} unless `value` is an object (not left out). */
export function requireObject(fn: string, field: string, value: unknown): void {
  requireArg(fn, field, value !== undefined && isOptionsBag(value), EXPECTED.object);
}

/** Throws {@link InvalidOptionsError} unless `value` is a non-empty string. */
export function requireText(
  fn: string,
  field: string,
  value: unknown,
  expected: string = EXPECTED.text,
): void {
  requireArg(fn, field, typeof value === 'string' && value !== '', expected);
}
