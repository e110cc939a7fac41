import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { catalog } from '../machines/index.ts';
import { followRemoteActor, type RemoteActorState } from '../src/react/index.ts';
import { getRuntime, type DurableActor } from '../src/index.ts';
import { listen, type ListeningServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';
import { readOnlyServer } from './support/server.ts';
import { taskActor } from './support/actors.ts';

const TOKEN = 'remote-token-0123456789abcdef';
const store = openStore('memory:');
let http: ListeningServer;
let actor: DurableActor<(typeof catalog)['task-lifecycle']['machine']>;

/** Enough of EventSource for a test under Node: reads the stream with fetch, `data:` lines become messages. */
class FetchEventSource {
  onopen: (() => void) | null = null;
  onmessage: ((event: { data: string }) => void) | null = null;
  onerror: (() => void) | null = null;
  private readonly controller = new AbortController();
  constructor(url: string) {
    void (async () => {
      try {
        const response = await fetch(url, { signal: this.controller.signal });
        if (!response.ok || !response.body) throw new Error(String(response.status));
        this.onopen?.();
        const decoder = new TextDecoder();
        let buffer = '';
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = frame
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).trim())
              .join('\n');
            if (data) this.onmessage?.({ data });
          }
        }
      } catch {
        if (!this.controller.signal.aborted) this.onerror?.();
      }
    })();
  }
  addEventListener(): void {}
  close(): void {
    this.controller.abort();
  }
}

beforeAll(async () => {
  actor = await taskActor(store, 'remote-1');
  const server = readOnlyServer(store, TOKEN, { cors: { origins: ['http://localhost:5173'] } });
  http = await listen(server);
});

afterAll(async () => {
  await http?.close();
  await getRuntime(store).close();
  await store.close();
});

describe('agentcharts/react: following a remote actor', () => {
  test('with a stream ticket from "the backend", each move arrives', async () => {
    const bearer = { authorization: `Bearer ${TOKEN}` };
    // What the app's backend does: it holds the token, the browser gets a ticket.
    const ticket = async () => {
      const response = await fetch(`${http.url}/api/stream-tickets`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ actor: 'remote-1' }),
      });
      return ((await response.json()) as { ticket: string }).ticket;
    };
    const states: RemoteActorState[] = [];
    const stop = followRemoteActor(
      'remote-1',
      {
        server: http.url,
        ticket,
        EventSource: FetchEventSource as unknown as typeof EventSource,
        // The page's own reads carry its credential; here, the bearer token.
        fetch: (input, init) => fetch(input, { ...init, headers: bearer }),
      },
      (state) => states.push(state),
    );
    await expect.poll(() => states.at(-1)?.connected).toBe(true);
    await expect.poll(() => states.at(-1)?.actor?.state).toBe('planned');
    await actor.send({ type: 'START' });
    await expect.poll(() => states.at(-1)?.actor?.state).toBe('running');
    expect(states.at(-1)?.accepts).toContain('COMPLETE');
    stop();
  });
});
