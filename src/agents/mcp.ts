/**
 * A store served over the Model Context Protocol (`agentcharts mcp`), built on
 * `@modelcontextprotocol/sdk` (an optional peer dependency: only this module
 * and the command load it).
 *
 * A session is bound to one actor at a time. Its tools are four fixed ones
 * (`list_actors`, `read_actor`, `create_actor`, `bind_actor`) plus **one tool per
 * event the bound actor accepts now**, named after the event, with the event's
 * payload as its JSON Schema. One tool per event rather than one `send_event`
 * tool with a union schema: each move carries its own description and exact
 * schema, the model picks a move by name, and a move that is not legal now is
 * simply not on the list; the list follows the actor's state
 * (`notifications/tools/list_changed` after every transition the session sees).
 * A tool call is a durable send; an illegal or ill-formed call is a tool error
 * with the typed reason and changes nothing. The session acts for one role
 * (default `agent`, which is never offered an approval) within an actor scope,
 * and every move it makes is recorded with `metadata` (who made it). Whether it
 * may create actors is `mayCreate` (served over HTTP: operator keys only, see
 * {@link CREATOR_ROLES}). A failure that is not a typed refusal reaches the
 * client as `internal`, with no message of its own.
 *
 * Resources: `agentcharts://actors/<id>` (state and context), `…/trail`, and
 * `…/diagram` when a diagram renderer is given.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AnyStateMachine } from 'xstate';
import * as z from 'zod';
import type { ChartDefinition } from '../core/chart.ts';
import { AgentchartsError } from '../core/errors.ts';
import { coversActor, listInScope } from '../core/scope.ts';
import { stateLabel } from '../core/state.ts';
import { createDurableActor, getRuntime } from '../durable/open.ts';
import type { LiveActor } from '../durable/notices.ts';
import type { ActorRow, Store } from '../store/types.ts';
import { getEventSchemas } from '../strict/events.ts';
import { executeMove, toolsFor, type AgentTool, type ToolsOptions } from './tools.ts';

export interface McpServerOptions {
  store: Store;
  /** Charts actors may run (their schemas, samples and descriptions). */
  charts: readonly ChartDefinition[];
  /** The role this session acts for (default `agent`). */
  role?: string | undefined;
  /** Who is calling: filled into signer fields (a vote's voter). */
  identity?: string | undefined;
  /** Actor ids the session may see and drive (exact, or `prefix*`); default every actor. */
  actors?: readonly string[] | undefined;
  /** An actor to bind at start. */
  bind?: string | undefined;
  /** Renders a machine's diagram (Mermaid) for the `…/diagram` resource. */
  diagram?: ((machine: AnyStateMachine) => string) | undefined;
  version?: string | undefined;
  /**
   * Whether the session may create actors (`create_actor`). Default true: on
   * stdio the caller owns the store anyway. `agentcharts serve` allows it to
   * {@link CREATOR_ROLES} only: creating an actor sets its input, and a
   * workflow's input names who decides (a team's voters).
   */
  mayCreate?: boolean | undefined;
  /**
   * Recorded on the trail row of every move and creation the session makes:
   * who made it (`{ via: 'mcp', keyId }` over HTTP).
   */
  metadata?: Record<string, unknown> | undefined;
  /** Where failures that are not typed refusals are logged (with the id the client is given). */
  logger?: Logger | undefined;
}

/**
 * The roles that may create actors over `/mcp` of `agentcharts serve`: an
 * operator's key. An agent works on actors someone else created (`bind_actor`),
 * so it cannot make a workflow in which it alone votes.
 */
export const CREATOR_ROLES: readonly string[] = ['operator'];

/** A refusal of a fixed tool, as a tool error. */
class McpRefusal extends AgentchartsError {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super('MCP_REFUSED', message);
  }
}

const FIXED = {
  list_actors: {
    description: 'List actors this session may see (id, machine, state, status).',
    schema: z.strictObject({
      machine: z.string().min(1).max(200).optional(),
      limit: z.number().int().min(1).max(100).optional(),
    }),
  },
  read_actor: {
    description:
      'Read one actor (default: the bound one): its state, context, the moves it accepts now and its last transitions.',
    schema: z.strictObject({ actorId: z.string().min(1).max(200).optional() }),
  },
  create_actor: {
    description: 'Create an actor of a chart and bind this session to it.',
    schema: z.strictObject({
      machine: z.string().min(1).max(200),
      actorId: z.string().min(1).max(200),
      input: z.unknown().optional(),
    }),
  },
  bind_actor: {
    description: 'Bind this session to an actor: its legal moves become the tools of this session.',
    schema: z.strictObject({ actorId: z.string().min(1).max(200) }),
  },
} as const;
type FixedName = keyof typeof FIXED;
/** The fixed tools as listed (their JSON Schemas built once). */
const FIXED_TOOLS: readonly Tool[] = Object.entries(FIXED).map(
  ([name, { description, schema }]) => ({
    name,
    description,
    inputSchema: z.toJSONSchema(schema) as Tool['inputSchema'],
  }),
);
const isFixed = (name: string): name is FixedName => Object.hasOwn(FIXED, name);
/** Actors `list_actors` and the resource list read at most. */
const LIST_LIMIT = 100;

const result = (value: unknown, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value as Record<string, unknown>,
  isError,
});

const RESOURCE = /^agentcharts:\/\/actors\/([^/]+)(\/trail|\/diagram)?$/;

/** An MCP server over a store; connect it to a transport (`server.connect(transport)`). */
export function createMcpServer(options: McpServerOptions): {
  server: Server;
  /** The actor this session is bound to, if any. */
  bound(): string | undefined;
  close(): Promise<void>;
} {
  const { store } = options;
  const runtime = getRuntime(store, { charts: options.charts });
  const byMachine = new Map(options.charts.map((c) => [c.machine.id, c]));
  const server = new Server(
    { name: 'agentcharts', version: options.version ?? '0.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: {} } },
  );
  let bound: LiveActor | undefined;
  let watching: { unsubscribe(): void } | undefined;

  const inScope = (actorId: string) => coversActor(options.actors, actorId);
  const mayCreate = options.mayCreate !== false;
  const fixedTools = mayCreate ? FIXED_TOOLS : FIXED_TOOLS.filter((t) => t.name !== 'create_actor');
  /** Actors of the session's scope, read through it (no other actor is read past). */
  const listed = async (machineId: string | undefined, limit: number): Promise<ActorRow[]> => {
    const list = (afterId: string | undefined, n: number) =>
      store.listActors({ machineId, afterId, limit: n });
    if (options.actors === undefined) return list(undefined, limit);
    return (await listInScope(list, options.actors, { limit })).rows;
  };
  const toolOptions = (machine: AnyStateMachine): ToolsOptions => {
    const chart = byMachine.get(machine.id);
    return {
      schemas: chart?.events ?? getEventSchemas(machine),
      samples: chart?.eventSamples,
      role: options.role ?? 'agent',
      identity: options.identity,
      metadata: options.metadata,
    };
  };
  /** A failure that is not a typed refusal: logged here, `internal` to the client. */
  const internal = (error: unknown, where: string): string => {
    const requestId = randomUUID();
    options.logger?.error({ err: error, requestId, where }, 'MCP request failed');
    return requestId;
  };
  const moves = (actor: LiveActor): AgentTool[] => toolsFor(actor, toolOptions(actor.machine));

  const changed = (): void => {
    // A client that went away cannot be told; the next list is fresh anyway.
    server.sendToolListChanged().catch(() => undefined);
  };

  const load = async (actorId: string): Promise<LiveActor> => {
    if (!inScope(actorId)) {
      throw new McpRefusal(
        'actor_not_in_scope',
        `actor "${actorId}" is outside this session's scope`,
      );
    }
    if (!(await store.loadActor(actorId))) {
      throw new McpRefusal('actor_not_found', `no actor "${actorId}"`);
    }
    return runtime.actor(actorId);
  };

  const bind = (actor: LiveActor): void => {
    watching?.unsubscribe();
    bound = actor;
    // Transitions this process makes (timers, other sessions) change the menu too.
    watching = actor.subscribe(changed);
    changed();
  };

  const describeActor = async (actor: LiveActor) => {
    const snapshot = actor.getSnapshot();
    const trail = await store.history(actor.id, {
      afterSeq: Math.max(0, actor.version - 20),
      limit: 20,
    });
    return {
      actorId: actor.id,
      machine: actor.machine.id,
      state: stateLabel(snapshot.value),
      status: snapshot.status,
      version: actor.version,
      context: snapshot.context as unknown,
      moves: moves(actor).map((t) => t.name),
      trail: trail.map((r) => ({
        seq: r.seq,
        event: r.eventType,
        from: r.fromState,
        to: r.toState,
        at: r.at,
      })),
    };
  };

  const callFixed = async (name: FixedName, args: unknown): Promise<CallToolResult> => {
    const parsed = FIXED[name].schema.safeParse(args ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return result(
        {
          ok: false,
          error: {
            kind: 'invalid_arguments',
            field: issue?.path.map(String).join('.') ?? '',
            message: issue?.message ?? 'invalid arguments',
          },
        },
        true,
      );
    }
    const data = parsed.data as Record<string, unknown>;
    switch (name) {
      case 'list_actors': {
        const rows = await listed(
          data['machine'] as string | undefined,
          (data['limit'] as number | undefined) ?? 50,
        );
        return result({
          ok: true,
          actors: rows.map((r) => ({
            id: r.id,
            machine: r.machineId,
            state: r.state,
            status: r.status,
          })),
        });
      }
      case 'read_actor': {
        // Without an id, the actor the session is bound to.
        const actorId = (data['actorId'] as string | undefined) ?? bound?.id;
        if (actorId === undefined) {
          throw new McpRefusal('not_bound', 'name an actorId, or bind an actor first');
        }
        const actor = await load(actorId);
        await actor.reload();
        return result({ ok: true, ...(await describeActor(actor)) });
      }
      case 'bind_actor': {
        const actor = await load(data['actorId'] as string);
        await actor.reload();
        bind(actor);
        return result({ ok: true, ...(await describeActor(actor)) });
      }
      case 'create_actor': {
        if (!mayCreate) {
          throw new McpRefusal(
            'role_may_not_create',
            `role ${options.role ?? 'agent'} may not create actors here (only ${CREATOR_ROLES.join(', ')}); bind_actor an existing one`,
          );
        }
        const actorId = data['actorId'] as string;
        const chart = byMachine.get(data['machine'] as string);
        if (!chart) {
          throw new McpRefusal(
            'unknown_machine',
            `no chart "${String(data['machine'])}"; charts: ${[...byMachine.keys()].join(', ')}`,
          );
        }
        if (!inScope(actorId)) {
          throw new McpRefusal(
            'actor_not_in_scope',
            `actor "${actorId}" is outside this session's scope`,
          );
        }
        const actor = await createDurableActor(chart.machine, {
          id: actorId,
          store,
          input: (data['input'] ?? chart.defaultInput) as never,
          schemas: chart.events,
          mode: 'create',
          ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
        });
        bind(actor);
        return result({ ok: true, ...(await describeActor(actor)) });
      }
    }
  };

  /**
   * Runs a request's work: a typed refusal becomes an `InvalidParams` error with
   * its own message; anything else an `InternalError` saying nothing of it.
   */
  const guarded = async <T>(where: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof McpRefusal) {
        throw new McpError(ErrorCode.InvalidParams, error.message, { kind: error.reason });
      }
      const requestId = internal(error, where);
      throw new McpError(ErrorCode.InternalError, 'internal error', { requestId });
    }
  };

  const ready =
    options.bind === undefined
      ? Promise.resolve()
      : load(options.bind).then((actor) => {
          bound = actor;
          watching = actor.subscribe(changed);
        });
  // A bad --actor fails the first request that needs it, not the process.
  const started = ready.catch(() => undefined);

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    await started;
    const tools: Tool[] = [...fixedTools];
    const actor = bound;
    if (actor) {
      // Another process may have moved it: the menu is the stored state's.
      await guarded('tools/list', () => actor.reload());
      for (const move of moves(actor)) {
        tools.push({
          name: move.name,
          description: `${move.description} [${actor.id}, in ${actor.state}]`,
          inputSchema: move.inputSchema as Tool['inputSchema'],
        });
      }
    }
    return { tools };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    await started;
    const { name, arguments: args } = request.params;
    try {
      if (isFixed(name)) return await callFixed(name, args);
      if (!bound) {
        return result(
          {
            ok: false,
            error: {
              kind: 'not_bound',
              message: 'bind an actor first (bind_actor or create_actor)',
            },
          },
          true,
        );
      }
      // Not a legal move now (or never one for this role): refused, nothing is sent.
      const outcome = await executeMove(bound, name, args ?? {}, toolOptions(bound.machine));
      if (outcome.ok) changed();
      return result(outcome, !outcome.ok);
    } catch (error) {
      if (error instanceof McpRefusal) {
        return result({ ok: false, error: { kind: error.reason, message: error.message } }, true);
      }
      const requestId = internal(error, `tools/call ${name}`);
      return result(
        { ok: false, error: { kind: 'internal', message: 'internal error', requestId } },
        true,
      );
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    await started;
    const rows = await guarded('resources/list', () => listed(undefined, LIST_LIMIT));
    const resources = rows.map((r) => ({
      uri: `agentcharts://actors/${encodeURIComponent(r.id)}`,
      name: r.id,
      description: `${r.machineId} in ${r.state} (${r.status})`,
      mimeType: 'application/json',
    }));
    if (bound) {
      const id = encodeURIComponent(bound.id);
      resources.push({
        uri: `agentcharts://actors/${id}/trail`,
        name: `${bound.id} trail`,
        description: 'its transitions, oldest first (last 100)',
        mimeType: 'application/json',
      });
      if (options.diagram) {
        resources.push({
          uri: `agentcharts://actors/${id}/diagram`,
          name: `${bound.id} diagram`,
          description: 'its chart as a Mermaid state diagram',
          mimeType: 'text/plain',
        });
      }
    }
    return { resources };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const match = RESOURCE.exec(uri);
    if (!match?.[1] || (match[2] === '/diagram' && !options.diagram)) {
      throw new McpError(ErrorCode.InvalidParams, `no resource ${uri}`);
    }
    const id = decodeURIComponent(match[1]);
    const text = await guarded('resources/read', async () => {
      const actor = await load(id);
      await actor.reload();
      if (match[2] === '/trail') {
        const rows = await store.history(actor.id, {
          afterSeq: Math.max(0, actor.version - 100),
          limit: 100,
        });
        return JSON.stringify(
          rows.map((r) => ({
            seq: r.seq,
            event: r.eventType,
            from: r.fromState,
            to: r.toState,
            at: r.at,
          })),
        );
      }
      if (match[2] === '/diagram') return options.diagram?.(actor.machine) ?? '';
      return JSON.stringify(await describeActor(actor));
    });
    const mimeType = match[2] === '/diagram' ? 'text/plain' : 'application/json';
    return { contents: [{ uri, mimeType, text }] };
  });

  return {
    server,
    bound: () => bound?.id,
    async close() {
      watching?.unsubscribe();
      await server.close();
    },
  };
}
