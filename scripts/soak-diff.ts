/**
 * `npm run soak:diff -- [--runs N] [--seed S] [--store memory|sqlite|postgres] [--passes RATE]`:
 * the long run of the differential test (test/differential.test.ts): N random
 * machines and scripts (default 20,000) on plain XState and on durable actors,
 * compared after every step, and `verify` run on each case's log (an honest log
 * it flags fails the case). A difference prints the machine and script
 * fast-check shrank it to, and the seed that replays it; the exit code is 1.
 * `--store postgres` starts a throwaway server (as the tests do) and runs each
 * case in a fresh schema, every restart reconnecting. `--passes 0.3` runs a pass
 * of the message poller after three commits in ten, before they return, and
 * before three lookups in ten (test/support/poller-passes.ts). `--hurry 0.5`
 * sends half the caller's events that follow another without settling after the
 * first (runBoth's `hurry`): they arrive while its cascade may be under way.
 * `--overlap 0.5` sends half the caller's events that another follows without
 * awaiting them (runBoth's `overlap`): the next is sent at once, as by a caller
 * that fires several sends together.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { openStore, type Store } from '../src/index.ts';
import { runBoth } from '../test/support/differential.ts';
import { buildMachine, Gate, machineSpecArb, scriptArb } from '../test/support/machine-gen.ts';
import { lcg, seedOf, withPollerPasses } from '../test/support/poller-passes.ts';
import { startPostgres, type PostgresServer } from '../test/support/postgres.ts';

const args = process.argv.slice(2);
let runs = 20_000;
let seed = Date.now() % 2_147_483_647;
const KINDS = ['memory', 'sqlite', 'postgres'] as const;
let kind = 'memory' as (typeof KINDS)[number];
let passes = 0;
let hurry = 0;
let overlap = 0;
for (let i = 0; i < args.length; i++) {
  const [flag, value] = [args[i], args[i + 1]];
  if (flag === '--runs' && value !== undefined && /^\d+$/.test(value)) runs = Number(value);
  else if (flag === '--seed' && value !== undefined && /^-?\d+$/.test(value)) seed = Number(value);
  else if (flag === '--store' && KINDS.some((k) => k === value)) kind = value as typeof kind;
  else if (flag === '--passes' && value !== undefined && /^(0(\.\d+)?|1)$/.test(value)) {
    passes = Number(value);
  } else if (flag === '--hurry' && value !== undefined && /^(0(\.\d+)?|1)$/.test(value)) {
    hurry = Number(value);
  } else if (flag === '--overlap' && value !== undefined && /^(0(\.\d+)?|1)$/.test(value)) {
    overlap = Number(value);
  } else {
    console.error(
      `unknown option ${flag ?? ''}; usage: soak:diff [--runs N] [--seed S] [--store memory|sqlite|postgres] [--passes RATE] [--hurry RATE] [--overlap RATE]`,
    );
    process.exit(64);
  }
  i++;
}
// XState's development build warns of events sent to stopped actors, which
// generated machines do on purpose.
console.warn = () => {};

const dir = mkdtempSync(join(tmpdir(), 'agentcharts-soak-diff-'));
let cases = 0;
let steps = 0;
let restarts = 0;
let tiedRestarts = 0;
/** Cases cut short where plain XState's own invocations multiplied (Gate.MAX_RELEASES). */
let runaways = 0;
/** Cases whose durable side had a grandchild of the root (a kid's own child machine). */
let withGrandchildren = 0;
/** Cases where a durable step found a system id elsewhere in its tree (src/durable/system-ids.ts). */
let withTreeLookups = 0;
/** The most a case may take (the slowest seen take under 4 s). */
const CASE_MS = 60_000;
/**
 * A case stuck in a synchronous loop (a generated machine that plain XState runs
 * forever within one step) blocks the event loop, so the timer above never fires.
 * A watchdog thread sees the case count stand still, prints the case, and kills
 * the process (soak:diff seed 47001 once hung that way for as long as it was let).
 */
const beat = new Int32Array(new SharedArrayBuffer(4));
const currentCase = join(dir, 'current-case.json');
const watchdog = new Worker(
  `const { workerData } = require('node:worker_threads');
  const fs = require('node:fs');
  const beat = new Int32Array(workerData.sab);
  let last = -1;
  setInterval(() => {
    const now = Atomics.load(beat, 0);
    if (now === last) {
      let text = '';
      try { text = fs.readFileSync(workerData.file, 'utf8'); } catch {}
      fs.writeSync(2, 'a case blocked the process for over ' + workerData.ms / 1000 + ' s (a synchronous loop): ' + text + String.fromCharCode(10));
      process.kill(process.pid, 'SIGKILL');
    }
    last = now;
  }, workerData.ms);`,
  { eval: true, workerData: { sab: beat.buffer, file: currentCase, ms: 2 * CASE_MS } },
);
watchdog.unref();
const started = Date.now();
const server: PostgresServer | undefined = kind === 'postgres' ? await startPostgres() : undefined;
/** Where a case's restarts reopen its store: the same file, or the same schema. */
function reopenable(file: string): () => Store {
  if (server === undefined) return () => openStore(`sqlite:${file}`);
  const url = server.freshUrl();
  return () => openStore(url);
}
/** Which caller's events the case picks at `rate` (`--hurry`, `--overlap`), replayable. */
function picking(rate: number, caseSeed: number): (step: number) => boolean {
  if (rate === 0) return () => false;
  const random = lcg(caseSeed);
  return () => random() < rate;
}

try {
  await fc.assert(
    fc.asyncProperty(machineSpecArb, scriptArb, async (spec, script) => {
      cases++;
      Atomics.add(beat, 0, 1);
      writeFileSync(currentCase, JSON.stringify([spec, script]));
      steps += script.length;
      const file = join(dir, `case-${cases}.db`);
      const passing = <T extends Store>(store: T): T => {
        if (passes > 0) withPollerPasses(store, passes, seedOf(JSON.stringify([spec, script])));
        return store;
      };
      const memory = kind === 'memory' ? passing(openStore('memory:')) : undefined;
      const reopen = reopenable(file);
      // A case that runs away (a generated machine whose effects feed themselves)
      // is a finding of its own: reported with its machine and script, never a hang.
      let timer: NodeJS.Timeout | undefined;
      const runaway = new Promise<never>(() => {
        timer = setTimeout(() => {
          // Its shrinks would run away too, each for as long: it ends the run.
          console.error(`a case ran over ${CASE_MS / 1000} s: ${JSON.stringify([spec, script])}`);
          process.exit(1);
        }, CASE_MS);
      });
      const result = await Promise.race([
        runBoth(
          () => {
            const gate = new Gate();
            return { machine: buildMachine(spec, gate), gate };
          },
          script,
          memory
            ? { open: () => memory, reopens: false }
            : { open: () => passing(reopen()), reopens: true },
          picking(hurry, seedOf(JSON.stringify([spec, script, 'hurry']))),
          picking(overlap, seedOf(JSON.stringify([spec, script, 'overlap']))),
        ),
        runaway,
      ]).finally(() => clearTimeout(timer));
      await memory?.close();
      restarts += result.restarts;
      tiedRestarts += result.tiedRestarts;
      if (result.runaway !== undefined) runaways++;
      if (result.grandchildren > 0) withGrandchildren++;
      if (result.treeLookups > 0) withTreeLookups++;
      if (kind === 'sqlite') rmSync(file, { force: true });
      if (cases % 1000 === 0) {
        process.stderr.write(`  ${cases} cases, ${steps} steps, ${restarts} restarts\n`);
      }
    }),
    { numRuns: runs, seed },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `soak:diff: ${cases} cases on ${kind}${passes > 0 ? ` with poller passes (rate ${passes})` : ''}${hurry > 0 ? `, hurrying caller's events (rate ${hurry})` : ''}${overlap > 0 ? `, overlapping caller's sends (rate ${overlap})` : ''} (seed ${seed}), ${steps} script steps, ${restarts} restarts (${tiedRestarts} more left out: timers of two actors due and armed at one instant, one of them unranked), ${withGrandchildren} cases with a grandchild, ${withTreeLookups} with a system id found elsewhere in the tree, ${runaways} cut short where plain XState's own invocations multiplied: durable equals plain XState after every step, and verify accepts every log (${seconds} s)`,
  );
} catch (error) {
  console.error(String(error instanceof Error ? error.message : error));
  // fast-check 4 keeps what the failing case threw (the divergence) as the cause.
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause !== undefined) {
    console.error(
      `the case threw: ${cause instanceof Error ? (cause.stack ?? cause.message) : inspect(cause)}`,
    );
  }
  console.error(
    `seed ${seed}: replay with npm run soak:diff -- --seed ${seed} --runs ${runs} --store ${kind}${passes > 0 ? ` --passes ${passes}` : ''}${hurry > 0 ? ` --hurry ${hurry}` : ''}${overlap > 0 ? ` --overlap ${overlap}` : ''}`,
  );
  process.exitCode = 1;
} finally {
  await server?.destroy();
  rmSync(dir, { recursive: true, force: true });
}
