/**
 * Crash test on generated machines: random XState machines and scripts
 * (test/support/machine-gen.ts: nested, parallel and history states, guarded
 * timers, delayed raise and `sendTo` with cancel, invoked promises, child
 * machines talking to their parent) run durably in worker processes
 * (test/fixtures/crash-gen-worker.ts) SIGKILLed several times per case, at
 * random moments and at boundaries inside steps: during recovery, a caller's
 * send and the parent/child traffic it causes, a clock advance firing timers,
 * promises settling, between a step's commit and its acknowledgement. Each
 * worker resumes where the last one's acknowledgements end. When the script is
 * done, the durable run must equal the plain XState run of the same inputs
 * after every step, hold every send once, leave nothing pending after a last
 * recovery, and verify clean (test/fixtures/crash-gen-checks.ts).
 *
 * The same cases run again on PostgreSQL, each in a fresh schema of one
 * throwaway server: a killed worker's connections drop mid-statement or
 * mid-transaction, and the server, not a file, decides what was committed.
 *
 * `AGENTCHARTS_CRASH_GEN_KILLS` sets the number of kills (default 24, what CI
 * runs; the soak is `npm run crash -- --generated 1000`),
 * `AGENTCHARTS_CRASH_GEN_PG_KILLS` those on PostgreSQL (default 12),
 * `AGENTCHARTS_CRASH_GEN_SEED` the seed of the cases and kill plans (fixed by
 * default, so CI runs the cases that passed here; timed kills land at real
 * moments, so a run is close to, not exactly, the same run again).
 *
 * This process never runs a generated machine (the workers do, plain run
 * included): one that looped would hang it. A worker that runs 30 s is SIGKILLed
 * and fails the test, naming its case.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, test } from 'vitest';
import { seededRandom } from '../src/testing/random.ts';
import { machineSpecArb, scriptArb, type ScriptStep } from './support/machine-gen.ts';
import { usePostgres } from './support/postgres.ts';
import { suiteTempDir } from './support/temp-dir.ts';
import { caseFiles, type CaseFiles, type CrashCase } from './fixtures/crash-gen-case.ts';
import { checkCase, type CaseResult } from './fixtures/crash-gen-checks.ts';
import {
  randomKills,
  replayKills,
  runCase,
  WorkerFailure,
  WorkerPool,
  type CaseRun,
  type KillPlan,
  type Planner,
} from './fixtures/crash-gen-runner.ts';

const KILLS = Number(process.env['AGENTCHARTS_CRASH_GEN_KILLS'] ?? 24);
/** Kills of the same test on PostgreSQL (default 12 in CI; the soak sets it). */
const PG_KILLS = Number(process.env['AGENTCHARTS_CRASH_GEN_PG_KILLS'] ?? 12);
const SEED = Number(process.env['AGENTCHARTS_CRASH_GEN_SEED'] ?? 20_261_126);
/** Closing steps of every case: the promises it started settle, so little stays pending. */
const DRAIN: ScriptStep[] = [{ settle: true }, { settle: true }];

/** Totals over a run, printed at its end. */
class Tally {
  readonly started = Date.now();

  constructor(private readonly store: string) {}

  readonly counts = new Map<string, number>();
  readonly failures: string[] = [];
  readonly excused: string[] = [];

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** `key n` for every counted key with this prefix. */
  list(prefix: string): string {
    return [...this.counts]
      .filter(([key]) => key.startsWith(prefix))
      .map(([key, n]) => `${key.slice(prefix.length)} ${n}`)
      .join(', ');
  }

  addCase(name: string, crashCase: CrashCase, run: CaseRun, result: CaseResult): void {
    this.add('cases');
    this.add('steps', crashCase.script.length);
    this.add('transitions', result.transitions);
    this.add('kills', run.phases.length);
    this.add('clean restarts', run.restarts);
    this.add('retried', run.retried);
    this.add('torn acks', result.tornAcks);
    this.add('sent before', result.sentBefore);
    for (const phase of run.phases) this.add(`phase ${phase}`);
    for (const plan of run.plans) this.add('die' in plan ? 'kind at a boundary' : 'kind timed');
    for (const [outcome, n] of result.recovered) this.add(`recovered ${outcome}`, n);
    if (result.excused !== undefined) this.excused.push(`case ${name}: ${result.excused}`);
  }

  summary(): string {
    return (
      `crash test, generated machines on ${this.store} (seed ${SEED}): ${this.get('kills')} kills ` +
      `(${this.list('kind ')}; in ${this.list('phase ')}) over ${this.get('cases')} cases ` +
      `(${this.get('too big')} more left out as too big), ${this.get('steps')} script steps, ` +
      `${this.get('transitions')} transitions committed, ${this.get('clean restarts')} clean ` +
      `restarts; ${this.get('sent before')} steps found committed before their ack and not ` +
      `sent again, ${this.get('torn acks')} torn acks, ${this.get('retried')} statements run ` +
      `again after a rollback; interrupted steps at recovery: ` +
      `${this.list('recovered ') || 'none'}; ${this.excused.length} divergences after a ` +
      `restart with timers of two actors due and armed at once; ${this.failures.length} failing cases ` +
      `(${this.get('fail without kills')} of them without any kill too); ` +
      `${((Date.now() - this.started) / 1000).toFixed(1)} s`
    );
  }
}

/**
 * Draws cases until `kills` kills are done, runs each in killed workers on the store
 * `storeOf` gives it (undefined: the case's own SQLite file), and fails naming the
 * failing cases.
 */
async function soak(
  pool: WorkerPool,
  dir: string,
  kills: number,
  store: string,
  storeOf: () => string | undefined,
): Promise<void> {
  const random = seededRandom(SEED);
  const tally = new Tally(store);
  const run = (files: CaseFiles, crashCase: CrashCase, planner: Planner) =>
    crash(pool, files, storeOf(), crashCase, planner);
  // Cases are drawn in batches until the kills are done (a case takes one to four).
  for (let batch = 0; tally.get('kills') < kills; batch++) {
    if (batch >= 50) throw new Error(`seed ${SEED}: too few cases for ${kills} kills`);
    const samples = fc.sample(fc.tuple(machineSpecArb, scriptArb), {
      seed: SEED + batch,
      numRuns: 100,
    });
    for (const [i, [spec, generated]] of samples.entries()) {
      if (tally.get('kills') >= kills) break;
      const name = `${batch}.${i}`;
      const crashCase: CrashCase = { spec, script: [...generated, ...DRAIN] };
      const allowed = Math.min(1 + Math.floor(random() * 4), kills - tally.get('kills'));
      const files = caseFiles(join(dir, `case-${name}`));
      const outcome = await run(files, crashCase, randomKills(random, allowed));
      if (outcome === 'skipped') {
        tally.add('too big');
        continue;
      }
      if ('failure' in outcome) {
        tally.failures.push(describeFailure(name, crashCase, [], [outcome.failure]));
        continue;
      }
      tally.addCase(name, crashCase, outcome.run, outcome.result);
      if (outcome.result.problems.length === 0) continue;
      // Triage: the same case run again without a kill.
      const again = await run(caseFiles(`${files.dir}-no-kill`), crashCase, replayKills([]));
      const alone =
        typeof again === 'object' && 'result' in again && again.result.problems.length > 0;
      if (alone) tally.add('fail without kills');
      const problems = alone
        ? [
            ...outcome.result.problems,
            'and without any kill: a divergence of the runtime, not of a crash',
          ]
        : outcome.result.problems;
      tally.failures.push(describeFailure(name, crashCase, outcome.run.plans, problems));
    }
  }
  console.log(tally.summary());
  for (const e of tally.excused) console.log(`  excused: ${e}`);
  expect(
    tally.failures.slice(0, 5),
    `seed ${SEED}: ${tally.failures.length} failing case(s)`,
  ).toEqual([]);
  expect(tally.get('kills')).toBe(kills);
}

describe('generated machines in a durable worker SIGKILLed at random moments', () => {
  const dir = suiteTempDir('agentcharts-crash-gen-');
  const pool = new WorkerPool();
  afterAll(() => pool.close());

  test(
    `a durable run equals the plain run after every step, holds each send once and verifies clean over ${KILLS} kills`,
    () => soak(pool, dir(), KILLS, 'SQLite', () => undefined),
    // Generous: a hung worker fails its case after 30 s, long before this.
    KILLS * 10_000 + 120_000,
  );

  describe('on PostgreSQL', () => {
    const pgDir = suiteTempDir('agentcharts-crash-gen-pg-');
    const server = usePostgres();
    test(
      `the same over ${PG_KILLS} kills, each case in a fresh schema of one server`,
      async () => {
        const pg = server();
        if (pg === undefined) return;
        await soak(pool, pgDir(), PG_KILLS, 'PostgreSQL', () => pg.freshUrl());
      },
      PG_KILLS * 10_000 + 120_000,
    );
  });
});

/**
 * Runs a case with `planner`'s kills and checks it; its directory stays only if
 * it failed. A hung or crashed worker fails the case (a long run goes on).
 */
async function crash(
  pool: WorkerPool,
  files: CaseFiles,
  store: string | undefined,
  crashCase: CrashCase,
  planner: Planner,
): Promise<'skipped' | { failure: string } | { run: CaseRun; result: CaseResult }> {
  mkdirSync(files.dir);
  writeFileSync(files.spec, JSON.stringify(crashCase));
  if (store !== undefined) writeFileSync(files.store, store);
  try {
    const run = await runCase(pool, files, crashCase.script, planner);
    const result = run.skipped ? undefined : checkCase(files);
    if (result === undefined || result.problems.length === 0) {
      rmSync(files.dir, { recursive: true, force: true });
    }
    return result === undefined ? 'skipped' : { run, result };
  } catch (error) {
    if (!(error instanceof WorkerFailure)) throw error;
    return { failure: error.message };
  }
}

function describeFailure(
  name: string,
  crashCase: CrashCase,
  plans: readonly KillPlan[],
  problems: readonly string[],
): string {
  return (
    `case ${name}: ${problems.slice(0, 5).join('\n')}\n  kills ${JSON.stringify(plans)}\n` +
    `  case  ${JSON.stringify(crashCase)}`
  );
}

/**
 * Cases the generated test once failed, each with the kill plan its failure
 * printed (`npm run crash:replay` runs one again): the fix of each stays fixed.
 */
const REPLAYS = new URL('./fixtures/crash-replay/', import.meta.url);

describe('the kill plans of cases that failed once replay clean', () => {
  const dir = suiteTempDir('agentcharts-crash-gen-replay-');
  const pool = new WorkerPool();
  afterAll(() => pool.close());

  const files = readdirSync(REPLAYS).filter((f) => f.endsWith('.json'));
  test.each(files)(
    '%s',
    async (file) => {
      const { case: crashCase, kills } = JSON.parse(
        readFileSync(new URL(file, REPLAYS), 'utf8'),
      ) as { case: CrashCase; kills: KillPlan[] };
      const outcome = await crash(
        pool,
        caseFiles(join(dir(), file.replace(/\.json$/, ''))),
        undefined,
        crashCase,
        replayKills(kills),
      );
      expect(outcome).not.toBe('skipped');
      if (outcome === 'skipped') return;
      expect('failure' in outcome ? outcome.failure : outcome.result.problems).toEqual([]);
    },
    120_000,
  );
});

describe('the crash test never hangs', () => {
  const dir = suiteTempDir('agentcharts-crash-gen-hang-');
  const pool = new WorkerPool();
  afterAll(() => pool.close());

  test('a worker stuck in a synchronous loop is SIGKILLed and fails its case, named', async () => {
    const files = caseFiles(join(dir(), 'case-spin'));
    mkdirSync(files.dir);
    const failure = await runCase(pool, files, [], replayKills([]), {
      hangMs: 2_000,
      spin: true,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkerFailure);
    expect(String(failure)).toContain(`the worker for ${files.dir} ran for 2 s`);
    expect(String(failure)).toContain('SIGKILLed');
    // Gone: signal 0 to its pid finds no process.
    const pid = (failure as WorkerFailure).pid;
    expect(pid).toBeTypeOf('number');
    expect(() => process.kill(pid as number, 0)).toThrow(/ESRCH/);
  });
});
