/**
 * Multi-worker freshness on PostgreSQL: a follower learns of another process's
 * commits through LISTEN/NOTIFY, with polling switched off entirely.
 */
import { expect, test, type TestContext } from 'vitest';
import { charts, taskLifecycle } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { feedTransitions, type FeedTransition } from '../src/observe/feed.ts';
import { openStore } from '../src/store/open.ts';
import { ANNOUNCE_GAP_MS } from '../src/store/postgres/notifications.ts';
import type { Store } from '../src/store/types.ts';
import { usePostgres } from './support/postgres.ts';

const postgres = usePostgres();
const task = taskLifecycle.chart;

interface Follower {
  writer: Store;
  follower: Store;
  /** What the follower's feed (polling off) has told. */
  seen: FeedTransition[];
}

/** A writer and a follower (its feed polling off, listening) on one fresh schema; closed after. */
async function withFollower(context: TestContext, run: (f: Follower) => Promise<void>) {
  const server = postgres();
  if (!server) {
    context.skip();
    return;
  }
  const url = server.freshUrl();
  const follower = openStore(url);
  const writer = openStore(url);
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
      await run({ writer, follower, seen });
    } finally {
      feed.stop();
    }
  } finally {
    await getRuntime(follower).close();
    await getRuntime(writer).close();
    await follower.close();
    await writer.close();
  }
}

/** The versions of `actorId` the feed told, once it told `count` of them (10 s at most). */
async function versionsSeen(seen: FeedTransition[], actorId: string, count: number) {
  const mine = () => seen.filter((t) => t.actorId === actorId).map((t) => t.version);
  const start = Date.now();
  while (mine().length < count && Date.now() - start < 10_000) {
    await new Promise((r) => setTimeout(r, 10));
  }
  return mine();
}

test('a feed with polling off sees another process’s commits through NOTIFY', async (context) => {
  await withFollower(context, async ({ writer, seen }) => {
    const actor = await createDurableActor(task.machine, {
      id: 'notified',
      store: writer,
      input: { taskId: 'notified' },
      schemas: task.events,
    });
    await actor.send({ type: 'START' });
    expect(await versionsSeen(seen, 'notified', 2)).toEqual([1, 2]);
    expect(seen.filter((t) => t.actorId === 'notified').map((t) => t.to)).toEqual([
      'planned',
      'running',
    ]);
  });
}, 60_000);

test('a burst of commits is announced after them, coalesced, and the last one always reaches a follower', async (context) => {
  await withFollower(context, async ({ writer, follower, seen }) => {
    let told = 0;
    const unlisten = follower.onCommits?.(() => told++);
    try {
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
      expect(actor.version).toBe(commits);
      // The last commit reaches the follower by a notification (polling is off).
      expect(await versionsSeen(seen, 'burst', commits)).toEqual(
        Array.from({ length: commits }, (_, i) => i + 1),
      );
      // Coalesced: at most one per ANNOUNCE_GAP_MS while the burst lasted, plus the
      // first and the one after the last commit.
      expect(told).toBeGreaterThanOrEqual(1);
      expect(told).toBeLessThanOrEqual(Math.ceil(elapsed / ANNOUNCE_GAP_MS) + 2);
    } finally {
      unlisten?.();
    }
  });
}, 60_000);
