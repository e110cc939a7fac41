/**
 * A demo worker process: `worker.ts --db <file> --task <id> …`, forked by the
 * demo (story.ts) with an IPC channel and the demo's own loader and conditions.
 * It does what a real agent worker does on start: recover the store (settling an
 * interrupted refund by asking the provider), then drive its task from whatever
 * state the store says it is in.
 * Every decision comes from the durable task state, never from this process's
 * memory, so a fresh process continues where a killed one stopped.
 */
import { parseArgs } from 'node:util';
import {
  InvalidEventError,
  InvalidTransitionError,
  createDurableActor,
  getRuntime,
  openStore,
  recover,
  type DurableActor,
} from 'agentcharts';
import { charts, taskLifecycle } from 'agentcharts/machines';
import { retryDelay, type TaskLifecycleContext } from 'agentcharts/machines/task-lifecycle';
import {
  REFUND_STEP,
  demoTaskInput,
  type ParentMessage,
  type WorkerArgs,
  type WorkerMessage,
} from './protocol.ts';
import { PaymentProvider, ProviderUnavailableError, type RefundReceipt } from './provider.ts';

type TaskActor = DurableActor<typeof taskLifecycle.machine>;

/** Sends one message to the parent and resolves once it is handed to the channel. */
function tell(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      resolve();
      return;
    }
    process.send(message, undefined, undefined, () => resolve());
  });
}

function parseWorkerArgs(argv: string[]): WorkerArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      db: { type: 'string' },
      task: { type: 'string' },
      order: { type: 'string' },
      'amount-cents': { type: 'string' },
      'hold-after-refund': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const amountCents = Number(values['amount-cents']);
  if (!values.db || !values.task || !values.order || !Number.isInteger(amountCents)) {
    throw new Error('usage: worker.ts --db <file> --task <id> --order <id> --amount-cents <n>');
  }
  return {
    db: values.db,
    task: values.task,
    orderId: values.order,
    amountCents,
    holdAfterRefund: values['hold-after-refund'] ?? false,
  };
}

/** A short note for a transition line: why it happened or what comes next. */
function noteFor(
  to: string,
  eventType: string,
  source: string,
  context: TaskLifecycleContext,
): string | undefined {
  const parts: string[] = [];
  if (source === 'recover') parts.push('sent by recover(): the recovery policy of a stale state');
  if (eventType === 'PAUSE_FOR_APPROVAL' && context.approval) parts.push(context.approval.reason);
  if (eventType === 'APPROVAL_GRANTED' && context.approval?.approver) {
    parts.push(`approved by ${context.approval.approver}`);
  }
  if (to === 'retrying' && context.retry_count >= context.max_retries) {
    parts.push(`retries exhausted (${context.retry_count} of ${context.max_retries})`);
  } else if (to === 'retrying') {
    const delay = retryDelay(context.retry_count, {
      ...context.backoff,
      seed: context.jitter_seed,
    });
    parts.push(
      `retry ${context.retry_count + 1} of ${context.max_retries} in ${delay} ms (backoff with jitter)`,
    );
  }
  if (source === 'timer') parts.push('durable timer: the backoff ran out');
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** Resolves at the task's next committed transition. */
function nextTransition(actor: TaskActor): Promise<void> {
  return new Promise((resolve) => {
    const sub = actor.subscribe(() => {
      sub.unsubscribe();
      resolve();
    });
  });
}

async function main(): Promise<void> {
  const args = parseWorkerArgs(process.argv.slice(2));
  const pid = process.pid;
  await tell({ kind: 'started', at: Date.now(), pid });

  const store = openStore(`sqlite:${args.db}`);
  const provider = new PaymentProvider(args.db);
  const runtime = getRuntime(store, { charts });
  runtime.observe({
    onTransition: (n) => {
      if (n.actorId !== args.task) return;
      const context = n.snapshot.context as TaskLifecycleContext;
      const note = noteFor(n.to, n.eventType, n.source, context);
      void tell({
        kind: 'transition',
        at: n.at,
        actorId: n.actorId,
        version: n.version,
        from: n.from,
        to: n.to,
        // The log's name: a timer's transition is the document's RETRY, not xstate.after.*.
        eventType: n.eventType,
        source: n.source,
        ...(note !== undefined ? { note } : {}),
      });
    },
    onEmitted: (n) => {
      if (n.actorId !== args.task) return;
      void tell({
        kind: 'emitted',
        at: n.at,
        eventType: n.event.type,
        note: 'the manager is reminded of the pending approval',
      });
    },
  });

  await tell({ kind: 'recovering', at: Date.now() });
  // 1. What every worker does first: recover. An interrupted refund is settled by
  //    asking the provider whether it booked a refund under the step's key.
  const report = await recover(store, {
    charts,
    reconcile: (step) => {
      if (step.name !== REFUND_STEP) throw new Error('not a demo step; left for an operator');
      const receipt = provider.findRefund(step.key);
      return receipt
        ? { status: 'done', result: receipt }
        : { status: 'not_done', reason: 'the provider has no refund under this key' };
    },
  });
  await tell({ kind: 'recovered', at: Date.now(), report });

  // 2. Load the task (or create it on a fresh run).
  const task: TaskActor = await createDurableActor(taskLifecycle.machine, {
    id: args.task,
    store,
    input: demoTaskInput(args.task),
    metadata: { pid },
  });

  process.on('message', (raw: ParentMessage) => {
    if (raw.kind !== 'approve') return;
    task
      .send({ type: 'APPROVAL_GRANTED', approver: raw.approver }, { pid })
      .catch((error: unknown) => {
        if (error instanceof InvalidTransitionError || error instanceof InvalidEventError) {
          void tell({ kind: 'rejected', at: Date.now(), message: error.message });
        } else {
          void tell({ kind: 'failed', at: Date.now(), message: String(error) });
        }
      });
  });

  await drive(task, args, provider);

  const context = task.getSnapshot().context;
  await runtime.close();
  await store.close();
  provider.close();
  await tell({
    kind: 'finished',
    at: Date.now(),
    state: task.state,
    lastError: context.last_error?.message ?? null,
  });
  process.disconnect?.();
}

/** Moves the task on from its stored state until it is final. */
async function drive(task: TaskActor, args: WorkerArgs, provider: PaymentProvider): Promise<void> {
  const pid = process.pid;
  for (;;) {
    const snapshot = task.getSnapshot();
    if (snapshot.status !== 'active') return;
    const context = snapshot.context;
    switch (task.state) {
      case 'planned':
        await task.send({ type: 'START' }, { pid });
        break;
      case 'running':
        if (context.approval?.status !== 'granted') {
          // Plan: validate the order, check the refund policy (no side effects), then ask.
          await task.send(
            {
              type: 'PAUSE_FOR_APPROVAL',
              reason: `refund of $${(args.amountCents / 100).toFixed(2)} needs a manager`,
              requestedAt: Date.now(),
              checkpoint: {
                step: 'check_policy',
                data: { orderId: args.orderId, amountCents: args.amountCents },
              },
            },
            { pid },
          );
        } else {
          await refund(task, args, provider);
        }
        break;
      case 'paused': {
        const wait = nextTransition(task);
        await tell({
          kind: 'awaiting-approval',
          at: Date.now(),
          reason: context.approval?.reason ?? '',
          deadline: context.approval?.deadline ?? 0,
        });
        await wait;
        break;
      }
      case 'retrying':
        // The durable backoff timer fires RETRY (or MAX_RETRIES_EXCEEDED) through the runtime.
        await nextTransition(task);
        break;
      default:
        throw new Error(`the demo does not drive a task in state "${task.state}"`);
    }
  }
}

/** Runs the refund as an idempotent step, then COMPLETE; a 503 becomes TRANSIENT_ERROR. */
async function refund(task: TaskActor, args: WorkerArgs, provider: PaymentProvider): Promise<void> {
  const pid = process.pid;
  const data = task.getSnapshot().context.checkpoint?.data as
    { orderId?: string; amountCents?: number } | null | undefined;
  const orderId = data?.orderId ?? args.orderId;
  const amountCents = data?.amountCents ?? args.amountCents;
  let called = false;
  let receipt: RefundReceipt;
  try {
    receipt = await task.step(REFUND_STEP, async (key): Promise<RefundReceipt> => {
      called = true;
      try {
        const booked = provider.refund({ idempotencyKey: key, orderId, amountCents });
        await tell({
          kind: 'provider-call',
          at: Date.now(),
          key,
          status: 200,
          refundId: booked.refundId,
        });
        if (args.holdAfterRefund) {
          // The refund exists at the provider; the step is still `executing`. The
          // parent kills this process now: the crash the demo is about.
          await tell({ kind: 'refund-booked', at: Date.now(), key, refundId: booked.refundId });
          await new Promise<never>(() => undefined);
        }
        return booked;
      } catch (error) {
        if (error instanceof ProviderUnavailableError) {
          await tell({ kind: 'provider-call', at: Date.now(), key, status: error.status });
        }
        throw error;
      }
    });
  } catch (error) {
    if (error instanceof ProviderUnavailableError) {
      await task.send(
        {
          type: 'TRANSIENT_ERROR',
          error: error.message,
          checkpoint: { step: 'refund', data: { orderId, amountCents } },
        },
        { pid },
      );
      return;
    }
    throw error;
  }
  if (!called) {
    await tell({
      kind: 'step-reused',
      at: Date.now(),
      key: `${task.id}:${REFUND_STEP}`,
      receipt,
    });
  }
  await task.send(
    {
      type: 'COMPLETE',
      result: { ...receipt },
      checkpoint: { step: 'refund', data: { orderId, amountCents, refundId: receipt.refundId } },
    },
    { pid },
  );
}

main().catch(async (error: unknown) => {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  await tell({ kind: 'failed', at: Date.now(), message });
  process.exitCode = 1;
  process.disconnect?.();
});
