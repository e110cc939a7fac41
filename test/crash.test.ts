/**
 * Crash test of the durable runtime: a real worker process (test/fixtures/crash-worker.ts)
 * drives actors of all six charts and is SIGKILLed at a random moment, again and
 * again on the same SQLite file. After every kill the database and the client's
 * durable files are checked (test/fixtures/crash-invariants.ts); every other
 * round this process also recovers the database itself with a fixed clock and
 * checks that every timer due by then fired. The last recovery runs an hour
 * ahead, drains every timer and checks none is left.
 *
 * The same run goes on PostgreSQL too, in a fresh schema of a throwaway server:
 * there a killed worker's connections drop mid-statement or mid-transaction, its
 * leases and notifications with them, and the server decides what was committed.
 *
 * `AGENTCHARTS_CRASH_KILLS` sets the number of kills (default 50, the floor CI
 * runs), `AGENTCHARTS_CRASH_PG_KILLS` those on PostgreSQL (default 20),
 * `AGENTCHARTS_CRASH_CHECK_EVERY` how often the database is checked (a
 * soak: `npm run crash -- --kills 1000`); `AGENTCHARTS_CRASH_SEED` replays a seed printed by a failing run
 * (timing is real, so a replay is close to, not exactly, the same run).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../src/core/clock.ts';
import { recover } from '../src/durable/recover.ts';
import { getRuntime } from '../src/durable/open.ts';
import { openStore } from '../src/store/open.ts';
import { charts as catalogCharts } from '../machines/index.ts';
import { delegation } from './fixtures/delegation-chart.ts';
import {
  anomalyLogger,
  checkCrashInvariants,
  crashFiles,
  crashStoreUrl,
  reconcileFromLedger,
  type CrashCheckResult,
  type CrashFiles,
} from './fixtures/crash-invariants.ts';
import { usePostgres } from './support/postgres.ts';

const KILLS = Number(process.env['AGENTCHARTS_CRASH_KILLS'] ?? 50);
const PG_KILLS = Number(process.env['AGENTCHARTS_CRASH_PG_KILLS'] ?? 20);
/**
 * Every how many rounds the whole database is checked (every round by default).
 * A check reads everything written so far, so a long soak checks every N rounds
 * and at the end: acknowledged sends, effects and timers are never forgotten, so
 * a loss is still found by the next check.
 */
const CHECK_EVERY = Math.max(1, Number(process.env['AGENTCHARTS_CRASH_CHECK_EVERY'] ?? 1));
const SEED = Number(process.env['AGENTCHARTS_CRASH_SEED'] ?? Date.now() % 1_000_000_007);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORKER = fileURLToPath(new URL('./fixtures/crash-worker.ts', import.meta.url));
const HOUR = 3_600_000;

const charts = [...catalogCharts, delegation];

/** One crash run's directory: the client's durable files and the store's URL. */
interface Run {
  dir: string;
  files: CrashFiles;
  store: string;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh run directory; `store` (default: the run's SQLite file) is written for the workers. */
function newRun(store?: string): Run {
  const dir = mkdtempSync(join(tmpdir(), 'agentcharts-crash-'));
  dirs.push(dir);
  const files = crashFiles(dir);
  if (store !== undefined) writeFileSync(files.store, store);
  // The delegation chart's invoked promise appends to the run's ledger, here as in the workers.
  process.env['AGENTCHARTS_CRASH_EFFECTS'] = files.effects;
  return { dir, files, store: crashStoreUrl(files) };
}

interface Ready {
  pid: number;
  recoveryStartedAt: number;
  counts: { actors: number; sent: number; failed: number; timersFired: number };
  steps: number;
}

/** A killed worker's start, and the statements its store ran again (RETRY lines). */
interface Round {
  ready: Ready;
  retried: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Starts a worker, waits for it to finish recovering, lets it run `killAfterMs`, SIGKILLs it. */
async function runUntilKilled(run: Run, round: number, killAfterMs: number): Promise<Round> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', WORKER, run.dir, String(SEED), String(round)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let timeout: NodeJS.Timeout | undefined;
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = /^READY (.*)$/m.exec(stdout)?.[1];
      if (line !== undefined) resolve(JSON.parse(line) as Ready);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`worker exited (${code ?? signal}) before it was ready:\n${stderr}`)),
    );
    timeout = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`worker not ready after 60 s:\n${stderr}`));
    }, 60_000);
  }).finally(() => clearTimeout(timeout));
  await sleep(killAfterMs);
  child.kill('SIGKILL');
  const { code, signal } = await exited;
  if (signal !== 'SIGKILL') {
    throw new Error(`round ${round}: the worker ended by itself (code ${code}):\n${stderr}`);
  }
  return { ready, retried: stderr.match(/^RETRY /gm)?.length ?? 0 };
}

/** Checks the database as the kill left it (no recovery here: the next worker does it). */
async function checkAfterKill(run: Run, ready: Ready): Promise<CrashCheckResult> {
  const store = openStore(run.store);
  try {
    // The worker's recovery fired every timer overdue when it started.
    return await checkCrashInvariants(store, {
      charts,
      files: run.files,
      timersDueBefore: ready.recoveryStartedAt,
    });
  } finally {
    await store.close();
  }
}

/**
 * Recovers the database in this process on a fixed clock (`ahead` ms past now),
 * fires every timer due by then — for the final round, keeps moving the clock to
 * the next due time until no timer is left — and checks everything.
 */
async function recoverAndCheck(
  run: Run,
  ahead: number,
  drainAll: boolean,
): Promise<CrashCheckResult & { reconciled: number }> {
  const { files } = run;
  const store = openStore(run.store);
  const clock = new ManualClock(Date.now() + ahead);
  const errors: string[] = [];
  try {
    const report = await recover(store, {
      charts,
      clock,
      reconcile: reconcileFromLedger(files.effects),
      logger: anomalyLogger((message) => errors.push(`test recovery: ${message}`)),
    });
    for (const entry of report.actors) {
      if (entry.action === 'failed') errors.push(`recovery failed for ${entry.actorId}`);
    }
    const runtime = getRuntime(store);
    await runtime.drain(); // invokes recovery started, and what they deliver
    for (let i = 0; i < 1000; i++) {
      // Firing can set timers due at once (an exhausted retry has no backoff).
      while ((await runtime.fireDueTimers()) > 0) await runtime.drain();
      if (!drainAll) break;
      const next = await store.nextTimerDue();
      if (next === undefined) break;
      clock.set(Math.max(clock.now(), next));
    }
    if (drainAll && (await store.nextTimerDue()) !== undefined) {
      errors.push('timers are still pending after draining every due time');
    }
    const result = await checkCrashInvariants(store, {
      charts,
      files,
      timersDueBefore: clock.now() + 1,
      stepsSettled: true,
    });
    result.problems.push(...errors);
    return { ...result, reconciled: report.steps.length };
  } finally {
    await getRuntime(store).close();
    await store.close();
  }
}

function expectClean(result: CrashCheckResult, round: number, when: string): void {
  expect(
    result.problems.slice(0, 20),
    `seed ${SEED}, round ${round}, ${when}: ${result.problems.length} problem(s)`,
  ).toEqual([]);
}

/** `kills` rounds of a worker killed at a random moment on `run`'s store, checked as they go. */
async function crashRun(run: Run, name: string, kills: number): Promise<void> {
  expect(kills).toBeGreaterThanOrEqual(1);
  const started = Date.now();
  let random = SEED >>> 0;
  const nextRandom = () => {
    random = (Math.imul(random, 1_103_515_245) + 12_345) >>> 0;
    return random / 4_294_967_296;
  };
  let reconciled = 0;
  let workerRecoverySends = 0;
  let retried = 0;
  let last: CrashCheckResult | undefined;
  for (let round = 1; round <= kills; round++) {
    const killed = await runUntilKilled(run, round, 30 + Math.floor(nextRandom() * 271));
    const ready = killed.ready;
    retried += killed.retried;
    reconciled += ready.steps;
    workerRecoverySends += ready.counts.sent;
    expect(ready.counts.failed, `round ${round}: actors the worker failed to recover`).toBe(0);
    const final = round === kills;
    if (round % CHECK_EVERY !== 0 && !final) continue;
    last = await checkAfterKill(run, ready);
    expectClean(last, round, 'after the kill');
    if (round % (2 * CHECK_EVERY) === 0 || final) {
      const recovered = await recoverAndCheck(run, final ? HOUR : 0, final);
      reconciled += recovered.reconciled;
      last = recovered;
      expectClean(last, round, final ? 'after the final recovery an hour ahead' : 'after recovery');
    }
  }
  const stats = (last as CrashCheckResult).stats;
  // The run must have exercised what it claims to check.
  expect(stats.acks).toBeGreaterThan(kills);
  expect(stats.timersFired).toBeGreaterThan(0);
  expect(stats.effects).toBeGreaterThan(0);
  expect(stats.recoverySends).toBeGreaterThan(0);
  expect(stats.messages).toBeGreaterThan(0);
  expect(stats.invokes).toBeGreaterThan(0);
  console.log(
    `crash test on ${name}: ${kills} kills (seed ${SEED}), ${stats.actors} actors, ${stats.transitions} transitions ` +
      `(${stats.acks} acknowledged, ${stats.tornAcks} torn acks), ${stats.stepsDone} steps done ` +
      `(${stats.effects} effects, ${reconciled} reconciled after a kill), ${stats.timersFired} timers fired, ` +
      `${stats.recoverySends} recovery sends (${workerRecoverySends} by workers), ${stats.messages} messages ` +
      `and ${stats.invokes} invoke outcomes delivered, ${retried} statement(s) run again after a rollback, ` +
      `in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

describe('a durable worker SIGKILLed at random moments', () => {
  test(
    `loses no acknowledged transition, stays verifiable, runs no step twice and fires every due timer once over ${KILLS} kills`,
    () => crashRun(newRun(), 'SQLite', KILLS),
    KILLS * 8_000 + 60_000,
  );

  describe('on PostgreSQL', () => {
    const server = usePostgres();
    test(
      `the same over ${PG_KILLS} kills, in a fresh schema of one server`,
      async () => {
        const pg = server();
        if (pg === undefined) return;
        await crashRun(newRun(pg.freshUrl()), 'PostgreSQL', PG_KILLS);
      },
      PG_KILLS * 8_000 + 60_000,
    );
  });
});
