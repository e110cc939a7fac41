/**
 * The refund demo's orchestrator: tells the refund story of “Agent State Machine Design” with real
 * processes.
 * It picks the task (resume the last unfinished demo task, or start a new one),
 * forks worker processes, plays the manager who approves, SIGKILLs the worker
 * right after the payment provider booked the refund, lets a new worker recover,
 * and prints every transition as it happens, then the audit trail, the
 * provider's ledger, `verify` and where the database is.
 */
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  openStore,
  verify,
  type ActorRow,
  type RecoveryReport,
  type Store,
  type VerifyReport,
} from 'agentcharts';
import { charts } from 'agentcharts/machines';
import { clockTime, columns, dollars, eventName, transitionText } from './format.ts';
import {
  DEMO_APPROVER,
  MANAGER_DELAY_MS,
  REFUND_STEP,
  type ParentMessage,
  type WorkerArgs,
  type WorkerMessage,
} from './protocol.ts';
import { PaymentProvider } from './provider.ts';

export interface DemoOptions {
  /** The SQLite file (created when missing). */
  db: string;
  /** Kill the first worker with SIGKILL right after the provider booked the refund. Default true. */
  kill?: boolean;
  /** Where lines go; default stdout. */
  write?: (text: string) => void;
}

export interface DemoOutcome {
  /** The story ran to a final state, no refund was duplicated and verify is clean. */
  ok: boolean;
  taskId: string;
  mode: 'fresh' | 'resume';
  finalState: string | null;
  refunds: number;
  verify: VerifyReport;
  file: string;
}

const TASK_ID = /^refund-(\d+)$/;
/** Order and amount of the document's story (refund #12345, $150.00); later tasks count up. */
const FIRST_ORDER = 12_345;
const AMOUNT_CENTS = 15_000;
/** No worker should take this long; a hung one is killed and the demo fails. */
const WORKER_TIMEOUT_MS = 60_000;

/** The last demo task in the store (highest n of `refund-<n>`), if any. */
async function lastDemoTask(store: Store): Promise<{ n: number; row: ActorRow } | undefined> {
  let last: { n: number; row: ActorRow } | undefined;
  let afterId: string | undefined;
  for (;;) {
    const page = await store.listActors({ machineId: 'task-lifecycle', afterId, limit: 500 });
    if (page.length === 0) return last;
    afterId = page[page.length - 1]?.id;
    for (const row of page) {
      const n = Number(TASK_ID.exec(row.id)?.[1] ?? NaN);
      if (Number.isSafeInteger(n) && (!last || n > last.n)) last = { n, row };
    }
  }
}

/** Which task this run tells, and why. */
async function chooseTask(
  store: Store,
): Promise<{ taskId: string; n: number; mode: 'fresh' | 'resume'; why: string }> {
  const last = await lastDemoTask(store);
  if (!last) {
    return { taskId: 'refund-1', n: 1, mode: 'fresh', why: 'this database has no demo task yet' };
  }
  if (last.row.status === 'active') {
    return {
      taskId: last.row.id,
      n: last.n,
      mode: 'resume',
      why: `it stopped unfinished in state "${last.row.state}" at ${clockTime(last.row.updatedAt)} (version ${last.row.version}); a new worker recovers it`,
    };
  }
  const n = last.n + 1;
  return {
    taskId: `refund-${n}`,
    n,
    mode: 'fresh',
    why: `${last.row.id} already finished (${last.row.state})`,
  };
}

type WorkerEnd =
  | { kind: 'finished'; state: string; lastError: string | null }
  | { kind: 'killed'; pid: number }
  | { kind: 'failed'; message: string };

/** Runs the orchestrator; resolves when the story is told. */
export async function runDemo(options: DemoOptions): Promise<DemoOutcome> {
  const write = options.write ?? ((text: string) => process.stdout.write(text));
  const say = (line = '') => write(`${line}\n`);
  const file = resolve(options.db);
  const existed = existsSync(file);
  const store = openStore(`sqlite:${file}`);
  const provider = new PaymentProvider(file);
  try {
    const { taskId, n, mode, why } = await chooseTask(store);
    const orderId = String(FIRST_ORDER + n - 1);
    const key = `${taskId}:${REFUND_STEP}`;
    say(
      'agentcharts refund demo: the refund story of “Agent State Machine Design”, told by real processes',
    );
    say(`  database  ${file} (${existed ? 'existing' : 'new'} SQLite file)`);
    say(`  task      ${taskId}: refund ${dollars(AMOUNT_CENTS)} for order ${orderId}`);
    say(
      `  ${`[${process.pid}]`.padEnd(8)}  this process: it forks the workers and plays the manager`,
    );
    say();
    say(
      mode === 'resume'
        ? `resuming ${taskId}: ${why}`
        : `starting fresh: ${taskId}, because ${why}`,
    );
    say();

    const pidWidth = String(process.pid).length + 2;
    const line = (at: number, pid: number, text: string) =>
      say(`${clockTime(at)}  ${`[${pid}]`.padEnd(pidWidth)}  ${text}`);
    const continuation = ' '.repeat(12 + 2 + pidWidth + 2);

    const printRecovery = (report: RecoveryReport) => {
      if (report.actors.length === 0 && report.steps.length === 0) {
        say(`${continuation}nothing to recover: no unfinished actor, no interrupted step`);
        return;
      }
      const rows: string[][] = [];
      for (const s of report.steps) {
        rows.push([
          'step',
          s.key,
          `executing → ${s.outcome}`,
          s.outcome === 'done' ? 'reconcile: the provider has a refund under this key' : s.detail,
        ]);
      }
      for (const a of report.actors) {
        const what =
          a.action === 'sent' && a.event
            ? `sent ${a.event.type}: ${a.reason}`
            : a.action === 'failed'
              ? `failed: ${a.error?.message ?? a.reason}`
              : `resumed: ${a.reason}`;
        rows.push(['actor', a.actorId, `${a.stateBefore} → ${a.stateAfter}`, what]);
      }
      const shown = rows.slice(0, 12);
      for (const r of shown) say(columns(r, [5, 15, 18], continuation));
      if (rows.length > shown.length) {
        say(`${continuation}… and ${rows.length - shown.length} more`);
      }
    };

    // The worker runs as this process does: the same loader (tsx) and the same
    // `--conditions`, so `agentcharts` resolves to the same files in both.
    const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));
    const execArgv = process.execArgv;

    const runWorker = (args: WorkerArgs): Promise<WorkerEnd> =>
      new Promise((done) => {
        const argv = [
          '--db',
          args.db,
          '--task',
          args.task,
          '--order',
          args.orderId,
          '--amount-cents',
          String(args.amountCents),
          ...(args.holdAfterRefund ? ['--hold-after-refund'] : []),
        ];
        const child = fork(workerPath, argv, {
          execArgv,
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        });
        const pid = child.pid ?? 0;
        let end: WorkerEnd | undefined;
        let killedByUs = false;
        const timers: NodeJS.Timeout[] = [];
        const kill = () => {
          killedByUs = true;
          child.kill('SIGKILL');
        };
        const onInterrupt = () => {
          child.kill('SIGKILL');
          say();
          say(`interrupted: ${taskId} stays in the database; run the demo again to resume it`);
          process.exit(130);
        };
        process.once('SIGINT', onInterrupt);
        timers.push(
          setTimeout(() => {
            end = {
              kind: 'failed',
              message: `worker ${pid} took longer than ${WORKER_TIMEOUT_MS} ms`,
            };
            child.kill('SIGKILL');
          }, WORKER_TIMEOUT_MS),
        );

        child.on('message', (raw: WorkerMessage) => {
          switch (raw.kind) {
            case 'started':
              line(raw.at, pid, `worker process started`);
              break;
            case 'recovering':
              line(
                raw.at,
                pid,
                'recover(): settle interrupted steps, fire overdue timers, apply recovery policies',
              );
              break;
            case 'recovered':
              if (raw.report.actors.length + raw.report.steps.length > 0) {
                line(
                  raw.at,
                  pid,
                  `recover() report: ${raw.report.steps.length} interrupted step(s), ${raw.report.actors.length} unfinished actor(s)`,
                );
              }
              printRecovery(raw.report);
              break;
            case 'transition':
              line(raw.at, pid, transitionText(raw.from, raw.eventType, raw.to, raw.note));
              break;
            case 'emitted':
              line(raw.at, pid, `emitted ${raw.eventType}: ${raw.note}`);
              break;
            case 'awaiting-approval': {
              line(
                raw.at,
                pid,
                `waiting for the manager's approval (deadline ${clockTime(raw.deadline)})`,
              );
              timers.push(
                setTimeout(() => {
                  line(Date.now(), process.pid, `manager ${DEMO_APPROVER} approves the refund`);
                  const message: ParentMessage = { kind: 'approve', approver: DEMO_APPROVER };
                  if (child.connected) child.send(message);
                }, MANAGER_DELAY_MS),
              );
              break;
            }
            case 'provider-call':
              line(
                raw.at,
                pid,
                raw.status === 200
                  ? `payment provider: refund ${raw.key} → 200 OK, booked ${raw.refundId ?? ''}`
                  : `payment provider: refund ${raw.key} → ${raw.status} Service Unavailable (transient)`,
              );
              break;
            case 'step-reused':
              line(
                raw.at,
                pid,
                `step ${raw.key}: already done, returns ${raw.receipt.refundId} from the store; the provider is not called`,
              );
              break;
            case 'refund-booked':
              line(
                Date.now(),
                process.pid,
                `SIGKILL worker ${pid}: the provider booked ${raw.refundId}, the step is not yet marked done`,
              );
              kill();
              break;
            case 'rejected':
              line(raw.at, pid, `rejected: ${raw.message}`);
              break;
            case 'finished':
              end = { kind: 'finished', state: raw.state, lastError: raw.lastError };
              break;
            case 'failed':
              end = { kind: 'failed', message: raw.message };
              break;
          }
        });
        child.on('close', (code, signal) => {
          process.removeListener('SIGINT', onInterrupt);
          for (const t of timers) clearTimeout(t);
          if (end) done(end);
          else if (killedByUs && signal === 'SIGKILL') done({ kind: 'killed', pid });
          else
            done({
              kind: 'failed',
              message: `worker ${pid} exited (${signal ?? `code ${code ?? '?'}`}) before the task finished`,
            });
        });
      });

    let end: WorkerEnd | undefined;
    let killed = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      end = await runWorker({
        db: file,
        task: taskId,
        orderId,
        amountCents: AMOUNT_CENTS,
        holdAfterRefund: (options.kill ?? true) && !killed,
      });
      if (end.kind !== 'killed') break;
      killed = true;
      const [actor, step] = [await store.loadActor(taskId), await store.getStep(key)];
      line(
        Date.now(),
        process.pid,
        `worker ${end.pid} is gone (SIGKILL). The store says: task ${taskId} "${actor?.state ?? '?'}", step ${key} "${step?.status ?? 'missing'}"`,
      );
      line(
        Date.now(),
        process.pid,
        'starting a new worker process: it recovers before doing anything else',
      );
    }

    say();
    if (end?.kind === 'failed') say(`the demo failed: ${end.message}`);
    else if (end?.kind === 'finished') {
      say(
        end.state === 'done'
          ? `${taskId} is done.`
          : `${taskId} ended in "${end.state}"${end.lastError ? `: ${end.lastError}` : ''}.`,
      );
    }

    // The audit trail, straight from the store.
    const history = await store.history(taskId);
    say();
    say(`Audit trail of ${taskId} (table transitions; each row hashes the previous one):`);
    const trail = [-3, 12, 8, 18, 8, 14];
    say(columns(['seq', 'time', 'from', 'event', 'to', 'by', 'hash'], trail));
    for (const r of history) {
      const meta = JSON.parse(r.metadata) as { source?: string; pid?: number };
      const by = `${meta.source ?? '?'}${meta.pid !== undefined ? ` [${meta.pid}]` : ''}`;
      say(
        columns(
          [
            String(r.seq),
            clockTime(r.at),
            r.fromState ?? '-',
            eventName(r.eventType),
            r.toState,
            by,
            r.hash.slice(0, 12),
          ],
          trail,
        ),
      );
    }

    // The provider's side.
    const calls = provider.callsFor(key);
    const refunds = provider.refundsFor(key);
    say();
    say(`Payment provider (tables demo_provider_*, written outside the store's transactions):`);
    const ledger = [-4, 12, 17];
    say(columns(['call', 'time', 'idempotency key', 'answer'], ledger));
    calls.forEach((c, i) => {
      const answer =
        c.status === 200 ? `200 OK, booked ${c.refundId ?? ''}` : `${c.status} Service Unavailable`;
      say(columns([String(i + 1), clockTime(c.at), c.idempotencyKey, answer], ledger));
    });
    const booked = [7, 12, 17, 5];
    say(columns(['refund', 'time', 'idempotency key', 'order', 'amount'], booked));
    for (const r of refunds) {
      say(
        columns(
          [r.refundId, clockTime(r.createdAt), r.idempotencyKey, r.orderId, dollars(r.amountCents)],
          booked,
        ),
      );
    }
    say(
      refunds.length === 1
        ? `  exactly one refund under ${key}: the refund ran once, across the crash and the retry`
        : `  ${refunds.length} refunds under ${key}${refunds.length > 1 ? ': DUPLICATE REFUND' : ''}`,
    );

    const report = await verify(store, { charts });
    say();
    if (report.ok) {
      say(
        `verify: ok (${report.actorsChecked} actor(s), ${report.rowsChecked} rows): every hash chain intact, every snapshot equals the replay of its events`,
      );
    } else {
      say(`verify: ${report.problems.length} problem(s)`);
      for (const p of report.problems) {
        say(`  ${p.actorId}${p.seq !== undefined ? ` row ${p.seq}` : ''}: ${p.kind}: ${p.detail}`);
      }
    }
    const finalRow = await store.loadActor(taskId);
    say();
    say(`database: ${file}`);
    say(`  check it: npm run agentcharts -- verify --db ${file}`);
    say(
      finalRow && finalRow.status !== 'active'
        ? `  run the demo again: ${taskId} is finished, so it starts fresh with refund-${n + 1}`
        : `  run the demo again: it resumes ${taskId}`,
    );

    const finished = end?.kind === 'finished';
    return {
      ok: finished && refunds.length <= 1 && report.ok,
      taskId,
      mode,
      finalState: finalRow?.state ?? null,
      refunds: refunds.length,
      verify: report,
      file,
    };
  } finally {
    provider.close();
    await store.close();
  }
}
