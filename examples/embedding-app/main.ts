/**
 * The embedding app as a process: app.ts's HTTP handler and background worker in
 * one Node server, on one SQLite store, with an in-memory payment API whose first
 * call per refund answers a transient 503.
 *
 *   npx tsx --conditions=agentcharts-source examples/embedding-app/main.ts [--db <file>] [--port <n>]
 *
 * then, in another shell:
 *
 *   curl -X POST localhost:3000/tasks -d '{"taskId":"refund-42","orderId":"12345","amountCents":15000}'
 *   curl -X POST localhost:3000/tasks/refund-42/events -d '{"type":"APPROVAL_GRANTED","approver":"ana"}'
 *   curl localhost:3000/tasks/refund-42
 *
 * Ctrl-C stops it; started again on the same file it recovers first.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { openStore } from 'agentcharts';
import { TransientPaymentError, createTaskHandler, startWorker, type Payments } from './app.ts';

/** A payment API that keeps its ledger in memory and fails each key's first call. */
class InMemoryPayments implements Payments {
  private readonly refunds = new Map<string, { refundId: string }>();
  private readonly tried = new Set<string>();

  refund(request: { idempotencyKey: string }): Promise<{ refundId: string }> {
    const key = request.idempotencyKey;
    if (!this.tried.has(key)) {
      this.tried.add(key);
      console.log(`payments: ${key} → 503 (transient)`);
      return Promise.reject(new TransientPaymentError('503 Service Unavailable'));
    }
    const booked = this.refunds.get(key) ?? { refundId: `re_${this.refunds.size + 1}` };
    this.refunds.set(key, booked);
    console.log(`payments: ${key} → 200, ${booked.refundId}`);
    return Promise.resolve(booked);
  }

  findRefund(idempotencyKey: string): Promise<{ refundId: string } | undefined> {
    return Promise.resolve(this.refunds.get(idempotencyKey));
  }
}

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: './embedding-app.db' },
    port: { type: 'string', default: '3000' },
  },
  strict: true,
});

const store = openStore(`sqlite:${values.db}`);
const worker = await startWorker(store, new InMemoryPayments());
const handler = createTaskHandler(store);
const server = createServer((req, res) => void handler(req, res));
server.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`listening on http://127.0.0.1:${port} (store sqlite:${values.db})`);
});

const stop = async (): Promise<void> => {
  await new Promise((done) => server.close(done));
  await worker.stop();
  await store.close();
  console.log('stopped');
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stop());
}
