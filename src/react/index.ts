/**
 * `agentcharts/react`: React bindings. `useRemoteActor` follows a durable actor
 * of a remote agentcharts server through its live stream; durable and strict
 * actors in the same process work with `@xstate/react`'s `useSelector` as they
 * are. Needs the optional package `react`.
 *
 * @module agentcharts/react
 */
export { useRemoteActor } from './use-remote-actor.ts';
export {
  followRemoteActor,
  type RemoteActorOptions,
  type RemoteActorState,
  type RemoteActorSummary,
} from './follow.ts';
