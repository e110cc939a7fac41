/** What `recover()` takes and what it reports. */
import type { EventObject } from 'xstate';
import type { Logger } from 'pino';
import type { ChartDefinition } from '../core/chart.ts';
import type { Clock } from '../core/clock.ts';
import type { ReconcileHook } from './steps.ts';

export interface RecoverOptions {
  /** Charts by which stored actors are loaded (default: none besides those already registered). */
  charts?: Iterable<ChartDefinition>;
  clock?: Clock;
  logger?: Logger;
  /** Settles steps found `executing` (interrupted by a crash). Without it they stay uncertain. */
  reconcile?: ReconcileHook;
  /** Keep polling the store for due timers afterwards (ms; 0 = no polling). Default 0. */
  pollTimersMs?: number;
  /**
   * Worker identity (multi-process): recover only actors that are unowned or whose
   * lease expired, taking their leases. Without it every active actor is recovered.
   */
  owner?: string;
  leaseMs?: number;
}

/** What recovery did with one actor. */
export interface RecoveryEntry {
  actorId: string;
  machineId: string;
  /** State before recovery touched the actor. */
  stateBefore: string;
  stateAfter: string;
  action: 'resumed' | 'sent' | 'failed';
  event?: EventObject;
  reason: string;
  /** Timers that were overdue and fired during recovery. */
  timersFired: number;
  error?: { name: string; message: string };
}

export interface RecoveryReport {
  startedAt: number;
  finishedAt: number;
  actors: RecoveryEntry[];
  steps: Array<{
    key: string;
    /** Steps: done, not_done, uncertain, failed; invoked promises also delivered, started, rerun. */
    outcome:
      | 'done'
      | 'not_done'
      | 'uncertain'
      | 'failed'
      | 'delivered'
      | 'started'
      | 'rerun'
      | 'abandoned';
    detail: string;
  }>;
  counts: { actors: number; resumed: number; sent: number; failed: number; timersFired: number };
}
