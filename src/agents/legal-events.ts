/**
 * Legal moves as data: the events an actor accepts in its current state, each
 * with its JSON Schema, its description, kind and roles from the chart's
 * metadata. Offered to a model as its only moves, an illegal one is not even on
 * the menu. Timer-only and internal events never appear.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import * as z from 'zod';
import { definedChart, type EventCatalog, type EventSchemas } from '../core/chart.ts';
import { getEventSchemas } from '../strict/events.ts';
import { guardText } from '../core/guard-text.ts';
import { chartMeta, type EventInfo, type EventKind } from '../core/meta.ts';
import { stateLabel } from '../core/state.ts';
import { EXPECTED, isMachine, requireArg, requireOptions } from '../core/options.ts';

/** One event an actor accepts now. */
export interface LegalEvent {
  type: string;
  kind: EventKind;
  /** Roles that may send it from outside (the server's keys). */
  roles: readonly string[];
  description: string | undefined;
  /** The payload field naming the sender, filled from the caller's identity. */
  signer: string | undefined;
  /** JSON Schema of the whole event (`type` included), when the chart has a schema for it. */
  schema: Record<string, unknown> | undefined;
  /**
   * `evaluated`: its guards passed for the event type alone; `by-sample`: only for
   * one of the chart's sample payloads (the guards read the payload).
   */
  decidedBy: 'evaluated' | 'by-sample';
}

/** What {@link legalEvents} reads: a strict or durable actor, or any snapshot holder. */
export interface ActorLike {
  readonly machine: AnyStateMachine;
  getSnapshot(): AnyMachineSnapshot;
}

export interface LegalEventsOptions {
  /** Event payload schemas (a chart's `events`); without them no schema is given. */
  schemas?: EventSchemas | undefined;
  /** Sample events (a chart's `eventSamples`), tried when a guard reads the payload. */
  samples?: EventCatalog | undefined;
}

const jsonSchemas = new WeakMap<object, Record<string, unknown>>();

export function toJsonSchema(schema: z.ZodType): Record<string, unknown> | undefined {
  let found = jsonSchemas.get(schema);
  if (!found) {
    try {
      found = z.toJSONSchema(schema, { unrepresentable: 'any' });
    } catch {
      return undefined;
    }
    jsonSchemas.set(schema, found);
  }
  return found;
}

/** Whether `event` is enabled in `snapshot` (a guard that throws on a missing field is not). */
function enabled(snapshot: AnyMachineSnapshot, event: EventObject): boolean {
  try {
    return snapshot.can(event);
  } catch {
    return false;
  }
}

/**
 * The options, with the machine's event schemas (its own, or its chart's) and its
 * chart's samples where they give none: a chart's payloads describe its tools.
 */
function chartDefaults<T extends LegalEventsOptions>(machine: AnyStateMachine, options: T): T {
  const schemas = options.schemas ?? getEventSchemas(machine);
  const samples = options.samples ?? definedChart(machine)?.eventSamples;
  return {
    ...options,
    ...(schemas !== undefined ? { schemas } : {}),
    ...(samples !== undefined ? { samples } : {}),
  };
}

const ACTOR_LIKE = 'an actor, or { machine, getSnapshot() }';
function isActorLike(v: unknown): boolean {
  const a = v as { machine?: unknown; getSnapshot?: unknown } | null;
  return isMachine(a?.machine) && typeof a?.getSnapshot === 'function';
}

/**
 * The events `actor` accepts in its current state, in the chart's order.
 *
 * @example
 * legalEvents(task, { schemas: chart.events, samples: chart.eventSamples })
 *   .map((e) => e.type); // ['APPROVAL_DENIED', 'APPROVAL_GRANTED'] while paused
 */
export function legalEvents(actor: ActorLike, given: LegalEventsOptions = {}): LegalEvent[] {
  requireArg('legalEvents', 'actor', isActorLike(actor), ACTOR_LIKE);
  requireOptions('legalEvents', given);
  const options = chartDefaults(actor.machine, given);
  const snapshot = actor.getSnapshot();
  if (snapshot.status !== 'active') return [];
  const meta = chartMeta(actor.machine);
  const out: LegalEvent[] = [];
  for (const info of meta.events) {
    if (info.kind === 'timer-only' || info.kind === 'internal') continue;
    let decidedBy: LegalEvent['decidedBy'] | undefined;
    if (enabled(snapshot, { type: info.type })) decidedBy = 'evaluated';
    else {
      const samples = options.samples?.[info.type] ?? [];
      if (samples.some((sample) => enabled(snapshot, sample))) decidedBy = 'by-sample';
    }
    if (decidedBy === undefined) continue;
    out.push(describeEvent(info, options, decidedBy));
  }
  return out;
}

/** An event of the chart's metadata as a {@link LegalEvent}, with its JSON Schema. */
function describeEvent(
  info: EventInfo,
  options: Pick<LegalEventsOptions, 'schemas'>,
  decidedBy: LegalEvent['decidedBy'],
): LegalEvent {
  const schema =
    options.schemas && Object.hasOwn(options.schemas, info.type)
      ? options.schemas[info.type]
      : undefined;
  return {
    type: info.type,
    kind: info.kind,
    roles: info.roles,
    description: info.description,
    signer: info.signer,
    schema: schema ? toJsonSchema(schema) : undefined,
    decidedBy,
  };
}

/**
 * Every event a caller could ever send to actors of this machine (commands and
 * approvals, never timer-only or internal ones), legal now or not, with the same
 * fields as {@link legalEvents} (`decidedBy` is `evaluated`): the fixed menu of a
 * framework that wants all tools up front and narrows them per step.
 */
export function sendableEvents(
  machine: AnyStateMachine,
  given: Pick<LegalEventsOptions, 'schemas'> = {},
): LegalEvent[] {
  requireArg('sendableEvents', 'machine', isMachine(machine), EXPECTED.machine);
  requireOptions('sendableEvents', given);
  const options = chartDefaults(machine, given);
  return chartMeta(machine)
    .events.filter((info) => info.kind === 'command' || info.kind === 'approval')
    .map((info) => describeEvent(info, options, 'evaluated'));
}

/** Why an event is not among the legal moves now. */
export interface BlockedReason {
  type: string;
  state: string;
  reason:
    | 'legal'
    /** The actor finished: it accepts nothing. */
    | 'not_active'
    /** No state the actor is in has a transition for it. */
    | 'not_in_state'
    /** Transitions exist, and their guards said no (named in `guards`). */
    | 'guard'
    /** Only the actor's timers send it. */
    | 'timer_only'
    /** Only the runtime or another actor sends it. */
    | 'internal'
    /** The chart has no such event. */
    | 'unknown_event';
  /** The guards of the transitions that could have taken it (`reason: 'guard'`). */
  guards?: string[];
}

/**
 * Why `type` is (or is not) a legal move of the actor now: the reason a model
 * can read when it asked for a move that is not on its menu.
 *
 * @example
 * whyNot(team, 'VOTE').guards; // ['and(voteIsValid, isApproval, reachesThreshold)', …]
 */
export function whyNot(
  actor: ActorLike,
  type: string,
  options: LegalEventsOptions = {},
  /** The event as sent: its payload decides guards that read it. */
  event?: EventObject,
): BlockedReason {
  requireArg('whyNot', 'actor', isActorLike(actor), ACTOR_LIKE);
  requireArg('whyNot', 'type', typeof type === 'string', EXPECTED.string);
  requireOptions('whyNot', options);
  const snapshot = actor.getSnapshot();
  const state = stateLabel(snapshot.value);
  const meta = chartMeta(actor.machine);
  const info = meta.events.find((e) => e.type === type);
  if (!info) return { type, state, reason: 'unknown_event' };
  if (info.kind === 'timer-only') return { type, state, reason: 'timer_only' };
  if (info.kind === 'internal') return { type, state, reason: 'internal' };
  if (snapshot.status !== 'active') return { type, state, reason: 'not_active' };
  const legal =
    event !== undefined
      ? enabled(snapshot, { ...event, type })
      : legalEvents(actor, options).some((e) => e.type === type);
  if (legal) return { type, state, reason: 'legal' };
  // The active state nodes and their ancestors: where a transition on `type` could be.
  const nodes = (snapshot as unknown as { _nodes: AnyStateMachine['root'][] })._nodes;
  const guards = new Set<string>();
  let candidates = 0;
  for (const node of nodes) {
    for (const t of node.transitions.get(type) ?? []) {
      candidates++;
      if (t.guard !== undefined) guards.add(guardText(t.guard));
    }
  }
  return candidates === 0
    ? { type, state, reason: 'not_in_state' }
    : { type, state, reason: 'guard', guards: [...guards] };
}
