/**
 * The in-memory store, for unit tests. It is also the reference semantics of the
 * Store contract: the write checks and orderings every store shares live here.
 */
import { ConcurrencyError, StoreError, type StoreOperation } from '../strict/errors.ts';
import type {
  ActorQuery,
  ActorRow,
  ActorWrite,
  RejectionRow,
  StepRow,
  StepStatus,
  Store,
  TimerRow,
  TransitionRow,
} from './types.ts';

const STATUSES: ReadonlySet<string> = new Set(['active', 'done', 'error', 'stopped']);

/**
 * Why a write is malformed, or undefined. Rows are built by the runtime, so a
 * problem here is a bug; it rejects that write alone (kind `invalid_write`).
 */
export function invalidWrite(write: ActorWrite): StoreError | undefined {
  const problem = writeProblem(write);
  return problem === undefined
    ? undefined
    : new StoreError({
        operation: 'commit',
        kind: 'invalid_write',
        actorId: write.actorId,
        detail: problem,
      });
}

function writeProblem(write: ActorWrite): string | undefined {
  const { actorId, actor, transition } = write;
  if (actor.id !== actorId) return 'actor.id differs from actorId';
  if (transition.actorId !== actorId) return 'transition.actorId differs from actorId';
  if (write.timersSet.some((t) => t.actorId !== actorId)) {
    return 'a timer of timersSet belongs to another actor';
  }
  const integers: Array<[string, number]> = [
    ['expectedVersion', write.expectedVersion],
    ['actor.chartVersion', actor.chartVersion],
    ['actor.createdAt', actor.createdAt],
    ['actor.updatedAt', actor.updatedAt],
    ['transition.at', transition.at],
    ...write.timersSet.map((t, i): [string, number] => [`timersSet[${i}].dueAt`, t.dueAt]),
  ];
  for (const [name, n] of integers)
    if (!Number.isSafeInteger(n)) return `${name} is not an integer`;
  if (write.expectedVersion < 0) return 'expectedVersion is negative';
  if (actor.version !== write.expectedVersion + 1)
    return 'actor.version is not expectedVersion + 1';
  if (transition.seq !== actor.version) return 'transition.seq differs from actor.version';
  if (!STATUSES.has(actor.status)) return 'actor.status is not a known status';
  return undefined;
}

/** Validates a query limit: a non-negative integer (SQL treats a negative LIMIT as none). */
export function checkLimit(limit: number, operation: StoreOperation): number {
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new StoreError({ operation, kind: 'bad_query', detail: 'limit must be an integer ≥ 0' });
  }
  return limit;
}

/** Orders text as SQLite's BINARY collation does (by UTF-8 bytes = by code point). */
export function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The error a step operation gets when the row is absent or not in the required status. */
export function stepMiss(key: string, row: StepRow | undefined, wanted: string): StoreError {
  return row === undefined
    ? new StoreError({ operation: 'step', kind: 'not_found', detail: 'no step with this key' })
    : new StoreError({
        operation: 'step',
        kind: 'conflict',
        actorId: row.actorId,
        detail: `step "${row.name}" is ${row.status}, expected ${wanted}`,
      });
}

function byTimer(a: TimerRow, b: TimerRow): number {
  return (
    a.dueAt - b.dueAt || compareText(a.actorId, b.actorId) || compareText(a.timerId, b.timerId)
  );
}

/**
 * A Store kept in process memory. Rows are copied in and out, so callers can
 * never change stored state by mutating what they passed or received.
 *
 * @example
 * const store = new MemoryStore();
 * await store.commit([write]);
 */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly location = 'memory:';
  // TypeScript `private`, not `#`: wrappers built with Object.create or Proxy
  // (instrumentation, fault injection) must still reach these members.
  private readonly actorTable = new Map<string, ActorRow>();
  private readonly transitionTable = new Map<string, TransitionRow[]>();
  private readonly timerTable = new Map<string, Map<string, TimerRow>>();
  private readonly stepTable = new Map<string, StepRow>();
  private readonly rejectionTable: RejectionRow[] = [];
  private closed = false;

  private ensureOpen(operation: StoreOperation, actorId?: string): void {
    if (this.closed) {
      throw new StoreError({ operation, kind: 'closed', actorId, detail: 'the store is closed' });
    }
  }

  /** The error that rejects this write alone, checked before anything changes. */
  private conflict(write: ActorWrite): Error | undefined {
    const invalid = invalidWrite(write);
    if (invalid) return invalid;
    const { actorId, expectedVersion } = write;
    const current = this.actorTable.get(actorId);
    if (expectedVersion === 0 ? current !== undefined : current?.version !== expectedVersion) {
      if (current === undefined) return actorMissing(actorId);
      return new ConcurrencyError({ actorId, expectedVersion, actualVersion: current.version });
    }
    if (
      write.consumeTimer !== undefined &&
      !this.timerTable.get(actorId)?.has(write.consumeTimer)
    ) {
      return new ConcurrencyError({ actorId, expectedVersion, actualVersion: expectedVersion });
    }
    if (this.transitionTable.get(actorId)?.some((t) => t.seq === write.transition.seq)) {
      return new StoreError({
        operation: 'commit',
        kind: 'constraint',
        actorId,
        detail: 'a transition with this seq exists',
      });
    }
    return undefined;
  }

  commit(writes: readonly ActorWrite[]): Promise<Array<Error | null>> {
    return settle(() => {
      this.ensureOpen('commit', writes.length === 1 ? writes[0]?.actorId : undefined);
      return writes.map((write) => {
        const error = this.conflict(write);
        if (error) return error;
        const { actorId } = write;
        const createdAt = this.actorTable.get(actorId)?.createdAt ?? write.actor.createdAt;
        this.actorTable.set(actorId, { ...write.actor, createdAt });
        const history = this.transitionTable.get(actorId) ?? [];
        history.push({ ...write.transition });
        this.transitionTable.set(actorId, history);
        const timers = this.timerTable.get(actorId) ?? new Map<string, TimerRow>();
        if (write.consumeTimer !== undefined) timers.delete(write.consumeTimer);
        for (const id of write.timersCancel) timers.delete(id);
        for (const t of write.timersSet) timers.set(t.timerId, { ...t });
        this.timerTable.set(actorId, timers);
        return null;
      });
    });
  }

  loadActor(actorId: string): Promise<ActorRow | undefined> {
    return settle(() => {
      this.ensureOpen('load', actorId);
      const row = this.actorTable.get(actorId);
      return row && { ...row };
    });
  }

  listActors(query: ActorQuery = {}): Promise<ActorRow[]> {
    return settle(() => {
      this.ensureOpen('query');
      const limit = checkLimit(query.limit ?? 100, 'query');
      const { machineId, state, status, afterId } = query;
      return [...this.actorTable.values()]
        .filter(
          (a) =>
            (machineId === undefined || a.machineId === machineId) &&
            (state === undefined || a.state === state) &&
            (status === undefined || a.status === status) &&
            (afterId === undefined || compareText(a.id, afterId) > 0),
        )
        .sort((a, b) => compareText(a.id, b.id))
        .slice(0, limit)
        .map((a) => ({ ...a }));
    });
  }

  history(actorId: string): Promise<TransitionRow[]> {
    return settle(() => {
      this.ensureOpen('query', actorId);
      return (this.transitionTable.get(actorId) ?? [])
        .map((t) => ({ ...t }))
        .sort((a, b) => a.seq - b.seq);
    });
  }

  actorIdsWithHistory(): Promise<string[]> {
    return settle(() => {
      this.ensureOpen('query');
      return [...this.transitionTable.keys()].sort(compareText);
    });
  }

  timers(actorId: string): Promise<TimerRow[]> {
    return settle(() => {
      this.ensureOpen('timer', actorId);
      return [...(this.timerTable.get(actorId)?.values() ?? [])]
        .map((t) => ({ ...t }))
        .sort(byTimer);
    });
  }

  dueTimers(now: number, limit: number): Promise<TimerRow[]> {
    return settle(() => {
      this.ensureOpen('timer');
      checkLimit(limit, 'timer');
      return this.allTimers()
        .filter((t) => t.dueAt <= now)
        .sort(byTimer)
        .slice(0, limit)
        .map((t) => ({ ...t }));
    });
  }

  nextTimerDue(): Promise<number | undefined> {
    return settle(() => {
      this.ensureOpen('timer');
      const due = this.allTimers().map((t) => t.dueAt);
      return due.length === 0 ? undefined : Math.min(...due);
    });
  }

  private allTimers(): TimerRow[] {
    return [...this.timerTable.values()].flatMap((m) => [...m.values()]);
  }

  getStep(key: string): Promise<StepRow | undefined> {
    return settle(() => {
      this.ensureOpen('step');
      const row = this.stepTable.get(key);
      return row && { ...row };
    });
  }

  beginStep(step: {
    key: string;
    actorId: string;
    name: string;
    startedAt: number;
  }): Promise<{ row: StepRow; created: boolean }> {
    return settle(() => {
      this.ensureOpen('step', step.actorId);
      const existing = this.stepTable.get(step.key);
      if (existing) return { row: { ...existing }, created: false };
      const row: StepRow = {
        key: step.key,
        actorId: step.actorId,
        name: step.name,
        status: 'executing',
        result: null,
        startedAt: step.startedAt,
        finishedAt: null,
        attempts: 1,
      };
      this.stepTable.set(step.key, row);
      return { row: { ...row }, created: true };
    });
  }

  finishStep(
    key: string,
    status: 'done' | 'failed',
    result: string,
    finishedAt: number,
  ): Promise<void> {
    return settle(() => {
      this.ensureOpen('step');
      const row = this.stepTable.get(key);
      if (row?.status !== 'executing') throw stepMiss(key, row, 'executing');
      this.stepTable.set(key, { ...row, status, result, finishedAt });
    });
  }

  restartStep(key: string, startedAt: number): Promise<void> {
    return settle(() => {
      this.ensureOpen('step');
      const row = this.stepTable.get(key);
      if (row === undefined || row.status === 'done')
        throw stepMiss(key, row, 'executing or failed');
      this.stepTable.set(key, {
        ...row,
        status: 'executing',
        result: null,
        startedAt,
        finishedAt: null,
        attempts: row.attempts + 1,
      });
    });
  }

  listSteps(query: { actorId?: string; status?: StepStatus } = {}): Promise<StepRow[]> {
    return settle(() => {
      this.ensureOpen('step');
      return [...this.stepTable.values()]
        .filter(
          (s) =>
            (query.actorId === undefined || s.actorId === query.actorId) &&
            (query.status === undefined || s.status === query.status),
        )
        .sort((a, b) => a.startedAt - b.startedAt || compareText(a.key, b.key))
        .map((s) => ({ ...s }));
    });
  }

  recordRejection(row: RejectionRow): Promise<void> {
    return settle(() => {
      this.ensureOpen('commit', row.actorId);
      this.rejectionTable.push({ ...row });
    });
  }

  listRejections(query: { since?: number; actorId?: string } = {}): Promise<RejectionRow[]> {
    return settle(() => {
      this.ensureOpen('query');
      return this.rejectionTable
        .map((r, i) => ({ r, i }))
        .filter(
          ({ r }) =>
            (query.since === undefined || r.at >= query.since) &&
            (query.actorId === undefined || r.actorId === query.actorId),
        )
        .sort((a, b) => a.r.at - b.r.at || a.i - b.i)
        .map(({ r }) => ({ ...r }));
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** A write that expects an existing actor found none (no store deletes actors). */
export function actorMissing(actorId: string): StoreError {
  return new StoreError({
    operation: 'commit',
    kind: 'not_found',
    actorId,
    detail: 'no actor to update; create it with expectedVersion 0',
  });
}

/** Runs synchronous work as a promise, so a throw becomes a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
