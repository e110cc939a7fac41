export {
  legalEvents,
  sendableEvents,
  whyNot,
  type BlockedReason,
  type ActorLike,
  type LegalEvent,
  type LegalEventsOptions,
} from './legal-events.ts';
export {
  executeMove,
  toolsFor,
  type AgentTool,
  type SendableActor,
  type ToolResult,
  type ToolsOptions,
} from './tools.ts';
