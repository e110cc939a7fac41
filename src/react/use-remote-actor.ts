import { useEffect, useState } from 'react';
import {
  INITIAL_STATE,
  followRemoteActor,
  type RemoteActorOptions,
  type RemoteActorState,
} from './follow.ts';

/**
 * A React hook that follows a durable actor of a remote agentcharts server: its
 * state, status and context, re-read whenever the server's live stream reports a
 * move, typed by the chart's machine when given
 * (`useRemoteActor<typeof machine>(id)`). Same site: the session cookie is sent. Another site: pass `ticket`, a
 * function that gets a single-use stream ticket from your backend; the server
 * must allow your origin (`agentcharts serve --cors-origin …`).
 *
 * @example
 * const { actor, context, connected } = useRemoteActor<typeof refundMachine>('refund-42', {
 *   server: 'https://agents.example.com',
 *   ticket: () => fetch('/my-backend/agentcharts-ticket').then((r) => r.text()),
 * });
 * return <p>{actor?.state ?? '…'}</p>;
 */
export function useRemoteActor<TLogic = unknown>(
  actorId: string,
  options: RemoteActorOptions = {},
): RemoteActorState<TLogic> {
  const [state, setState] = useState<RemoteActorState>(INITIAL_STATE);
  const { server, ticket, EventSource, fetch } = options;
  useEffect(() => {
    setState(INITIAL_STATE);
    return followRemoteActor(actorId, { server, ticket, EventSource, fetch }, setState);
  }, [actorId, server, ticket, EventSource, fetch]);
  // The server's JSON is the actor's own context and state: typed by its chart's machine.
  return state;
}
