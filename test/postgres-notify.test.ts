/**
 * Multi-worker freshness on PostgreSQL: a follower learns of another process's
 * commits through LISTEN/NOTIFY, with polling switched off entirely.
 */
import { expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { feedTransitions, type FeedTransition } from '../src/observe/feed.ts';
import { openStore } from '../src/store/open.ts';
import { usePostgres } from './support/postgres.ts';

const postgres = usePostgres();

test('a feed with polling off sees another process’s commits through NOTIFY', async (context) => {
  const server = postgres();
  if (!server) {
    context.skip();
    return;
  }
  const url = server.freshUrl();
  const follower = openStore(url);
  const writer = openStore(url);
  const task = charts.find((c) => c.name === 'task-lifecycle');
  if (!task) throw new Error('no task chart');
  try {
    // Both open (and migrate) before the follower starts listening.
    await follower.listActors({ limit: 1 });
    const seen: FeedTransition[] = [];
    const feed = feedTransitions(getRuntime(follower, { charts }), {
      pollMs: 0,
      onTransition: (t) => seen.push(t),
    });
    try {
      await new Promise((r) => setTimeout(r, 200)); // LISTEN is in place
      const actor = await createDurableActor(task.machine, {
        id: 'notified',
        store: writer,
        input: { taskId: 'notified' },
        schemas: task.events,
      });
      await actor.send({ type: 'START' });
      const start = Date.now();
      while (
        seen.filter((t) => t.actorId === 'notified').length < 2 &&
        Date.now() - start < 10_000
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(seen.filter((t) => t.actorId === 'notified').map((t) => t.to)).toEqual([
        'planned',
        'running',
      ]);
    } finally {
      feed.stop();
    }
  } finally {
    await getRuntime(follower).close();
    await getRuntime(writer).close();
    await follower.close();
    await writer.close();
  }
}, 60_000);
