import * as z from 'zod';
import type { AnyStateMachine, EventObject } from 'xstate';
import {
  InvalidEventError,
  InvalidInputError,
  MAX_EVENT_PROBLEMS,
  type EventProblem,
  type InvalidEventReason,
} from '../core/errors.ts';

export type { ChartSchemas, EventFromSchemas, EventSchemas } from '../core/chart.ts';
import { chartEvents, definedChart, type ChartSchemas, type EventSchemas } from '../core/chart.ts';
import { EXPECTED, isMachine, requireArg, requireOptions } from '../core/options.ts';
import { MAX_JSON_DEPTH, walkJson } from '../core/json.ts';
import { handlesType, namedEventTypes } from '../core/event-descriptors.ts';

/** Reads the input schema a machine declared through `setup({ schemas: { input } })`. */
export function getInputSchema(machine: AnyStateMachine): z.ZodType | undefined {
  requireArg('getInputSchema', 'machine', isMachine(machine), EXPECTED.machine);
  const schemas = machine.schemas as Partial<ChartSchemas> | undefined;
  return schemas && typeof schemas === 'object' ? schemas.input : undefined;
}

/**
 * Checks an actor's input against the machine's input schema (when it declares
 * one) and returns it unchanged; throws {@link InvalidInputError} naming the field.
 */
export function validateInput(machine: AnyStateMachine, input: unknown, actorId?: string): unknown {
  requireArg('validateInput', 'machine', isMachine(machine), EXPECTED.machine);
  const schema = getInputSchema(machine);
  if (!schema) return input;
  const result = compiled(schema).safeParse(input);
  if (result.success) return input;
  const issue = result.error.issues[0];
  throw new InvalidInputError({
    machineId: machine.id,
    actorId,
    field: issue?.path.map(String).join('.') || undefined,
    detail: issue?.code,
  });
}

/**
 * Declares a strict event schema: `{ type: <literal>, ...fields }`, extra keys rejected.
 *
 * @example
 * const events = {
 *   START: eventSchema('START', { taskId: z.string() }),
 *   CANCEL: eventSchema('CANCEL'),
 * };
 */
export function eventSchema<const TType extends string>(
  type: TType,
): z.ZodObject<{ type: z.ZodLiteral<TType> }, z.core.$strict>;
export function eventSchema<const TType extends string, const TShape extends z.ZodRawShape>(
  type: TType,
  shape: TShape,
): z.ZodObject<
  {
    -readonly [K in 'type' | keyof TShape]: K extends keyof TShape
      ? TShape[K]
      : z.ZodLiteral<TType>;
  },
  z.core.$strict
>;
export function eventSchema(type: string, shape?: z.ZodRawShape): z.ZodObject {
  // One overload without fields: a bare `eventSchema('GO')` written where an event
  // schema is expected would otherwise infer its fields as any string key.
  return z.strictObject({ type: z.literal(type), ...shape });
}

/** Default largest accepted event, as JSON bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 64 * 1024;
/** Deepest nesting of objects and arrays an event may have (deeper: refused). */
export const MAX_EVENT_DEPTH = MAX_JSON_DEPTH;

/**
 * The event schemas of a machine: those declared through `setup({ schemas: { events } })`,
 * else those of the chart it was defined with (`defineChart(machine, { events })`).
 */
export function getEventSchemas(machine: AnyStateMachine): EventSchemas | undefined {
  requireArg('getEventSchemas', 'machine', isMachine(machine), EXPECTED.machine);
  return schemasOf(machine);
}

/** `setup({ schemas: { events } })`, else the events of the chart the machine was defined with. */
function schemasOf(machine: AnyStateMachine): EventSchemas | undefined {
  const schemas = machine.schemas as Partial<ChartSchemas> | undefined;
  if (schemas && typeof schemas === 'object' && schemas.events) return schemas.events;
  return chartEvents(definedChart(machine));
}

/**
 * Every event type the machine's transitions name (excluding XState's internal ones
 * and wildcards: `'*'` and `'user.*'` name no type, though the machine takes what
 * they match).
 */
export function getMachineEventTypes(machine: AnyStateMachine): string[] {
  requireArg('getMachineEventTypes', 'machine', isMachine(machine), EXPECTED.machine);
  return namedEventTypes(machine)
    .filter((t) => !t.startsWith('xstate.'))
    .sort();
}

export interface ValidateEventOptions {
  /** Schemas to use instead of the ones on `machine.schemas`. */
  schemas?: EventSchemas | undefined;
  actorId?: string | undefined;
  maxBytes?: number | undefined;
}

/** A JSON value as carried by events. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Schema of a JSON value inside an event payload. {@link validateEvent} has
 * already walked the whole event and refused anything that is not plain JSON, so
 * this schema only types the field; zod's recursive `z.json()` would walk it again.
 */
export const jsonValue = /* @__PURE__ */ z.custom<JsonValue>((v) => v !== undefined, {
  message: 'expected a JSON value',
});

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/**
 * Checks an event against the machine's schemas and returns the parsed event.
 * Throws {@link InvalidEventError} naming the field; the message never contains
 * payload values.
 */
export function validateEvent(
  machine: AnyStateMachine,
  event: unknown,
  options: ValidateEventOptions = {},
): EventObject {
  requireArg('validateEvent', 'machine', isMachine(machine), EXPECTED.machine);
  requireOptions('validateEvent', options);
  return eventIn(machine, event, options);
}

/**
 * {@link validateEvent} without its argument checks, for the send paths of actors
 * whose machine and options were checked once, when they were created.
 */
export function eventIn(
  machine: AnyStateMachine,
  event: unknown,
  options: ValidateEventOptions,
): EventObject {
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw invalidEvent(machine, options, 'not_an_object');
  }
  // One walk reads every property once and makes the copy that is validated,
  // transitioned and stored: a getter cannot show validation one value and the log
  // another. It also refuses what JSON would change and measures the size.
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const walked = walkJson(event, { budget: maxBytes, refuseForbiddenKeys: true, copy: true });
  const copy = (walked.ok ? walked.value : undefined) as Record<string, unknown> | undefined;
  const type = walked.ok ? copy?.['type'] : (event as { type?: unknown }).type;
  if (typeof type !== 'string' || type.length === 0) {
    throw invalidEvent(
      machine,
      options,
      'invalid_field',
      undefined,
      'type',
      'expected a non-empty string',
    );
  }
  if (type.startsWith('xstate.')) {
    // XState's internal events (delayed `after` events, init) only come from the runtime.
    throw invalidEvent(
      machine,
      options,
      'unknown_type',
      type,
      'type',
      'reserved for internal events',
    );
  }
  if (!walked.ok) {
    const problem = walked.problem;
    const field = problem.path.length > 0 ? problem.path.join('.') : undefined;
    if (problem.reason === 'oversize')
      throw invalidEvent(machine, options, 'oversize', type, undefined, `over ${maxBytes} bytes`);
    throw invalidEvent(machine, options, problem.reason, type, field, problem.detail);
  }
  event = copy;

  const declared = options.schemas ?? schemasOf(machine);
  // An empty set of schemas is no schemas (a chart defined from a bare machine).
  const schemas = declared && hasAny(declared) ? declared : undefined;
  if (!schemas) {
    // No schemas declared: accept any event type the chart names, or one its
    // wildcard transitions take (`'*'`, `'user.*'`).
    if (!handlesType(machine, type)) throw invalidEvent(machine, options, 'unknown_type', type);
    return event as EventObject;
  }
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (!schema) throw invalidEvent(machine, options, 'unknown_type', type);
  const result = compiled(schema).safeParse(event);
  if (result.success) return result.data;

  const [first, ...more] = problemsOf(event, result.error.issues);
  if (first === undefined) throw invalidEvent(machine, options, 'invalid_field', type);
  throw new InvalidEventError({
    machineId: machine.id,
    actorId: options.actorId,
    eventType: type,
    ...first,
    ...(more.length > 0 ? { more } : {}),
  });
}

/**
 * The problems of zod's issues, at most {@link MAX_EVENT_PROBLEMS}: a key the
 * schema does not take is an unexpected field (one problem per key), a field
 * absent from the event a missing one, any other an invalid one. zod's messages
 * describe expected types ("expected number"), but for some codes they quote the
 * received value, so only the issue code is reported.
 */
function problemsOf(event: unknown, issues: readonly z.core.$ZodIssue[]): EventProblem[] {
  const problems: EventProblem[] = [];
  for (const issue of issues) {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({ reason: 'unexpected_field', field: [...path, key].join('.') });
      }
    } else {
      const field = path.join('.') || undefined;
      problems.push(
        valueAt(event, issue.path) === undefined
          ? { reason: 'missing_field', field }
          : { reason: 'invalid_field', field, detail: issue.code },
      );
    }
    if (problems.length >= MAX_EVENT_PROBLEMS) break;
  }
  return problems.slice(0, MAX_EVENT_PROBLEMS);
}

/** Each schema's compiled clone, made the first time it parses. */
const compiledSchemas = /* @__PURE__ */ new WeakMap<object, z.ZodType>();

/**
 * `schema` compiled by zod's own `z.compile`: a generated parser for the happy
 * path (a tenth of the interpreted parse's cost on an event), the interpreted
 * parser behind it for every failure, so the issues and errors are the same. Where
 * code cannot be generated (a page whose CSP forbids eval) zod returns the schema
 * as it was.
 */
function compiled<TSchema extends z.ZodType>(schema: TSchema): TSchema {
  let fast = compiledSchemas.get(schema) as TSchema | undefined;
  if (fast === undefined) {
    fast = z.compile(schema);
    compiledSchemas.set(schema, fast);
  }
  return fast;
}

/** The error {@link eventIn} throws (a function, not a closure: eventIn runs on every send). */
function invalidEvent(
  machine: AnyStateMachine,
  options: ValidateEventOptions,
  reason: InvalidEventReason,
  eventType?: string,
  field?: string,
  detail?: string,
): InvalidEventError {
  return new InvalidEventError({
    machineId: machine.id,
    actorId: options.actorId,
    eventType,
    reason,
    field,
    detail,
  });
}

/** Whether a record has an own enumerable key (without listing its keys: every send asks). */
function hasAny(record: object): boolean {
  for (const key in record) if (Object.hasOwn(record, key)) return true;
  return false;
}
