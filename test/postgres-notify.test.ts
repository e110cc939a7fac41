/**
 * Multi-worker freshness on PostgreSQL: a follower learns of another process's
 * commits through LISTEN/NOTIFY, with polling switched off entirely.
 */
import { expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { feedTransitions, type FeedTransition } from '../src/observe/feed.ts';
import { openStore } from '../src/store/open.ts';
import { ANNOUNCE_GAP_MS } from '../src/store/postgres/notifications.ts';
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

test('a burst of commits is announced after them, coalesced, and the last one always reaches a follower', async (context) => {
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
    await follower.listActors({ limit: 1 });
    await writer.listActors({ limit: 1 });
    let told = 0;
    const unlisten = follower.onCommits?.(() => told++);
    const seen: FeedTransition[] = [];
    const feed = feedTransitions(getRuntime(follower, { charts }), {
      pollMs: 0,
      onTransition: (t) => seen.push(t),
    });
    try {
      await new Promise((r) => setTimeout(r, 200)); // LISTEN is in place
      const actor = await createDurableActor(task.machine, {
        id: 'burst',
        store: writer,
        mode: 'create',
        input: { taskId: 'burst' },
        schemas: task.events,
      });
      const started = Date.now();
      await actor.send({ type: 'START' });
      const pause = task.eventSamples.PAUSE_FOR_APPROVAL?.[0];
      const grant = task.eventSamples.APPROVAL_GRANTED?.[0];
      for (let i = 0; i < 60; i++) await actor.send((i % 2 === 0 ? pause : grant) as never);
      const elapsed = Date.now() - started;
      const commits = 62;
      const last = actor.version;
      expect(last).toBe(commits);
      // The last commit reaches the follower by a notification (polling is off).
      const start = Date.now();
      while (
        !seen.some((t) => t.actorId === 'burst' && t.version === last) &&
        Date.now() - start < 10_000
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(seen.filter((t) => t.actorId === 'burst').map((t) => t.version)).toEqual(
        Array.from({ length: commits }, (_, i) => i + 1),
      );
      // Coalesced: at most one per ANNOUNCE_GAP_MS while the burst lasted, plus the
      // first and the one after the last commit.
      expect(told).toBeGreaterThanOrEqual(1);
      expect(told).toBeLessThanOrEqual(Math.ceil(elapsed / ANNOUNCE_GAP_MS) + 2);
    } finally {
      feed.stop();
      unlisten?.();
    }
  } finally {
    await getRuntime(follower).close();
    await getRuntime(writer).close();
    await follower.close();
    await writer.close();
  }
}, 60_000);
