import { defineChart } from '../../src/core/chart.ts';
import type { RecoveryPolicy } from '../../src/core/recovery.ts';
import { machine } from './task-lifecycle.machine.ts';
import { properties } from './task-lifecycle.properties.ts';
import { events, type TaskLifecycleContext } from './task-lifecycle.types.ts';

export {
  InvalidTaskInputError,
  initialContext,
  machine,
  retryCeiling,
  retryDelay,
} from './task-lifecycle.machine.ts';
export {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_MAX_RETRIES,
  backoffSchema,
  checkpointSchema,
  events,
  inputSchema,
  jsonValueSchema,
} from './task-lifecycle.types.ts';
export type {
  ApprovalReminder,
  ApprovalRequest,
  BackoffOptions,
  Checkpoint,
  JsonValue,
  ResolvedTaskLifecycleInput,
  TaskError,
  TaskLifecycleContext,
  TaskLifecycleEmitted,
  TaskLifecycleEvent,
  TaskLifecycleEventType,
  TaskLifecycleInput,
} from './task-lifecycle.types.ts';

/**
 * “Agent State Machine Design” §6, for an actor found after a restart:
 * - `running`: the attempt died with the process → TRANSIENT_ERROR (reason `recovery_stale_running`);
 * - `retrying`: RETRY while `retry_count < max_retries`, else MAX_RETRIES_EXCEEDED;
 * - `paused`: TIMEOUT once `now` is past `requested_at + approval_timeout_ms`, else resume;
 * - `blocked`: stays blocked (probing the dependency is I/O; alerting watches it);
 * - `planned` (and anything else): resume.
 */
export const recovery: RecoveryPolicy = ({ state, snapshot, now }) => {
  const context = snapshot.context as TaskLifecycleContext;
  switch (state) {
    case 'running':
      return {
        action: 'send',
        event: { type: 'TRANSIENT_ERROR', error: 'recovery_stale_running' },
        reason:
          'the process stopped while the task was running; its attempt is treated as failed transiently',
      };
    case 'retrying':
      return context.retry_count < context.max_retries
        ? {
            action: 'send',
            event: { type: 'RETRY' },
            reason: `retries remain (${context.retry_count}/${context.max_retries})`,
          }
        : {
            action: 'send',
            event: { type: 'MAX_RETRIES_EXCEEDED' },
            reason: `retries exhausted (${context.retry_count}/${context.max_retries})`,
          };
    case 'paused': {
      const approval = context.approval;
      if (approval === null) {
        return { action: 'resume', reason: 'paused without an approval request on record' };
      }
      const deadline = approval.requested_at + context.approval_timeout_ms;
      return now > deadline
        ? {
            action: 'send',
            event: { type: 'TIMEOUT' },
            reason:
              'recovery_approval_timeout: the approval deadline passed while the process was down',
          }
        : { action: 'resume', reason: 'the approval deadline has not passed; keep waiting' };
    }
    case 'blocked':
      return {
        action: 'resume',
        reason: 'blocked tasks stay blocked until DEPENDENCY_RESOLVED; alerting watches them',
      };
    default:
      return { action: 'resume', reason: `state "${state}" is safe to resume as persisted` };
  }
};

/** The task lifecycle of “Agent State Machine Design” as a catalog entry. */
export const chart = defineChart({
  name: 'task-lifecycle',
  description:
    '“Agent State Machine Design”: one agent task from planned to done or failed, with approval gate, dependency block and bounded retries.',
  machine,
  events,
  eventSamples: {
    START: [{ type: 'START' }],
    PAUSE_FOR_APPROVAL: [
      {
        type: 'PAUSE_FOR_APPROVAL',
        reason: 'refund_approval',
        requestedAt: 1_780_000_000_000,
        checkpoint: { step: 'check_policy', data: { orderId: '12345', amount: 150 } },
      },
    ],
    APPROVAL_GRANTED: [{ type: 'APPROVAL_GRANTED', approver: 'manager@example.com' }],
    APPROVAL_DENIED: [
      { type: 'APPROVAL_DENIED', approver: 'manager@example.com', comment: 'over limit' },
    ],
    TIMEOUT: [{ type: 'TIMEOUT' }],
    BLOCK_ON_DEPENDENCY: [{ type: 'BLOCK_ON_DEPENDENCY', dependency: 'payment-gateway' }],
    DEPENDENCY_RESOLVED: [{ type: 'DEPENDENCY_RESOLVED' }],
    TRANSIENT_ERROR: [
      {
        type: 'TRANSIENT_ERROR',
        error: 'rate_limit',
        checkpoint: { step: 'send_notification', data: { attempt: 'pending' } },
      },
    ],
    // RETRY and MAX_RETRIES_EXCEEDED carry no payload; their guards branch on
    // retry_count, which exploration drives through 0..maxRetries.
    RETRY: [{ type: 'RETRY' }],
    MAX_RETRIES_EXCEEDED: [{ type: 'MAX_RETRIES_EXCEEDED' }],
    COMPLETE: [{ type: 'COMPLETE', result: 'refund_processed' }],
    FATAL_ERROR: [{ type: 'FATAL_ERROR', error: '422 unprocessable entity' }],
  },
  defaultInput: { taskId: 'task-demo' },
  recovery,
  version: 1,
  migrations: {},
  properties,
});
