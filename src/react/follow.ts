/**
 * Following an actor of a remote agentcharts server from a browser: its row and
 * context from `GET /api/actors/:id`, re-read whenever the server's live stream
 * (`/api/stream`) says it moved. No React here: `useRemoteActor` wraps it.
 */
import type {
  AnyStateMachine,
  ContextFrom,
  EventFromLogic,
  StateValue,
  StateValueFrom,
} from 'xstate';
import { labelValue } from '../core/state.ts';

/** The actor as the server shows it (the fields of `GET /api/actors/:id`'s `actor`). */
export interface RemoteActorSummary {
  id: string;
  machineId: string;
  state: string;
  stateName?: string;
  status: string;
  version: number;
  color?: string;
  category?: string;
  updatedAt: number;
}

/** The machine's context type; `unknown` when no machine type was given. */
type ContextOf<TLogic> = TLogic extends AnyStateMachine ? ContextFrom<TLogic> : unknown;
/** The machine's state values; any state value when no machine type was given. */
type ValueOf<TLogic> = TLogic extends AnyStateMachine ? StateValueFrom<TLogic> : StateValue;
/** The machine's event types; any string when no machine type was given. */
type EventTypeOf<TLogic> = TLogic extends AnyStateMachine ? EventFromLogic<TLogic>['type'] : string;

/**
 * What a follower knows of the actor now; typed by the chart's machine when one
 * is given (`useRemoteActor<typeof machine>(…)`): its context, state value and
 * event types.
 */
export interface RemoteActorState<TLogic = unknown> {
  actor: RemoteActorSummary | null;
  /** The actor's state value (from its stored label); null before the first read. */
  value: ValueOf<TLogic> | null;
  context: ContextOf<TLogic> | null;
  /** The events the actor accepts in its state now. */
  accepts: Array<EventTypeOf<TLogic>>;
  /** Whether the live stream is open. */
  connected: boolean;
  /** The last refusal or failure (`actor_not_found`, `unauthorized`, `network`), or null. */
  error: string | null;
}

/** How to reach the server. */
export interface RemoteActorOptions {
  /** The server's origin (`https://agents.example.com`); default: this page's origin. */
  server?: string | undefined;
  /**
   * A single-use stream ticket from your backend (which asked the server's
   * `POST /api/stream-tickets`), for an app on another site. Without it the
   * browser's session cookie is sent (`withCredentials`): same site only.
   */
  ticket?: (() => Promise<string>) | undefined;
  /** `EventSource` and `fetch` to use (default: the browser's). */
  EventSource?: typeof EventSource | undefined;
  fetch?: typeof fetch | undefined;
}

export const INITIAL_STATE: RemoteActorState = {
  actor: null,
  value: null,
  context: null,
  accepts: [],
  connected: false,
  error: null,
};

/**
 * Follows one actor: calls `onChange` with its state now and after every move
 * the stream reports; returns the function that stops following.
 *
 * @example
 * const stop = followRemoteActor('refund-42', { server: 'https://agents.example.com' }, console.log);
 */
export function followRemoteActor(
  actorId: string,
  options: RemoteActorOptions,
  onChange: (state: RemoteActorState) => void,
): () => void {
  const server = (options.server ?? '').replace(/\/$/, '');
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const Source = options.EventSource ?? globalThis.EventSource;
  let state: RemoteActorState = INITIAL_STATE;
  let stopped = false;
  let source: EventSource | undefined;
  let loading = false;
  let again = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const set = (next: Partial<RemoteActorState>) => {
    state = { ...state, ...next };
    if (!stopped) onChange(state);
  };

  const load = async (): Promise<void> => {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const response = await doFetch(`${server}/api/actors/${encodeURIComponent(actorId)}`, {
        credentials: 'include',
      });
      const body = (await response.json().catch(() => ({}))) as {
        error?: string;
        actor?: RemoteActorSummary;
        context?: unknown;
        accepts?: string[];
      };
      if (!response.ok || !body.actor) set({ error: body.error ?? `http_${response.status}` });
      else
        set({
          actor: body.actor,
          value: labelValue(body.actor.state),
          context: body.context ?? null,
          accepts: body.accepts ?? [],
          error: null,
        });
    } catch {
      set({ error: 'network' });
    } finally {
      loading = false;
      if (again && !stopped) {
        again = false;
        void load();
      }
    }
  };

  const open = async (): Promise<void> => {
    let url = `${server}/api/stream?actor=${encodeURIComponent(actorId)}`;
    let withCredentials = true;
    if (options.ticket) {
      url = `${server}/api/stream?ticket=${encodeURIComponent(await options.ticket())}`;
      withCredentials = false;
    }
    if (stopped) return;
    source = new Source(url, { withCredentials });
    source.onopen = () => set({ connected: true });
    source.onmessage = () => void load();
    source.addEventListener('resync', () => void load());
    source.onerror = () => {
      set({ connected: false });
      // A spent ticket cannot reconnect: close, and open with a new one shortly.
      if (options.ticket && source) {
        source.close();
        retry = setTimeout(() => void open().catch(() => set({ error: 'network' })), 1_000);
      }
    };
  };

  void load();
  void open().catch(() => set({ error: 'network' }));
  return () => {
    stopped = true;
    if (retry !== undefined) clearTimeout(retry);
    source?.close();
  };
}
