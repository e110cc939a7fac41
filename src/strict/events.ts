import { z } from 'zod';
import type { AnyStateMachine, EventObject } from 'xstate';
import { InvalidEventError, InvalidInputError, type InvalidEventReason } from './errors.ts';

/**
 * Event schemas of a machine, keyed by event type. Each schema is a strict zod
 * object whose `type` is the literal key. They are the single source of both the
 * TypeScript event type ({@link EventFromSchemas}) and the runtime check.
 */
export type EventSchemas = Readonly<Record<string, z.ZodType<EventObject>>>;

/** The event union described by a record of event schemas. */
export type EventFromSchemas<T extends EventSchemas> = z.infer<T[keyof T]>;

/** What a chart carries in `setup({ schemas })`, readable back from `machine.schemas`. */
export interface ChartSchemas<T extends EventSchemas = EventSchemas> {
  events: T;
  /** Schema of the machine's input, checked before an actor is created. */
  input?: z.ZodType;
}

/** Reads the input schema a machine declared through `setup({ schemas: { input } })`. */
export function getInputSchema(machine: AnyStateMachine): z.ZodType | undefined {
  const schemas = machine.schemas as Partial<ChartSchemas> | undefined;
  return schemas && typeof schemas === 'object' ? schemas.input : undefined;
}

/**
 * Checks an actor's input against the machine's input schema (when it declares
 * one) and returns it unchanged; throws {@link InvalidInputError} naming the field.
 */
export function validateInput(machine: AnyStateMachine, input: unknown, actorId?: string): unknown {
  const schema = getInputSchema(machine);
  if (!schema) return input;
  const result = schema.safeParse(input);
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
export function eventSchema<
  const TType extends string,
  const TShape extends z.ZodRawShape = Record<never, never>,
>(type: TType, shape?: TShape) {
  return z.strictObject({ type: z.literal(type), ...(shape ?? ({} as TShape)) });
}

/** Default largest accepted event, as JSON bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 64 * 1024;

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Reads the event schemas a machine declared through `setup({ schemas: { events } })`. */
export function getEventSchemas(machine: AnyStateMachine): EventSchemas | undefined {
  const schemas = machine.schemas as Partial<ChartSchemas> | undefined;
  return schemas && typeof schemas === 'object' && schemas.events ? schemas.events : undefined;
}

/** Every event type the machine's transitions name (excluding XState's internal ones). */
export function getMachineEventTypes(machine: AnyStateMachine): string[] {
  return [...new Set(machine.events.filter((t) => !t.startsWith('xstate.')))].sort();
}

export interface ValidateEventOptions {
  /** Schemas to use instead of the ones on `machine.schemas`. */
  schemas?: EventSchemas | undefined;
  actorId?: string | undefined;
  maxBytes?: number | undefined;
}

function findForbiddenKey(value: unknown, path: string[], depth: number): string | undefined {
  if (depth > 64 || value === null || typeof value !== 'object') return undefined;
  for (const key of Object.keys(value)) {
    if (FORBIDDEN_KEYS.has(key)) return [...path, key].join('.');
    const found = findForbiddenKey(
      (value as Record<string, unknown>)[key],
      [...path, key],
      depth + 1,
    );
    if (found) return found;
  }
  return undefined;
}

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
  const machineId = machine.id;
  const actorId = options.actorId;
  const fail = (reason: InvalidEventReason, eventType?: string, field?: string, detail?: string) =>
    new InvalidEventError({ machineId, actorId, eventType, reason, field, detail });

  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw fail('not_an_object');
  }
  const type = (event as { type?: unknown }).type;
  if (typeof type !== 'string' || type.length === 0) {
    throw fail('invalid_field', undefined, 'type', 'expected a non-empty string');
  }
  if (type.startsWith('xstate.')) {
    // XState's internal events (delayed `after` events, init) only come from the runtime.
    throw fail('unknown_type', type, 'type', 'reserved for internal events');
  }
  const forbidden = findForbiddenKey(event, [], 0);
  if (forbidden) throw fail('forbidden_key', type, forbidden);

  const maxBytes = options.maxBytes ?? DEFAULT_MAX_EVENT_BYTES;
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(event), 'utf8');
  } catch {
    throw fail('invalid_field', type, undefined, 'not JSON-serialisable');
  }
  if (size > maxBytes) throw fail('oversize', type, undefined, `${size} bytes > ${maxBytes}`);

  const schemas = options.schemas ?? getEventSchemas(machine);
  if (!schemas) {
    // No schemas declared: accept any event type the chart names.
    if (!machine.events.includes(type)) throw fail('unknown_type', type);
    return event as EventObject;
  }
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (!schema) throw fail('unknown_type', type);
  const result = schema.safeParse(event);
  if (result.success) return result.data;

  const issue = result.error.issues[0];
  if (!issue) throw fail('invalid_field', type);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    throw fail('unexpected_field', type, [...issue.path.map(String), key].join('.'));
  }
  const field = issue.path.map(String).join('.') || undefined;
  if (valueAt(event, issue.path) === undefined) throw fail('missing_field', type, field);
  // zod's messages describe expected types ("expected number"); for some codes they
  // quote the received value, so only the issue code is reported.
  throw fail('invalid_field', type, field, issue.code);
}
