/**
 * `durablePromise`: XState's `fromPromise` whose function also receives the
 * idempotency key of its run, and may declare the type of its output as a zod
 * schema. It lives in core (it imports nothing of Node) so that a chart written
 * for the browser can invoke one; the durable runtime runs it as a step
 * (src/durable/invoke.ts).
 */
import { fromPromise, type AnyActorLogic, type PromiseActorLogic } from 'xstate';
import type { z } from 'zod';
import { InvalidOutputError } from './errors.ts';
import { requireArg, requireOptions } from './options.ts';

/** What a durable promise receives: XState's arguments plus the step's idempotency key. */
export interface DurablePromiseArgs<TInput> {
  input: TInput;
  /** Aborted when the invoking state is left before the promise settles. */
  signal: AbortSignal;
  /** `<actorId>:invoke:<invokeId>:<entry>`: pass it to the API you call to make it idempotent. */
  key: string;
}

/** Options of {@link durablePromise}. */
export interface DurablePromiseOptions<TOutput> {
  /**
   * The type of the output, as a zod schema. An output that does not match it is
   * an error (`InvalidOutputError`, delivered as `xstate.error.actor.<id>`);
   * generated tests and `agentcharts paths` derive a sample output from it when
   * the chart's samples give none.
   */
  output?: z.ZodType<TOutput>;
}

/** A durable promise's logic: XState's promise logic, with its declared output schema. */
export type DurablePromiseLogic<TOutput, TInput> = PromiseActorLogic<TOutput, TInput> & {
  /** The output's declared schema, if {@link DurablePromiseOptions.output} gave one. */
  readonly outputSchema?: z.ZodType<TOutput> | undefined;
};

/**
 * `fromPromise` whose function also receives the idempotency key of its run; in a
 * plain XState actor the key is the actor's session id and invoke id. With
 * `{ output }` the output is checked against the schema before it is delivered.
 *
 * @example
 * const llm = durablePromise(async ({ input, signal, key }: DurablePromiseArgs<{ prompt: string }>) =>
 *   client.complete({ prompt: input.prompt, idempotencyKey: key }, { signal }));
 * const count = durablePromise(async ({ input }: DurablePromiseArgs<string>) => ({ words: input.split(' ').length }), {
 *   output: z.object({ words: z.number().int() }),
 * });
 */
export function durablePromise<TOutput, TInput = undefined>(
  fn: (args: DurablePromiseArgs<TInput>) => Promise<TOutput>,
  options: DurablePromiseOptions<TOutput> = {},
): DurablePromiseLogic<TOutput, TInput> {
  requireArg('durablePromise', 'fn', typeof fn === 'function', 'an async function');
  requireOptions('durablePromise', options);
  const schema = options.output;
  requireArg(
    'durablePromise',
    'options.output',
    schema === undefined || typeof (schema as { safeParse?: unknown }).safeParse === 'function',
    'a zod schema',
  );
  const logic = fromPromise<TOutput, TInput>(async (args) => {
    const key = (args as { key?: unknown }).key;
    const output = await fn({
      input: args.input,
      signal: args.signal,
      key: typeof key === 'string' ? key : `${args.self.sessionId}:${args.self.id}`,
    });
    if (!schema) return output;
    const result = schema.safeParse(output);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    throw new InvalidOutputError({
      field: issue?.path.map(String).join('.') || undefined,
      detail: issue?.code,
    });
  });
  return Object.assign(logic, { outputSchema: schema });
}

/** The output schema an actor logic declares (a {@link durablePromise} given `{ output }`). */
export function declaredOutput(logic: AnyActorLogic | undefined): z.ZodType | undefined {
  const schema = (logic as { outputSchema?: unknown } | undefined)?.outputSchema;
  return typeof (schema as { safeParse?: unknown } | undefined)?.safeParse === 'function'
    ? (schema as z.ZodType)
    : undefined;
}
