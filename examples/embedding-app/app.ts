import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ConcurrencyError,
  InvalidEventError,
  InvalidTransitionError,
  StoreError,
  UncertainStepError,
  createDurableActor,
  getRuntime,
  openDurableActor,
  recover,
  type Store,
} from 'agentcharts';
import { charts, taskLifecycle } from 'agentcharts/machines';

/** The payment API the worker calls; it must accept an idempotency key and look refunds up by it. */
export interface Payments {
  refund(request: {
    idempotencyKey: string;
    orderId: string;
    amountCents: number;
  }): Promise<{ refundId: string }>;
  findRefund(idempotencyKey: string): Promise<{ refundId: string } | undefined>;
}

/** Thrown by a Payments implementation for a retryable failure (timeout, 429, 503). */
export class TransientPaymentError extends Error {
  override name = 'TransientPaymentError';
}

/** What the planning step writes into the checkpoint, and the worker reads back after any restart. */
interface RefundPlan {
  orderId: string;
  amountCents: number;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The HTTP side: `POST /tasks` creates a refund task and parks it for approval,
 * `POST /tasks/:id/events` posts an event (a manager's APPROVAL_GRANTED, say),
 * `GET /tasks/:id` reads it. Every event goes through the durable actor: an
 * ill-formed one is a 400, one the task's state does not accept is a 409, and
 * nothing is written in either case.
 */
export function createTaskHandler(
  store: Store,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const match = /^\/tasks(?:\/([^/]+)(\/events)?)?$/.exec(url.pathname);
    try {
      if (match && !match[1] && req.method === 'POST') {
        const body = (await readJson(req)) as Partial<RefundPlan & { taskId: string }> | undefined;
        if (!body?.taskId || !body.orderId || !Number.isInteger(body.amountCents)) {
          return reply(res, 400, { error: 'taskId, orderId and amountCents are required' });
        }
        const task = await createDurableActor(taskLifecycle.machine, {
          id: body.taskId,
          store,
          mode: 'create',
          input: { taskId: body.taskId, backoff: { baseMs: 200, capMs: 10_000 } },
        });
        await task.send({ type: 'START' });
        // Planning has no side effects; every refund waits for a manager.
        const plan: RefundPlan = { orderId: body.orderId, amountCents: body.amountCents ?? 0 };
        await task.send({
          type: 'PAUSE_FOR_APPROVAL',
          reason: 'refunds need a manager',
          requestedAt: Date.now(),
          checkpoint: { step: 'plan', data: { ...plan } },
        });
        return reply(res, 201, { id: task.id, state: task.state });
      }
      if (match?.[1] && !match[2] && req.method === 'GET') {
        const task = await openDurableActor(store, match[1], { charts });
        return reply(res, 200, {
          id: task.id,
          state: task.state,
          version: task.version,
          context: task.getSnapshot().context,
        });
      }
      if (match?.[1] && match[2] && req.method === 'POST') {
        const task = await openDurableActor(store, match[1], { charts });
        // The body is untrusted: the actor validates it against the chart's event schemas.
        await task.send(await readJson(req), { via: 'http' });
        return reply(res, 200, { id: task.id, state: task.state, version: task.version });
      }
      return reply(res, 404, { error: 'not found' });
    } catch (error) {
      if (error instanceof InvalidEventError) {
        return reply(res, 400, { error: error.message, reason: error.reason, field: error.field });
      }
      if (error instanceof InvalidTransitionError) {
        return reply(res, 409, {
          error: error.message,
          state: error.state,
          event: error.eventType,
        });
      }
      if (error instanceof ConcurrencyError) {
        return reply(res, 409, { error: error.message });
      }
      if (error instanceof StoreError && error.kind === 'not_found') {
        return reply(res, 404, { error: error.message });
      }
      return reply(res, 500, { error: 'internal error' });
    }
  };
}

/**
 * The background side: recover first (settling a refund a crash interrupted by
 * asking the payment API), then pick up approved running tasks, run the refund
 * as an idempotent step and complete them. A transient payment failure sends
 * TRANSIENT_ERROR; the chart's durable backoff timer brings the task back to
 * `running` and the next tick tries again, with the same idempotency key.
 */
export async function startWorker(
  store: Store,
  payments: Payments,
  options: { pollMs?: number } = {},
): Promise<{ stop(): Promise<void> }> {
  const pollMs = options.pollMs ?? 100;
  await recover(store, {
    charts,
    pollTimersMs: pollMs,
    reconcile: async (step) => {
      const refund = await payments.findRefund(step.key);
      return refund
        ? { status: 'done', result: refund }
        : { status: 'not_done', reason: 'the payment API has no refund under this key' };
    },
  });

  const busy = new Set<string>();
  const work = async (id: string): Promise<void> => {
    const task = await openDurableActor(store, id, { charts });
    const context = task.getSnapshot().context as taskLifecycle.TaskLifecycleContext;
    if (task.state !== 'running' || context.approval?.status !== 'granted') return;
    const plan = context.checkpoint?.data as unknown as RefundPlan;
    try {
      const receipt = await task.step('refund', (key) =>
        payments.refund({ idempotencyKey: key, ...plan }),
      );
      await task.send({ type: 'COMPLETE', result: receipt });
    } catch (error) {
      // Interrupted mid-call and not reconciled yet: never guess, leave it to recover().
      if (error instanceof UncertainStepError) return;
      const message = error instanceof Error ? error.message : String(error);
      await task.send(
        error instanceof TransientPaymentError
          ? { type: 'TRANSIENT_ERROR', error: message }
          : { type: 'FATAL_ERROR', error: message },
      );
    }
  };

  let stopped = false;
  let inFlight: Promise<unknown> = Promise.resolve();
  const tick = async (): Promise<void> => {
    const running = await store.listActors({ machineId: 'task-lifecycle', state: 'running' });
    const jobs = running
      .filter((row) => !busy.has(row.id))
      .map(async (row) => {
        busy.add(row.id);
        try {
          await work(row.id);
        } finally {
          busy.delete(row.id);
        }
      });
    await Promise.allSettled(jobs);
  };
  const loop = (): void => {
    if (stopped) return;
    // A failed tick (a busy database, say) is simply tried again on the next one.
    inFlight = tick()
      .catch(() => undefined)
      .finally(() => setTimeout(loop, pollMs));
  };
  loop();

  return {
    async stop() {
      stopped = true;
      await inFlight;
      await getRuntime(store).close();
    },
  };
}
