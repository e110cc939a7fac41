/**
 * An actor's moves as Vercel AI SDK tools (`import { aiTools, aiActiveTools }
 * from 'agentcharts/ai'`; `ai` is an optional peer dependency).
 *
 * The AI SDK takes its tool set once per call, so `aiTools` holds every move the
 * role could ever make on this chart, and `aiActiveTools` names the ones legal
 * now, for `prepareStep`: the model is shown only legal moves at each step. A
 * call to any other (a stale menu, a guessed name) is answered, not thrown: the
 * tool's result is `ok: false` with the typed reason and the moves legal now, so
 * the model can recover on its next step.
 *
 * @example
 * await generateText({
 *   model,
 *   tools: aiTools(task, catalog),
 *   prepareStep: () => ({ activeTools: aiActiveTools(task, catalog) }),
 *   stopWhen: stepCountIs(10),
 *   prompt: 'Refund order 42',
 * });
 *
 * @module agentcharts/ai
 */
import { jsonSchema, tool, type ToolSet } from 'ai';
import type { AnyStateMachine } from 'xstate';
import { sendableEvents } from './legal-events.ts';
import {
  argumentsSchema,
  describe,
  executeMove,
  toolsFor,
  type SendableActor,
  type ToolsOptions,
} from './tools.ts';
import { EXPECTED, isActor, isMachine, requireArg, requireOptions } from '../core/options.ts';

/** Every move the role could make on the actor's chart, each executing only when legal. */
export function aiTools(actor: SendableActor, options: ToolsOptions = {}): ToolSet {
  requireArg('aiTools', 'actor', isActor(actor), EXPECTED.actor);
  requireOptions('aiTools', options);
  return aiMoveTools(actor.machine, options, (name, input) =>
    executeMove(actor, name, input, options),
  );
}

/**
 * Every move the role could make on actors of `machine`, as AI SDK tools whose
 * calls go to `execute` (a direct send, or an MCP client's `callTool`).
 */
export function aiMoveTools(
  machine: AnyStateMachine,
  options: ToolsOptions,
  execute: (name: string, input: Record<string, unknown>) => Promise<unknown>,
): ToolSet {
  requireArg('aiMoveTools', 'machine', isMachine(machine), EXPECTED.machine);
  requireOptions('aiMoveTools', options);
  requireArg('aiMoveTools', 'execute', typeof execute === 'function', 'a function running a move');
  const role = options.role ?? 'agent';
  return Object.fromEntries(
    sendableEvents(machine, options)
      .filter((event) => event.roles.includes(role))
      .map((event) => [
        event.type,
        tool({
          description: describe(event),
          inputSchema: jsonSchema<Record<string, unknown>>(
            argumentsSchema(event, options.identity),
          ),
          execute: (input) => execute(event.type, input),
        }),
      ]),
  );
}

/** The names of the moves legal now, for `prepareStep: () => ({ activeTools })`. */
export function aiActiveTools(actor: SendableActor, options: ToolsOptions = {}): string[] {
  return toolsFor(actor, options).map((t) => t.name);
}
