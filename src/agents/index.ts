export {
  legalEvents,
  type ActorLike,
  type LegalEvent,
  type LegalEventsOptions,
} from './legal-events.ts';
export {
  toolsFor,
  type AgentTool,
  type SendableActor,
  type ToolResult,
  type ToolsOptions,
} from './tools.ts';
