/**
 * What an invoked actor's outcome looks like while a chart is explored: its
 * `xstate.done.actor.<id>` and `xstate.error.actor.<id>` events. The chart's
 * samples say it (`eventSamples: { 'xstate.done.actor.count': [{ type, output }] }`);
 * where they do not, a done event carries an output made from the invoke's
 * declared output schema (`durablePromise(fn, { output })`), and an error event a
 * plain `{ name, message }` error, as the durable runtime delivers one.
 */
import { sample } from 'openapi-sampler';
import * as z from 'zod';
import type {
  AnyActorLogic,
  AnyMachineSnapshot,
  AnyStateMachine,
  AnyStateNode,
  EventObject,
} from 'xstate';
import { declaredOutput } from '../core/durable-promise.ts';
import { handlesType } from '../core/event-descriptors.ts';

const DONE = 'xstate.done.actor.';
const ERROR = 'xstate.error.actor.';

/** The error an `xstate.error.actor.*` event carries when no sample gives one. */
export const SAMPLE_INVOKE_ERROR = { name: 'Error', message: 'sample failure' };

/** The invoke id of an `xstate.done.actor.<id>` / `xstate.error.actor.<id>` type. */
export function invokeOutcomeOf(type: string): { id: string; done: boolean } | undefined {
  if (type.startsWith(DONE)) return { id: type.slice(DONE.length), done: true };
  if (type.startsWith(ERROR)) return { id: type.slice(ERROR.length), done: false };
  return undefined;
}

/** The logic a machine invokes under `id`, from the first state node that invokes it. */
export function invokedLogic(machine: AnyStateMachine, id: string): AnyActorLogic | undefined {
  const actors = machine.implementations.actors as Record<string, AnyActorLogic | undefined>;
  const find = (node: AnyStateNode): AnyActorLogic | undefined => {
    for (const invoke of node.invoke) {
      if (invoke.id !== id) continue;
      const src = invoke.src;
      return typeof src === 'string' ? (Object.hasOwn(actors, src) ? actors[src] : undefined) : src;
    }
    for (const child of Object.values(node.states)) {
      const found = find(child);
      if (found) return found;
    }
    return undefined;
  };
  return find(machine.root);
}

const sampled = new WeakMap<z.ZodType, { output: unknown } | null>();

/**
 * A value of a declared output schema, made with openapi-sampler from the schema's
 * JSON Schema (its `examples` first, then formats, bounds and enums), kept only if
 * the schema accepts it. Undefined when the schema has none to give (a pattern,
 * a refinement): the chart's samples must say then.
 */
export function sampleOutput(schema: z.ZodType): { output: unknown } | undefined {
  let cached = sampled.get(schema);
  if (cached === undefined) {
    cached = null;
    try {
      const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });
      const result = schema.safeParse(sample(json as Parameters<typeof sample>[0]));
      if (result.success) cached = { output: result.data };
    } catch {
      // A schema JSON Schema cannot describe gives no sample; the chart's samples must.
    }
    sampled.set(schema, cached);
  }
  return cached ?? undefined;
}

/**
 * The outcome events of invoke `type` to explore from `snapshot`: the given
 * samples (each with the invoke's `actorId`), else the default one.
 */
export function outcomeEvents(
  snapshot: AnyMachineSnapshot,
  type: string,
  given: readonly EventObject[] | undefined,
): EventObject[] {
  const outcome = invokeOutcomeOf(type);
  if (!outcome) return [];
  if (given && given.length > 0) return given.map((e) => ({ ...e, actorId: outcome.id }));
  if (!outcome.done)
    return [{ type, error: SAMPLE_INVOKE_ERROR, actorId: outcome.id } as EventObject];
  const child = (snapshot.children as Record<string, { logic?: AnyActorLogic } | undefined>)[
    outcome.id
  ];
  const schema = declaredOutput(child?.logic);
  const output = schema ? sampleOutput(schema)?.output : undefined;
  return [{ type, output, actorId: outcome.id } as EventObject];
}

/**
 * Why a sample of an invoke outcome is wrong for `machine`, or undefined when it is
 * right: the machine must handle the type, and a done event's output must match
 * the invoke's declared output schema.
 */
export function outcomeSampleProblem(
  machine: AnyStateMachine,
  sampleEvent: EventObject,
): string | undefined {
  const outcome = invokeOutcomeOf(sampleEvent.type);
  if (!outcome) return 'not an invoke outcome';
  if (!handlesType(machine, sampleEvent.type)) return 'no state of the machine handles it';
  if (!outcome.done) return undefined;
  const schema = declaredOutput(invokedLogic(machine, outcome.id));
  if (!schema) return undefined;
  const result = schema.safeParse((sampleEvent as { output?: unknown }).output);
  if (result.success) return undefined;
  const field = result.error.issues[0]?.path.map(String).join('.');
  return `its output does not match the invoke's declared output schema${field ? ` at field "${field}"` : ''}`;
}

/**
 * Invoke outcomes the machine handles whose declared output schema gives no
 * sample, and that the samples do not cover: their done event would carry no output.
 */
export function unsampledOutcomes(machine: AnyStateMachine, given: ReadonlySet<string>): string[] {
  return machine.events.filter((type) => {
    const outcome = invokeOutcomeOf(type);
    if (!outcome?.done || given.has(type)) return false;
    const schema = declaredOutput(invokedLogic(machine, outcome.id));
    return schema !== undefined && sampleOutput(schema) === undefined;
  });
}
