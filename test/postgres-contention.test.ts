/**
 * Many worker processes, one PostgreSQL database: real processes
 * (test/fixtures/pg-worker.ts) contend for shared actors while one is SIGKILLed,
 * and lease owners die or stall while others take their actors over.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDurableActor } from '../src/durable/open.ts';
import { getRuntime } from '../src/durable/open.ts';
import { verify } from '../src/durable/verify.ts';
import { openStore } from '../src/store/open.ts';
import type { Store, TransitionRow } from '../src/store/types.ts';
import { chart, machine, type WorkerLine } from './fixtures/pg-worker.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from './support/postgres.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/pg-worker.ts', import.meta.url));

/** A worker process and what it printed (`TAG {json}` lines). */
class Worker {
  readonly child: ChildProcess;
  readonly lines: Array<{ tag: string; value: Record<string, unknown> }> = [];
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(mode: string, args: unknown) {
    this.child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, mode, JSON.stringify(args)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AGENTCHARTS_LOG_LEVEL: 'silent' },
    });
    let partial = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      partial += chunk.toString();
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        const match = /^([A-Z_]+) (\{.*\})$/.exec(line);
        if (match?.[1] !== undefined && match[2] !== undefined) {
          this.lines.push({
            tag: match[1],
            value: JSON.parse(match[2]) as Record<string, unknown>,
          });
        } else if (line.startsWith('{')) {
          this.lines.push({ tag: 'LOG', value: JSON.parse(line) as Record<string, unknown> });
        }
      }
    });
    this.child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  tagged(tag: string): Array<Record<string, unknown>> {
    return this.lines.filter((l) => l.tag === tag).map((l) => l.value);
  }

  /** Waits until a line with `tag` (and matching `test`) was printed. */
  async waitFor(
    tag: string,
    test: (value: Record<string, unknown>) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.tagged(tag).find(test);
      if (found) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null || Date.now() > deadline) {
        throw new Error(
          `worker never printed ${tag}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
        );
      }
      await sleep(20);
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function readWorkerLog(file: string): WorkerLine[] {
  if (!existsSync(file)) return [];
  const lines: WorkerLine[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      lines.push(JSON.parse(line) as WorkerLine);
    } catch {
      // A SIGKILL can tear only the last line of the killed worker's log.
    }
  }
  return lines;
}

/** Every problem of one actor's log: gaps, broken from/to continuity, a wrong creation row. */
function chainProblems(actorId: string, rows: TransitionRow[]): string[] {
  const problems: string[] = [];
  rows.forEach((row, i) => {
    if (row.seq !== i + 1) problems.push(`${actorId}: row ${i + 1} has seq ${row.seq}`);
    if (i === 0 && (row.fromState !== null || row.eventType !== 'xstate.init')) {
      problems.push(`${actorId}: the first row is not the creation`);
    }
    const previous = rows[i - 1];
    if (previous !== undefined && row.fromState !== previous.toState) {
      problems.push(
        `${actorId}: row ${row.seq} starts in ${row.fromState}, not ${previous.toState}`,
      );
    }
  });
  return problems;
}

const available = postgresAvailable();

describe.runIf(available)('many worker processes sharing one PostgreSQL database', () => {
  let server: PostgresServer;
  let scratch: string;
  const workers: Worker[] = [];
  const stores: Store[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    scratch = mkdtempSync(join(tmpdir(), 'agentcharts-pg-workers-'));
  });
  afterAll(async () => {
    await server.destroy();
    rmSync(scratch, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) {
      w.kill('SIGCONT');
      w.kill('SIGKILL');
      await w.exited;
    }
    for (const s of stores.splice(0)) await s.close();
  });

  function open(url: string): Store {
    const store = openStore(url);
    stores.push(store);
    return store;
  }

  function start(mode: string, args: unknown): Worker {
    const worker = new Worker(mode, args);
    workers.push(worker);
    return worker;
  }

  it('loses no update when 4 workers contend for 8 actors and one is SIGKILLed mid-run', async () => {
    const K = 4;
    const M = 150;
    const LANES = 4;
    const url = server.freshUrl();
    const actorIds = Array.from({ length: 8 }, (_, i) => `shared-${i}`);
    const logs = Array.from({ length: K }, (_, i) => join(scratch, `contend-w${i}.ndjson`));
    const team = logs.map((log, i) =>
      start('contend', {
        url,
        worker: `w${i}`,
        actorIds,
        events: M,
        lanes: LANES,
        log,
        seed: 1 + i,
      }),
    );

    // Kill w0 once a third of its sends are acknowledged.
    const victim = team[0]!;
    const deadline = Date.now() + 90_000;
    while (readWorkerLog(logs[0]!).filter((l) => l.kind === 'ack').length < M / 3) {
      if (victim.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`w0 ended before it could be killed:\n${victim.stderr}`);
      }
      await sleep(5);
    }
    victim.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    const survivors = team.slice(1);
    for (const w of survivors) {
      const { code } = await w.exited;
      expect(code, w.stderr).toBe(0);
    }
    const done = survivors.map((w) => w.tagged('DONE')[0] ?? {});
    expect(done.map((d) => d['acks'])).toEqual(survivors.map(() => M));
    const conflicts = done.reduce((sum, d) => sum + Number(d['conflicts']), 0);
    expect(conflicts).toBeGreaterThan(0);

    // Every actor's log is a gapless chain that replays to its snapshot.
    const store = open(url);
    const committed = new Map<string, { actorId: string; seq: number }>();
    let transitions = 0;
    for (const id of actorIds) {
      const rows = await store.history(id);
      transitions += rows.length;
      expect(chainProblems(id, rows)).toEqual([]);
      const actor = await store.loadActor(id);
      expect(actor?.version).toBe(rows.length);
      expect(actor?.state).toBe(rows.at(-1)?.toState);
      const snapshot = JSON.parse(actor?.snapshot ?? '{}') as { context?: { count?: number } };
      expect(snapshot.context?.count).toBe(rows.length - 1);
      for (const row of rows.slice(1)) {
        const event = JSON.parse(row.event) as { worker: string; n: number };
        const key = `${event.worker}/${event.n}`;
        expect(committed.has(key), `${key} committed twice`).toBe(false);
        committed.set(key, { actorId: id, seq: row.seq });
      }
    }
    const report = await verify(store, { charts: [chart] });
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);

    // Every acknowledged send is in the log, at the version its worker saw.
    let acks = 0;
    let unacknowledged = 0;
    logs.forEach((log, i) => {
      const lines = readWorkerLog(log);
      const acked = lines.flatMap((l) => (l.kind === 'ack' ? [l] : []));
      acks += acked.length;
      for (const ack of acked) {
        expect(committed.get(`${ack.worker}/${ack.n}`)).toEqual({
          actorId: ack.actorId,
          seq: ack.version,
        });
      }
      const mine = [...committed.keys()].filter((key) => key.startsWith(`w${i}/`));
      const ackedKeys = new Set(acked.map((a) => `${a.worker}/${a.n}`));
      const extra = mine.filter((key) => !ackedKeys.has(key));
      if (i === 0) {
        // The killed worker: only sends in flight at the kill may be committed
        // without an ack, each announced by an intent line.
        const intents = new Set(
          lines.flatMap((l) => (l.kind === 'intent' ? [`${l.worker}/${l.n}`] : [])),
        );
        for (const key of extra) expect(intents.has(key)).toBe(true);
        expect(extra.length).toBeLessThanOrEqual(LANES);
        unacknowledged = extra.length;
      } else {
        expect(extra).toEqual([]);
        expect(mine).toHaveLength(M);
      }
    });
    // Transitions = creations + acknowledged sends (+ the killed worker's in-flight commits).
    expect(transitions).toBe(actorIds.length + acks + unacknowledged);
    console.info(
      `contention: ${transitions} transitions = ${actorIds.length} creations + ${acks} acks + ${unacknowledged} in flight at the kill; ` +
        `survivors retried ${conflicts} conflicts, ${done.reduce((sum, d) => sum + Number(d['invalid']), 0)} re-choices`,
    );
  });

  it('fires every due timer exactly once while 3 workers poll and claim them', async () => {
    const url = server.freshUrl();
    const pollers = ['P0', 'P1', 'P2'].map((owner) =>
      start('poll', { url, owner, leaseMs: 5_000, pollMs: 25 }),
    );
    for (const p of pollers) await p.waitFor('READY');
    // 30 unowned actors asleep on timers due 1.5–2 s from now, written by a
    // process that then stops its own runtime: only the pollers can fire them.
    const store = open(url);
    const actorIds = Array.from({ length: 30 }, (_, i) => `timer-${i}`);
    for (const [i, id] of actorIds.entries()) {
      const actor = await createDurableActor(machine, { id, store });
      await actor.send({ type: 'START', worker: 'setup', n: 2 * i });
      await actor.send({
        type: 'SNOOZE',
        worker: 'setup',
        n: 2 * i + 1,
        ms: 1_500 + (i % 10) * 50,
      });
    }
    await getRuntime(store).close();

    const deadline = Date.now() + 30_000;
    const fired = () => pollers.flatMap((p) => p.tagged('FIRED'));
    while (fired().length < actorIds.length && Date.now() < deadline) await sleep(50);
    await sleep(500); // a double firing would show up now
    expect(
      fired()
        .map((f) => f['actorId'])
        .sort(),
    ).toEqual([...actorIds].sort());
    for (const id of actorIds) {
      const rows = await store.history(id);
      expect(rows.filter((r) => r.fromState === 'snoozing')).toHaveLength(1);
      expect(rows.at(-1)?.toState).toBe('working');
      expect(await store.timers(id)).toEqual([]);
      const owner = (await store.lease(id))?.owner;
      const firer = fired().find((f) => f['actorId'] === id)?.['owner'];
      expect(owner).toBe(firer);
    }
    for (const p of pollers) expect(p.tagged('LOG')).toEqual([]);
    console.info(
      `timer firings per poller: ${pollers.map((p) => p.tagged('FIRED').length).join(', ')}`,
    );
  });

  it("recovers a dead worker's actors only after its lease runs out, then fires their timers", async () => {
    const url = server.freshUrl();
    const leaseMs = 2_000;
    const actorIds = ['lease-0', 'lease-1', 'lease-2', 'lease-3'];
    const holder = start('hold', {
      url,
      owner: 'A',
      leaseMs,
      actorIds,
      snooze: ['lease-0', 'lease-1'],
      snoozeMs: 6_000,
    });
    await holder.waitFor('READY');
    const store = open(url);
    const leases = async () => Promise.all(actorIds.map((id) => store.lease(id)));
    const first = await leases();
    expect(first.map((l) => l?.owner)).toEqual(['A', 'A', 'A', 'A']);

    // B polls for orphaned actors while A is alive: A's renewed leases keep them.
    const rescuer = start('recover', { url, owner: 'B', leaseMs, actorIds, roundMs: 100 });
    await rescuer.waitFor('ROUND');
    await sleep(leaseMs);
    const renewed = await leases();
    renewed.forEach((lease, i) => {
      expect(lease?.owner).toBe('A');
      expect(lease?.leaseUntil).toBeGreaterThan(first[i]?.leaseUntil ?? Infinity);
    });

    holder.kill('SIGKILL');
    await holder.exited;
    const expiry = Math.max(...(await leases()).map((l) => l?.leaseUntil ?? 0));
    const done = await rescuer.waitFor('DONE', () => true, 60_000);
    expect(done['owned']).toEqual(actorIds);
    expect((await rescuer.exited).code).toBe(0);

    const rounds = rescuer.tagged('ROUND') as Array<{ at: number; recovered: string[] }>;
    for (const round of rounds) {
      if (round.at <= expiry) expect(round.recovered).toEqual([]);
    }
    const takeover = rounds.find((r) => r.recovered.length > 0);
    expect(takeover?.at).toBeGreaterThan(expiry);
    expect(rounds.flatMap((r) => r.recovered).sort()).toEqual(actorIds);

    // A's pending timers were fired by B, once each.
    for (const id of ['lease-0', 'lease-1']) {
      const rows = await store.history(id);
      const fired = rows.filter((r) => r.fromState === 'snoozing');
      expect(fired).toHaveLength(1);
      expect(JSON.parse(fired[0]?.metadata ?? '{}')).toMatchObject({ source: 'timer' });
      expect((await store.loadActor(id))?.state).toBe('working');
      expect(await store.timers(id)).toEqual([]);
    }
  });

  it('refuses owner duties to a stalled worker whose lease was taken over', async () => {
    const url = server.freshUrl();
    const leaseMs = 1_500;
    const holder = start('hold', {
      url,
      owner: 'A',
      leaseMs,
      actorIds: ['stall-0'],
      snooze: ['stall-0'],
      snoozeMs: 2_500,
    });
    await holder.waitFor('READY');
    holder.kill('SIGSTOP'); // a long GC pause, a frozen VM
    const store = open(url);
    const before = {
      actor: await store.loadActor('stall-0'),
      timers: await store.timers('stall-0'),
    };
    expect(before.actor?.state).toBe('snoozing');
    const dueAt = before.timers[0]?.dueAt ?? 0;
    const lease = await store.lease('stall-0');
    expect(lease?.owner).toBe('A');

    // Once A's lease has expired another worker takes the actor over.
    while (Date.now() <= (lease?.leaseUntil ?? 0)) await sleep(20);
    const now = Date.now();
    expect(
      await store.acquireLeases({
        owner: 'B',
        now,
        leaseUntil: now + 60_000,
        limit: 1,
        actorIds: ['stall-0'],
      }),
    ).toHaveLength(1);

    // A wakes up after its timer came due: it must not fire it.
    while (Date.now() <= dueAt + 100) await sleep(20);
    holder.kill('SIGCONT');
    const deadline = Date.now() + 10_000;
    const noticed = () =>
      holder.tagged('WRITE_ERROR').some((e) => e['name'] === 'LeaseLostError') ||
      holder.tagged('LOG').some((l) => String(l['msg']).includes('lease lost'));
    while (!noticed() && Date.now() < deadline) await sleep(20);
    expect(noticed(), holder.stdout + holder.stderr).toBe(true);
    console.info(
      `stalled worker noticed through: ${holder.tagged('WRITE_ERROR').length > 0 ? 'a refused fenced write' : 'its lease renewal'}`,
    );
    await sleep(300);
    expect({
      actor: await store.loadActor('stall-0'),
      timers: await store.timers('stall-0'),
    }).toEqual(before);
    expect((await store.lease('stall-0'))?.owner).toBe('B');
  });
});

if (!available) {
  describe('many worker processes sharing one PostgreSQL database', () => {
    it.skip('SKIPPED: PostgreSQL not installed', () => undefined);
  });
}
