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
 * `AGENTCHARTS_CRASH_GEN_KILLS` sets the number of kills (default 24, what CI
 * runs; the soak is `npm run crash -- --generated 1000`),
 * `AGENTCHARTS_CRASH_GEN_SEED` the seed of the cases and kill plans (timed kills
 * land at real moments, so a replay is close to, not exactly, the same run).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { openStore } from '../src/index.ts';
import { seededRandom } from '../src/testing/random.ts';
import { runBoth } from './support/differential.ts';
import {
  buildMachine,
  Gate,
  machineSpecArb,
  scriptArb,
  type BuildOptions,
  type MachineSpec,
  type ScriptStep,
  type StateSpec,
} from './support/machine-gen.ts';
import { suiteTempDir } from './support/temp-dir.ts';
import { caseFiles, writeCase, type CrashCase } from './fixtures/crash-gen-case.ts';
import { checkCase, plainRun } from './fixtures/crash-gen-checks.ts';
import { runCase, WorkerPool, type KillPlan } from './fixtures/crash-gen-runner.ts';

const KILLS = Number(process.env['AGENTCHARTS_CRASH_GEN_KILLS'] ?? 24);
const SEED = Number(process.env['AGENTCHARTS_CRASH_GEN_SEED'] ?? Date.now() % 2_147_483_647);
/** Closing steps of every case: the promises it started settle, so little stays pending. */
const DRAIN: ScriptStep[] = [{ settle: true }, { settle: true }];
/**
 * Cases whose plain run consumes more events than this are left out: a child
 * machine that pings its parent back and forth makes thousands of commits, each
 * fsync'd, which cost minutes and test nothing a small case does not.
 */
const MAX_EVENTS = 300;
/**
 * Each generated promise gets an id of its own: with the shared id `work`,
 * recovery runs every awaited promise of that id again with the input of one of
 * them (the skipped test below). `AGENTCHARTS_CRASH_GEN_SHARED_WORK=1` runs the
 * shared id.
 */
const BUILD: BuildOptions = {
  workIdPerState: process.env['AGENTCHARTS_CRASH_GEN_SHARED_WORK'] !== '1',
};

/** Totals over a run, printed at its end. */
class Tally {
  readonly started = Date.now();
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
}

describe('generated machines in a durable worker SIGKILLed at random moments', () => {
  const dir = suiteTempDir('agentcharts-crash-gen-');
  const pool = new WorkerPool();
  beforeAll(() => {
    // XState's development build warns of events sent to stopped actors, which
    // generated machines do on purpose.
    vi.spyOn(console, 'warn').mockImplementation(() => {});
  });
  afterAll(() => pool.close());

  test(
    `a durable run equals the plain run after every step, holds each send once and verifies clean over ${KILLS} kills`,
    async () => {
      const random = seededRandom(SEED);
      const tally = new Tally();
      const samples = fc.sample(fc.tuple(machineSpecArb, scriptArb), {
        seed: SEED,
        numRuns: 4 * KILLS,
      });
      for (const [c, [spec, generated]] of samples.entries()) {
        if (tally.get('kills') >= KILLS) break;
        const crashCase: CrashCase = { spec, script: [...generated, ...DRAIN], build: BUILD };
        const plain = await plainRun(crashCase);
        if (plain.events > MAX_EVENTS) {
          tally.add('too big');
          continue;
        }
        const files = caseFiles(join(dir(), `case-${c}`));
        mkdirSync(files.dir);
        writeCase(files, crashCase);
        // Several kills a case.
        const allowed = Math.min(1 + Math.floor(random() * 4), KILLS - tally.get('kills'));
        const run = await runCase(pool, files, crashCase.script, random, allowed);
        const result = await checkCase(files, plain);
        tally.add('cases');
        tally.add('steps', crashCase.script.length);
        tally.add('kills', run.phases.length);
        tally.add('clean restarts', run.restarts);
        tally.add('torn acks', result.tornAcks);
        tally.add('sent before', result.sentBefore);
        for (const phase of run.phases) tally.add(`phase ${phase}`);
        for (const plan of run.plans)
          tally.add('die' in plan ? 'kind at a boundary' : 'kind timed');
        for (const [outcome, n] of result.recovered) tally.add(`invoke ${outcome}`, n);
        if (result.excused !== undefined) tally.excused.push(`case ${c}: ${result.excused}`);
        if (result.problems.length > 0) {
          tally.failures.push(describeFailure(c, crashCase, run.plans, result.problems));
        }
      }
      console.log(
        `crash test, generated machines (seed ${SEED}): ${tally.get('kills')} kills ` +
          `(${tally.list('kind ')}; in ${tally.list('phase ')}) over ${tally.get('cases')} cases ` +
          `(${tally.get('too big')} left out as too big), ${tally.get('steps')} script steps, ` +
          `${tally.get('clean restarts')} clean restarts; ${tally.get('sent before')} steps found ` +
          `committed before their ack and not sent again, ${tally.get('torn acks')} torn acks; ` +
          `interrupted promises: ${tally.list('invoke ') || 'none'}; ` +
          `${tally.excused.length} divergences after a restart with timers of two actors due at ` +
          `once; ${tally.failures.length} failing cases; ` +
          `${((Date.now() - tally.started) / 1000).toFixed(1)} s`,
      );
      for (const e of tally.excused) console.log(`  excused: ${e}`);
      expect(
        tally.failures.slice(0, 5),
        `seed ${SEED}: ${tally.failures.length} failing case(s)`,
      ).toEqual([]);
      expect(tally.get('kills')).toBe(KILLS);
    },
    KILLS * 15_000 + 60_000,
  );
});

function describeFailure(
  c: number,
  crashCase: CrashCase,
  plans: readonly KillPlan[],
  problems: readonly string[],
): string {
  return (
    `case ${c}: ${problems.slice(0, 5).join('\n')}\n  kills ${JSON.stringify(plans)}\n` +
    `  case  ${JSON.stringify(crashCase)}`
  );
}

/** A state of a hand-written spec: nothing but what `extra` gives it. */
function state(id: string, extra: Partial<StateSpec> = {}): StateSpec {
  return {
    id,
    kind: 'atomic',
    children: [],
    history: null,
    entry: [],
    exit: [],
    on: [],
    after: null,
    always: null,
    work: null,
    kid: null,
    onDone: null,
    ...extra,
  };
}

describe('found by the crash test (open runtime bugs: unskip once fixed)', () => {
  const dir = suiteTempDir('agentcharts-crash-found-');
  beforeAll(() => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
  });

  /*
   * Recovery runs the promises an actor awaits again by looking each up in the
   * restored snapshot's `children` by invoke id (src/durable/invoke.ts,
   * resumeInvokes: `children[id]`, its `input` and `logic`). Two promises of one
   * id awaited at once — a state and its child state both invoking `work` here,
   * or two regions of a parallel state — are one entry there, so after a restart
   * (a kill, or a clean `recover()`) both run again with the input of the one
   * XState kept: plain XState resolves s0's promise (n = 0 * 2 + 1 = 1, taken by
   * s0a's onDone) and rejects s0a's (one error noted); the durable actor, after a
   * restart between entering s0 and the settle, notes two errors and keeps
   * n = 0. The step rows and the ledger do not hold each invoke's input, so the
   * runtime cannot tell them apart. Found with seed 1 (case 0) and seed 2
   * (cases 4, 11, 12, 14): 4 of 17 cases before the crash test gave each state's
   * promise an id of its own.
   */
  test.skip('two promises of one invoke id awaited across a restart each run again with their own input', async () => {
    const spec: MachineSpec = {
      states: [
        state('s0', {
          kind: 'compound',
          work: { fail: false, onDone: 's1', boom: false, onError: null },
          children: [
            state('s0a', { work: { fail: true, onDone: null, boom: false, onError: null } }),
          ],
        }),
        state('s1'),
      ],
      rootOn: [],
      kid: { pingOnStart: false, pongReply: false, failOnPong: false, busyDelay: 150 },
    };
    const file = join(dir(), 'two-promises.db');
    await runBoth(
      () => {
        const gate = new Gate();
        return { machine: buildMachine(spec, gate), gate };
      },
      [{ restart: true }, { settle: true }],
      { open: () => openStore(`sqlite:${file}`), reopens: true },
    );
  });
});
