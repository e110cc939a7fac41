/**
 * Messages between the demo's orchestrator (the parent, which also plays the
 * manager) and its worker processes, over Node's IPC channel. Plain JSON.
 */
import type { RecoveryReport } from 'agentcharts';
import type { RefundReceipt } from './provider.ts';

/** Worker → parent. `at` is the worker's clock (ms since epoch). */
export type WorkerMessage =
  | { kind: 'started'; at: number; pid: number }
  | { kind: 'recovering'; at: number }
  | { kind: 'recovered'; at: number; report: RecoveryReport }
  | {
      kind: 'transition';
      at: number;
      actorId: string;
      version: number;
      from: string | null;
      to: string;
      eventType: string;
      source: string;
      /** A short human note (the approval reason, the retry delay, the recovery reason). */
      note?: string;
    }
  | { kind: 'emitted'; at: number; eventType: string; note: string }
  | { kind: 'awaiting-approval'; at: number; reason: string; deadline: number }
  | { kind: 'provider-call'; at: number; key: string; status: number; refundId?: string }
  | { kind: 'step-reused'; at: number; key: string; receipt: RefundReceipt }
  /** The provider booked the refund; the worker now waits without marking the step done. */
  | { kind: 'refund-booked'; at: number; key: string; refundId: string }
  | { kind: 'rejected'; at: number; message: string }
  | { kind: 'finished'; at: number; state: string; lastError: string | null }
  | { kind: 'failed'; at: number; message: string };

/** Parent → worker. */
export type ParentMessage = { kind: 'approve'; approver: string };

/** The worker's command line (`worker.ts --db <file> --task <id> …`). */
export interface WorkerArgs {
  db: string;
  task: string;
  orderId: string;
  amountCents: number;
  /** Stop after the provider booked the refund and before the step is marked done. */
  holdAfterRefund: boolean;
}

/** Task input of every demo task: short backoff so the retry is visible, a 60 s approval wait. */
export function demoTaskInput(taskId: string): {
  taskId: string;
  maxRetries: number;
  backoff: { baseMs: number; capMs: number };
  approvalTimeoutMs: number;
} {
  return {
    taskId,
    maxRetries: 3,
    backoff: { baseMs: 800, capMs: 5_000 },
    approvalTimeoutMs: 60_000,
  };
}

/** The step name of the refund; its idempotency key is `<taskId>:refund`. */
export const REFUND_STEP = 'refund';
/** The manager who approves in the demo. */
export const DEMO_APPROVER = 'manager@example.com';
/** How long the manager takes to approve, after the approval request arrives. */
export const MANAGER_DELAY_MS = 1_000;
