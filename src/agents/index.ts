export {
  legalEvents,
  type ActorLike,
  type LegalEvent,
  type LegalEventsOptions,
} from './legal-events.ts';
