import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { getRuntime, openStore, verify, type Store } from '../src/index.ts';
import {
  TransientPaymentError,
  createTaskHandler,
  startWorker,
  type Payments,
} from '../examples/embedding-app/app.ts';

/** A payment API with a ledger; `failNext` calls answer with a transient error. */
class FakePayments implements Payments {
  readonly ledger: Array<{ refundId: string; idempotencyKey: string; amountCents: number }> = [];
  calls = 0;
  failNext = 0;

  refund(request: {
    idempotencyKey: string;
    orderId: string;
    amountCents: number;
  }): Promise<{ refundId: string }> {
    this.calls++;
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new TransientPaymentError('503 from the gateway'));
    }
    const refundId = `re_${this.ledger.length + 1}`;
    this.ledger.push({
      refundId,
      idempotencyKey: request.idempotencyKey,
      amountCents: request.amountCents,
    });
    return Promise.resolve({ refundId });
  }

  findRefund(idempotencyKey: string): Promise<{ refundId: string } | undefined> {
    const found = this.ledger.find((r) => r.idempotencyKey === idempotencyKey);
    return Promise.resolve(found ? { refundId: found.refundId } : undefined);
  }
}

let dir: string;
let file: string;
const stores: Store[] = [];
const servers: Server[] = [];
const stops: Array<() => Promise<void>> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-embedding-'));
  file = join(dir, 'app.db');
});
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const s of stores.splice(0)) {
    await getRuntime(s).close();
    await s.close().catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

function open(): Store {
  const store = openStore(`sqlite:${file}`);
  stores.push(store);
  return store;
}

/** Serves the example's handler on a free port; returns a small JSON client. */
async function serve(
  store: Store,
): Promise<
  (
    method: string,
    path: string,
    body?: unknown,
  ) => Promise<{ status: number; json: Record<string, unknown> }>
> {
  const handle = createTaskHandler(store);
  const server = createServer((req, res) => void handle(req, res));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return async (method, path, body) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };
}

async function waitFor<T>(probe: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() - start > 15_000) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('docs/embedding.md', () => {
  test('shows exactly the code of examples/embedding-app/app.ts', () => {
    const doc = readFileSync(join(process.cwd(), 'docs', 'embedding.md'), 'utf8');
    const code = readFileSync(join(process.cwd(), 'examples', 'embedding-app', 'app.ts'), 'utf8');
    const blocks = [...doc.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toBe(code);
  });
});

describe('the embedding example', () => {
  test('creates a task parked for approval and answers 400 for an ill-formed event, 409 for an illegal one, writing nothing', async () => {
    const store = open();
    const http = await serve(store);
    const created = await http('POST', '/tasks', {
      taskId: 'refund-42',
      orderId: '12345',
      amountCents: 15_000,
    });
    expect(created).toEqual({ status: 201, json: { id: 'refund-42', state: 'paused' } });
    expect(
      (await http('POST', '/tasks', { taskId: 'refund-42', orderId: '1', amountCents: 1 })).status,
    ).toBe(409);
    expect((await http('POST', '/tasks', { taskId: 'x' })).status).toBe(400);

    const illegal = await http('POST', '/tasks/refund-42/events', { type: 'COMPLETE' });
    expect(illegal).toMatchObject({ status: 409, json: { state: 'paused', event: 'COMPLETE' } });
    const missing = await http('POST', '/tasks/refund-42/events', { type: 'APPROVAL_GRANTED' });
    expect(missing).toMatchObject({
      status: 400,
      json: { reason: 'missing_field', field: 'approver' },
    });
    const extra = await http('POST', '/tasks/refund-42/events', {
      type: 'APPROVAL_GRANTED',
      approver: 'manager@example.com',
      amountCents: 1_000_000,
    });
    expect(extra).toMatchObject({ status: 400, json: { reason: 'unexpected_field' } });
    expect(JSON.stringify(extra.json)).not.toContain('1000000');
    expect((await http('POST', '/tasks/refund-42/events', '{not json')).status).toBe(400);
    expect((await http('POST', '/tasks/refund-42/events', { type: 'NOPE' })).status).toBe(400);
    expect((await http('GET', '/tasks/nobody')).status).toBe(404);
    expect((await http('POST', '/tasks/nobody/events', { type: 'START' })).status).toBe(404);

    const read = await http('GET', '/tasks/refund-42');
    expect(read).toMatchObject({ status: 200, json: { state: 'paused', version: 3 } });
    expect((await store.history('refund-42')).map((r) => r.eventType)).toEqual([
      'xstate.init',
      'START',
      'PAUSE_FOR_APPROVAL',
    ]);
    expect(await store.listRejections({ actorId: 'refund-42' })).toHaveLength(5);
  });

  test('refunds an approved task once through the worker, retrying a transient failure after the durable backoff', async () => {
    const store = open();
    const http = await serve(store);
    const payments = new FakePayments();
    payments.failNext = 1;
    const worker = await startWorker(store, payments, { pollMs: 20 });
    stops.push(() => worker.stop());

    await http('POST', '/tasks', { taskId: 'refund-7', orderId: '777', amountCents: 4_200 });
    const approved = await http('POST', '/tasks/refund-7/events', {
      type: 'APPROVAL_GRANTED',
      approver: 'manager@example.com',
    });
    expect(approved).toEqual({
      status: 200,
      json: { id: 'refund-7', state: 'running', version: 4 },
    });

    const done = await waitFor(
      () => http('GET', '/tasks/refund-7'),
      (r) => r.json.state === 'done',
    );
    expect(done.json.context).toMatchObject({ retry_count: 1, result: { refundId: 're_1' } });
    expect(payments.calls).toBe(2);
    expect(payments.ledger).toEqual([
      { refundId: 're_1', idempotencyKey: 'refund-7:refund', amountCents: 4_200 },
    ]);
    expect((await store.history('refund-7')).map((r) => r.eventType)).toEqual([
      'xstate.init',
      'START',
      'PAUSE_FOR_APPROVAL',
      'APPROVAL_GRANTED',
      'TRANSIENT_ERROR',
      // A timer's transition is logged under the document's name (chart metadata).
      'RETRY',
      'COMPLETE',
    ]);
    expect((await verify(store, { charts })).ok).toBe(true);
  });

  test('a worker started after a crash settles the interrupted refund through the payment API and does not pay again', async () => {
    const payments = new FakePayments();
    // The process that crashed: the task was approved, the refund call reached the
    // payment API, and the process died before the step was marked done.
    const before = open();
    const http = await serve(before);
    await http('POST', '/tasks', { taskId: 'refund-9', orderId: '999', amountCents: 15_000 });
    await http('POST', '/tasks/refund-9/events', { type: 'APPROVAL_GRANTED', approver: 'm' });
    await before.beginStep({
      key: 'refund-9:refund',
      actorId: 'refund-9',
      name: 'refund',
      startedAt: Date.now(),
    });
    await payments.refund({
      idempotencyKey: 'refund-9:refund',
      orderId: '999',
      amountCents: 15_000,
    });
    payments.calls = 0;
    await getRuntime(before).close();

    // A new process on the same file.
    const after = open();
    const worker = await startWorker(after, payments, { pollMs: 20 });
    stops.push(() => worker.stop());
    const row = await waitFor(
      () => after.loadActor('refund-9'),
      (r) => r?.state === 'done',
    );
    expect(row?.status).toBe('done');
    expect(payments.calls).toBe(0);
    expect(payments.ledger).toHaveLength(1);
    expect(await after.getStep('refund-9:refund')).toMatchObject({ status: 'done' });
    const history = await after.history('refund-9');
    expect(history.map((r) => [r.fromState, r.eventType, r.toState]).slice(4)).toEqual([
      ['running', 'TRANSIENT_ERROR', 'retrying'],
      ['retrying', 'RETRY', 'running'],
      ['running', 'COMPLETE', 'done'],
    ]);
    expect(JSON.parse(history[4]?.metadata ?? '{}')).toMatchObject({ source: 'recover' });
    expect((await verify(after, { charts })).ok).toBe(true);
  });
});
