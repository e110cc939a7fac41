/**
 * An actor's legal moves as tools, framework-free: one tool per event the actor
 * accepts now (name, description, JSON Schema of the payload, `execute`), for
 * the OpenAI Agents SDK, LangChain, an MCP server or a hand-written loop. The
 * menu is rebuilt from the actor's state each time it is asked for, so a move
 * that is not legal now is not offered; a call that is ill-formed or no longer
 * legal (another worker moved the actor) returns a typed refusal the model can
 * read, never throws, and changes nothing.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventFromLogic, EventObject } from 'xstate';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  StoreError,
} from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import type { ActorLike, LegalEvent, LegalEventsOptions } from './legal-events.ts';
import { legalEvents, whyNot, type BlockedReason } from './legal-events.ts';
import { EXPECTED, isActor, isOptionsBag, requireArg, requireOptions } from '../core/options.ts';

/** What a tool call answers: the state it led to and the moves now legal, or why it was refused. */
export type ToolResult =
  | { ok: true; event: string; state: string; status: string; legal: string[] }
  | {
      ok: false;
      event: string;
      error: {
        /** `invalid_event` (payload), `invalid_transition` (not legal now), `conflict`, `store`. */
        kind: 'invalid_event' | 'invalid_transition' | 'conflict' | 'store';
        message: string;
        reason?: string | undefined;
        field?: string | undefined;
        /** For an invalid payload: the schema's further problems, so the model fixes them in one go. */
        more?: ReadonlyArray<{ reason: string; field?: string | undefined }> | undefined;
        state?: string | undefined;
        /** For a move not legal now: why (not in this state, which guards said no, not this role's). */
        why?: BlockedReason | { reason: 'role'; roles: readonly string[] } | undefined;
      };
      legal: string[];
    };

/**
 * The arguments of move `K`: the payload of the chart's event of that type,
 * without `type` (any object for an actor whose events are not typed).
 */
export type MoveInput<TEvent extends EventObject, K extends string> = EventObject extends TEvent
  ? Record<string, unknown>
  : Omit<Extract<TEvent, { type: K }>, 'type'>;

/** One legal move of type `K`, as a tool. */
export interface AgentToolOf<TEvent extends EventObject, K extends string> {
  /** The event type (`APPROVAL_GRANTED`). */
  name: K;
  description: string;
  /** JSON Schema of the call's arguments: the event's payload, without `type` or the signer field. */
  inputSchema: Record<string, unknown>;
  kind: LegalEvent['kind'];
  /** Sends `{ type: name, ...input }` to the actor; resolves with a {@link ToolResult}. */
  execute(input: MoveInput<TEvent, K>): Promise<ToolResult>;
}

/**
 * One legal move, as a tool: for an actor of a typed chart, a union over its
 * event types, so that narrowing on `name` types `execute`'s arguments.
 */
export type AgentTool<TEvent extends EventObject = EventObject> = {
  [K in TEvent['type']]: AgentToolOf<TEvent, K>;
}[TEvent['type']];

/** An actor that takes events: a durable actor (send resolves once committed) or a strict one. */
export interface SendableActor<TLogic extends AnyStateMachine = AnyStateMachine> extends ActorLike {
  readonly machine: TLogic;
  send(event: never): unknown;
}

/** The events of a sendable actor's machine. */
type EventsOf<TLogic extends AnyStateMachine> = EventFromLogic<TLogic> & EventObject;

export interface ToolsOptions extends LegalEventsOptions {
  /**
   * The role the tools act for (default `agent`): events whose roles exclude it
   * (an approval, for an agent) are never offered.
   */
  role?: string | undefined;
  /**
   * Who is calling: filled into each event's signer field (a vote's `voterId`),
   * which is then not part of the tool's arguments.
   */
  identity?: string | undefined;
  /**
   * Recorded on the trail row of every move a tool makes (a durable actor's
   * `send(event, metadata)`): who moved it, e.g. `{ via: 'mcp', keyId }`.
   */
  metadata?: Record<string, unknown> | undefined;
}

/** The event's payload schema as tool arguments: `type` and the signer field left out. */
export function argumentsSchema(
  event: LegalEvent,
  identity: string | undefined,
): Record<string, unknown> {
  const schema = event.schema ?? { type: 'object', properties: {}, additionalProperties: false };
  const drop = new Set(['type', ...(identity !== undefined && event.signer ? [event.signer] : [])]);
  const properties = Object.fromEntries(
    Object.entries((schema['properties'] as Record<string, unknown> | undefined) ?? {}).filter(
      ([key]) => !drop.has(key),
    ),
  );
  const required = ((schema['required'] as string[] | undefined) ?? []).filter((k) => !drop.has(k));
  const { $schema: _ignored, ...rest } = schema;
  return { ...rest, type: 'object', properties, required };
}

export function describe(event: LegalEvent): string {
  const base = event.description ?? `Send ${event.type}.`;
  return event.kind === 'approval' ? `${base} (an approval decision)` : base;
}

/** The typed refusal of a failed send; anything untyped is rethrown. */
function refusal(error: unknown): Extract<ToolResult, { ok: false }>['error'] {
  if (error instanceof InvalidEventError) {
    return {
      kind: 'invalid_event',
      message: error.message,
      reason: error.reason,
      field: error.field,
      ...(error.more === undefined
        ? {}
        : { more: error.more.map(({ reason, field }) => ({ reason, field })) }),
    };
  }
  if (error instanceof InvalidTransitionError) {
    return { kind: 'invalid_transition', message: error.message, state: error.state };
  }
  if (error instanceof ConcurrencyError) {
    return { kind: 'conflict', message: 'another writer moved the actor; look again and retry' };
  }
  // The store's own detail (a driver message) stays in the process.
  if (error instanceof StoreError) {
    return {
      kind: 'store',
      message: `the store could not ${error.operation === 'commit' ? 'write' : 'answer'} (${error.kind}); retry`,
      reason: error.kind,
    };
  }
  throw error;
}

/**
 * The actor's legal moves now, as tools. Call it again after each move (or on
 * every model turn): the list follows the actor's state.
 *
 * @example
 * const tools = toolsFor(task, { schemas: chart.events, samples: chart.eventSamples });
 * const result = await tools.find((t) => t.name === 'COMPLETE')?.execute({ result: 'refunded' });
 */
export function toolsFor<TLogic extends AnyStateMachine>(
  actor: SendableActor<TLogic>,
  options: ToolsOptions = {},
): Array<AgentTool<EventsOf<TLogic>>> {
  requireArg('toolsFor', 'actor', isActor(actor), EXPECTED.actor);
  requireOptions('toolsFor', options);
  return toolsFrom(actor, ownMoves(legalEvents(actor, options), options), options);
}

/** The legal events the options' role may send. */
function ownMoves(events: LegalEvent[], options: ToolsOptions): LegalEvent[] {
  const role = options.role ?? 'agent';
  return events.filter((e) => e.roles.includes(role));
}

/** Tools for these (legal, own) events of the actor. */
function toolsFrom(actor: SendableActor, events: LegalEvent[], options: ToolsOptions): AgentTool[] {
  const legalNow = (): string[] =>
    ownMoves(legalEvents(actor, options), options).map((e) => e.type);
  return events.map((event) => ({
    name: event.type,
    description: describe(event),
    inputSchema: argumentsSchema(event, options.identity),
    kind: event.kind,
    async execute(input: Record<string, unknown>): Promise<ToolResult> {
      const payload: Record<string, unknown> =
        typeof input === 'object' && input !== null && !Array.isArray(input) ? { ...input } : {};
      delete payload['type'];
      if (options.identity !== undefined && event.signer !== undefined) {
        payload[event.signer] = options.identity;
      }
      try {
        const move = { ...payload, type: event.type };
        // A durable actor records the metadata on the move's trail row; a strict one ignores it.
        const target = actor as unknown as {
          send(e: EventObject, metadata?: Record<string, unknown>): unknown;
        };
        const sent = (await (options.metadata === undefined
          ? target.send(move)
          : target.send(move, options.metadata))) as AnyMachineSnapshot | undefined;
        const snapshot = sent ?? actor.getSnapshot();
        return {
          ok: true,
          event: event.type,
          state: stateLabel(snapshot.value),
          status: snapshot.status,
          legal: legalNow(),
        };
      } catch (error) {
        const refused = refusal(error);
        if (refused.kind === 'invalid_transition') {
          refused.why = whyNot(actor, event.type, options, { ...payload, type: event.type });
        }
        return { ok: false, event: event.type, error: refused, legal: legalNow() };
      }
    },
  }));
}

/**
 * Calls the move `name` if it is legal now for the role; otherwise a typed
 * refusal naming the moves that are. For tools built once and kept across states.
 */
export function executeMove<
  TLogic extends AnyStateMachine,
  K extends EventsOf<TLogic>['type'] & string,
>(
  actor: SendableActor<TLogic>,
  name: K,
  input: MoveInput<EventsOf<TLogic>, K>,
  options: ToolsOptions = {},
): Promise<ToolResult> {
  requireArg('executeMove', 'actor', isActor(actor), EXPECTED.actor);
  requireArg('executeMove', 'name', typeof name === 'string', EXPECTED.string);
  requireArg('executeMove', 'input', isOptionsBag(input), "an object of the move's fields");
  requireOptions('executeMove', options);
  const legal = legalEvents(actor, options);
  const own = ownMoves(legal, options);
  const event = own.find((e) => e.type === name);
  if (event) return (toolsFrom(actor, [event], options)[0] as AgentTool).execute(input);
  // Legal, but for other roles (an approval asked for by an agent); else why not legal.
  const forOthers = legal.find((e) => e.type === name);
  return Promise.resolve({
    ok: false,
    event: name,
    error: {
      kind: 'invalid_transition',
      message: `"${name}" is not a move this actor accepts now for role ${options.role ?? 'agent'}`,
      state: stateLabel(actor.getSnapshot().value),
      why: forOthers ? { reason: 'role', roles: forOthers.roles } : whyNot(actor, name, options),
    },
    legal: own.map((e) => e.type),
  });
}
