/**
 * `tsx scripts/bench-observe.ts [--quick] [--json]`: the cost of observing.
 *
 * 1. Statistics and status queries over 100k persisted actors (seeded with raw
 *    inserts into a SQLite file through the store's own schema): “Agent Status Models”'s
 *    collection statistics, the active agents (“Agent State Machine”) of a user, the actors in a
 *    state (`agentcharts status --state`), the six alert rules. Target < 1 s each.
 * 2. The durable send path with the metrics and stream observers attached, as a
 *    ratio to the same run with no observer (interleaved runs, median). Target ≥ 0.9
 *    on the default store (SQLite file, synchronous=FULL); the in-memory store,
 *    where nothing but CPU is measured, is reported as the worst case.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { taskLifecycle } from '../machines/index.ts';
import { createDurableActor } from '../src/durable/open.ts';
import { getRuntime } from '../src/durable/open.ts';
import { evaluateAlerts } from '../src/observe/alerts.ts';
import { createMetrics } from '../src/observe/metrics.ts';
import { activeAgentsForUser, collectionStatistics } from '../src/observe/stats.ts';
import { NdjsonWriter } from '../src/observe/stream.ts';
import { openStore } from '../src/store/open.ts';
import type { SqliteStore } from '../src/store/sqlite/store.ts';
import type { Store } from '../src/store/types.ts';
import { seededRandom } from '../src/testing/random.ts';

const args = new Set(process.argv.slice(2));
for (const arg of args) {
  if (arg !== '--quick' && arg !== '--json') {
    console.error(`unknown option ${arg}; usage: bench-observe [--quick] [--json]`);
    process.exit(64);
  }
}
const quick = args.has('--quick');
const ACTORS = quick ? 10_000 : 100_000;
const log = (line: string) => process.stderr.write(`${line}\n`);

// A full collection before each timed run, so one run does not pay for the
// garbage of the one before it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

interface Row {
  id: string;
  name: string;
  value: number;
  unit: string;
  target: string;
  pass: boolean | undefined;
  details?: Record<string, unknown>;
}
const rows: Row[] = [];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Machine → [state, weight, status]: most actors finished, some working or waiting. */
const MIX: Record<string, Array<[string, number, 'active' | 'done']>> = {
  'task-lifecycle': [
    ['planned', 5, 'active'],
    ['running', 10, 'active'],
    ['paused', 3, 'active'],
    ['blocked', 2, 'active'],
    ['retrying', 2, 'active'],
    ['done', 60, 'done'],
    ['failed', 18, 'done'],
  ],
  'agent-status': [
    ['idle', 5, 'active'],
    ['running', 10, 'active'],
    ['thinking', 10, 'active'],
    ['paused', 5, 'active'],
    ['completed', 55, 'done'],
    ['failed', 10, 'done'],
    ['terminated', 5, 'done'],
  ],
  'agent-lifecycle': [
    ['idle', 20, 'active'],
    ['active.executing', 20, 'active'],
    ['active.waiting_input', 10, 'active'],
    ['paused', 5, 'active'],
    ['succeeded', 35, 'active'],
    ['failed', 10, 'active'],
  ],
};

/** Seeds `count` actors (and 1–3 transition rows each, and rejections) with raw inserts. */
function seed(store: SqliteStore, count: number, now: number): { users: number } {
  const rnd = seededRandom(42);
  const db = store.db;
  const insertActor = db.prepare(
    `INSERT INTO actors (id, machine_id, chart_version, version, state, status, snapshot,
       created_at, updated_at, head_hash, user_id, state_since)
     VALUES (?, ?, 1, ?, ?, ?, '{}', ?, ?, ?, ?, ?)`,
  );
  const insertTransition = db.prepare(
    `INSERT INTO transitions (actor_id, seq, from_state, to_state, event_type, event, at,
       metadata, prev_hash, hash)
     VALUES (?, ?, ?, ?, ?, '{"type":"E"}', ?, '{"source":"send"}', ?, ?)`,
  );
  const insertRejection = db.prepare(
    `INSERT INTO rejections (actor_id, machine_id, state, event_type, reason, at)
     VALUES (?, ?, ?, 'COMPLETE', 'invalid_transition', ?)`,
  );
  const machines = Object.keys(MIX);
  const users = Math.max(10, Math.floor(count / 100));
  const pickState = (machine: string) => {
    const mix = MIX[machine] ?? [];
    const total = mix.reduce((s, m) => s + m[1], 0);
    let r = rnd() * total;
    for (const m of mix) if ((r -= m[1]) <= 0) return m;
    return mix[mix.length - 1] as [string, number, 'active' | 'done'];
  };
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const machine = machines[i % machines.length] ?? 'task-lifecycle';
      const [state, , status] = pickState(machine);
      const id = `${machine}/${String(i).padStart(7, '0')}`;
      const created = now - Math.floor(rnd() * 86_400_000);
      const steps = 1 + Math.floor(rnd() * 3);
      let at = created;
      let from: string | null = null;
      const trail: Array<[number, string | null, string, number]> = [];
      for (let seq = 1; seq <= steps; seq++) {
        const to = seq === steps ? state : (MIX[machine]?.[0]?.[0] ?? 'idle');
        trail.push([seq, from, to, at]);
        from = to;
        if (seq < steps) at += Math.floor(rnd() * 600_000);
      }
      const user =
        rnd() < 0.8 ? `user-${String(Math.floor(rnd() * users)).padStart(5, '0')}` : null;
      insertActor.run(id, machine, steps, state, status, created, at, `h${steps}`, user, at);
      for (const [seq, f, to, when] of trail) {
        insertTransition.run(
          id,
          seq,
          f,
          to,
          seq === 1 ? 'xstate.init' : 'E',
          when,
          `h${seq - 1}`,
          `h${seq}`,
        );
      }
      if (i % 100 === 0)
        insertRejection.run(id, machine, state, now - Math.floor(rnd() * 3_600_000));
    }
  })();
  db.exec('ANALYZE');
  return { users };
}

async function time<T>(fn: () => Promise<T>, runs = 5): Promise<{ ms: number; result: T }> {
  let result = await fn(); // warm-up (statement cache, page cache)
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    result = await fn();
    times.push(performance.now() - start);
  }
  return { ms: median(times), result };
}

async function benchQueries(dir: string): Promise<void> {
  const file = join(dir, 'observe.db');
  const store = openStore(`sqlite:${file}`) as SqliteStore;
  const now = Date.now();
  log(`seeding ${ACTORS} actors…`);
  const seedStart = performance.now();
  const { users } = seed(store, ACTORS, now);
  log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s (${users} users)`);
  const queries: Array<[string, string, () => Promise<unknown>]> = [
    ['stats-all', 'collection statistics, all actors', () => collectionStatistics(store)],
    [
      'stats-machine',
      'collection statistics, one machine',
      () => collectionStatistics(store, { machineId: 'agent-status' }),
    ],
    [
      'stats-window',
      'collection statistics, last hour',
      () => collectionStatistics(store, { updatedSince: now - 3_600_000 }),
    ],
    ['user-active', 'active agents of a user', () => activeAgentsForUser(store, 'user-00042')],
    [
      'status-state',
      'status --state running (50 longest in state)',
      () => store.actorsInStates({ states: ['running'], limit: 50 }),
    ],
    [
      'status-machine-state',
      'status --state running --machine task-lifecycle',
      () => store.actorsInStates({ states: ['running'], machineId: 'task-lifecycle', limit: 50 }),
    ],
    [
      'list-state',
      'listActors(state, machine), first page',
      () => store.listActors({ state: 'running', machineId: 'task-lifecycle', limit: 100 }),
    ],
    ['alerts', 'the six alert rules', () => evaluateAlerts(store, { now })],
  ];
  for (const [id, name, fn] of queries) {
    const { ms, result } = await time(fn);
    const size = Array.isArray(result) ? result.length : undefined;
    rows.push({
      id,
      name: `${name} over ${ACTORS} actors`,
      value: ms,
      unit: 'ms',
      target: '< 1000 ms',
      pass: ms < 1000,
      ...(size !== undefined ? { details: { rows: size } } : {}),
    });
    log(`${id}: ${ms.toFixed(2)} ms`);
  }
  await store.close();
}

/**
 * One run of the send path: `actors` task-lifecycle actors, each sending `rounds`
 * BLOCK/RESOLVE pairs, all actors concurrently (group commit). Returns transitions/s.
 */
async function sendRun(
  url: string,
  observed: boolean,
  actors: number,
  rounds: number,
): Promise<{ perSec: number; cpuPerSec: number }> {
  const store: Store = openStore(url);
  const runtime = getRuntime(store);
  let bytes = 0;
  const stop: Array<() => void> = [];
  if (observed) {
    const metrics = createMetrics(runtime);
    const writer = new NdjsonWriter({ write: (s: string) => (bytes += s.length) });
    writer.attach(runtime);
    stop.push(
      () => metrics.stop(),
      () => writer.close(),
    );
  }
  const tasks = await Promise.all(
    Array.from({ length: actors }, (_, i) =>
      createDurableActor(taskLifecycle.machine, {
        id: `t${i}`,
        store,
        input: { taskId: `t${i}` },
      }),
    ),
  );
  await Promise.all(tasks.map((t) => t.send({ type: 'START' })));
  gc();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    tasks.map(async (t) => {
      for (let r = 0; r < rounds; r++) {
        await t.send({ type: 'BLOCK_ON_DEPENDENCY', dependency: 'api' });
        await t.send({ type: 'DEPENDENCY_RESOLVED' });
      }
    }),
  );
  const elapsed = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  for (const fn of stop) fn();
  await runtime.close();
  await store.close();
  if (observed && bytes === 0) throw new Error('the stream observer wrote nothing');
  const transitions = actors * rounds * 2;
  return { perSec: (transitions * 1000) / elapsed, cpuPerSec: (transitions * 1000) / cpuMs };
}

async function benchSendPath(dir: string): Promise<void> {
  const configs: Array<[string, string, (i: number) => string, number, number, boolean]> = [
    [
      'send-sqlite',
      'durable send path, SQLite file (synchronous=FULL), metrics + stream on / off',
      (i) => `sqlite:${join(dir, `send-${i}.db`)}`,
      quick ? 20 : 50,
      quick ? 10 : 40,
      true,
    ],
    [
      'send-memory',
      'durable send path, memory store (CPU only, worst case), on / off',
      () => 'memory:',
      quick ? 50 : 200,
      quick ? 20 : 50,
      false,
    ],
  ];
  for (const [id, name, url, actors, rounds, targeted] of configs) {
    const on: Array<{ perSec: number; cpuPerSec: number }> = [];
    const off: Array<{ perSec: number; cpuPerSec: number }> = [];
    const pairs = quick ? 3 : 11;
    for (let i = 0; i < pairs; i++) {
      // Interleaved, order alternating, each on a fresh store.
      if (i % 2 === 0) {
        off.push(await sendRun(url(2 * i), false, actors, rounds));
        on.push(await sendRun(url(2 * i + 1), true, actors, rounds));
      } else {
        on.push(await sendRun(url(2 * i), true, actors, rounds));
        off.push(await sendRun(url(2 * i + 1), false, actors, rounds));
      }
    }
    // Per pair, observed ÷ plain; the median pair is the figure (a preempted run skews one pair).
    const ratio = median(on.map((x, i) => x.perSec / (off[i]?.perSec ?? x.perSec)));
    const cpuRatio = median(on.map((x, i) => x.cpuPerSec / (off[i]?.cpuPerSec ?? x.cpuPerSec)));
    rows.push({
      id,
      name,
      value: ratio,
      unit: 'ratio',
      target: targeted ? '>= 0.9' : 'none',
      pass: targeted ? ratio >= 0.9 : undefined,
      details: {
        observedPerSec: Math.round(median(on.map((x) => x.perSec))),
        plainPerSec: Math.round(median(off.map((x) => x.perSec))),
        cpuTimeRatio: Number(cpuRatio.toFixed(3)),
        pairs,
        actors,
        transitionsPerRun: actors * rounds * 2,
      },
    });
    log(`${id}: ${ratio.toFixed(3)} (cpu time ratio ${cpuRatio.toFixed(3)})`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'agentcharts-bench-observe-'));
try {
  await benchQueries(dir);
  await benchSendPath(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (args.has('--json')) {
  process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
} else {
  const fmt = (r: Row) =>
    r.unit === 'ratio' ? r.value.toFixed(3) : `${r.value.toFixed(r.value < 10 ? 2 : 1)} ms`;
  const table = [
    ['measure', 'value', 'target', 'result', 'details'],
    ...rows.map((r) => [
      r.name,
      fmt(r),
      r.target,
      r.pass === undefined ? '-' : r.pass ? 'PASS' : 'MISS',
      r.details ? JSON.stringify(r.details) : '',
    ]),
  ];
  const widths =
    table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  for (const row of table) {
    process.stdout.write(
      `${row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
}
if (rows.some((r) => r.pass === false)) process.exitCode = 1;
