/**
 * The in-memory store, for unit tests. It is also the reference semantics of the
 * Store contract (with the shared rules in ./rules.ts).
 */
import { ConcurrencyError, StoreError, type StoreOperation } from '../core/errors.ts';
import {
  actorMissing,
  byTimer,
  checkHistoryPage,
  checkLeaseRequest,
  checkLimit,
  compareText,
  invalidWrite,
  leaseViolation,
  stepMiss,
} from './rules.ts';
import type {
  ActorCount,
  ActorCountQuery,
  ActorDwell,
  ActorQuery,
  ActorRow,
  ActorWrite,
  HistoryPage,
  LeaseRow,
  RejectionRow,
  StateEntryCount,
  StateEntryQuery,
  StatesQuery,
  StepRow,
  StepStatus,
  Store,
  TimerClaim,
  TimerRow,
  TransitionFeedRow,
  TransitionRow,
} from './types.ts';

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
  /** The user an actor works for (set at creation) and when it entered its current state. */
  private readonly actorMeta = new Map<string, { userId: string | null; stateSince: number }>();
  /** Lease columns of actors (absent: unowned). */
  private readonly leaseTable = new Map<string, { owner: string; leaseUntil: number }>();
  /** Claims of timers, keyed by {@link timerKey}; dropped when the timer is set or deleted. */
  private readonly claimTable = new Map<string, { claimedBy: string; claimUntil: number }>();
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
    const lost = leaseViolation(
      write,
      current && {
        owner: this.leaseTable.get(actorId)?.owner ?? null,
        leaseUntil: this.leaseTable.get(actorId)?.leaseUntil ?? null,
      },
    );
    if (lost) return lost;
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
    // Rows are appended in seq order: only the last one can collide (O(1), whatever the history).
    const last = this.transitionTable.get(actorId)?.at(-1);
    if (last !== undefined && last.seq >= write.transition.seq) {
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
        const meta = this.actorMeta.get(actorId);
        const sameState = this.actorTable.get(actorId)?.state === write.actor.state;
        this.actorMeta.set(actorId, {
          userId: meta ? meta.userId : (write.userId ?? null),
          stateSince: meta && sameState ? meta.stateSince : write.transition.at,
        });
        this.actorTable.set(actorId, { ...write.actor, createdAt });
        const history = this.transitionTable.get(actorId) ?? [];
        history.push({ ...write.transition });
        this.transitionTable.set(actorId, history);
        const timers = this.timerTable.get(actorId) ?? new Map<string, TimerRow>();
        const drop = (timerId: string) => {
          timers.delete(timerId);
          this.claimTable.delete(timerKey(actorId, timerId));
        };
        if (write.consumeTimer !== undefined) drop(write.consumeTimer);
        for (const id of write.timersCancel) drop(id);
        if (write.cancelAllTimers === true) for (const id of [...timers.keys()]) drop(id);
        for (const t of write.timersSet) {
          // A re-armed timer is a new firing: any claim on the old one lapses.
          this.claimTable.delete(timerKey(actorId, t.timerId));
          timers.set(t.timerId, { ...t });
        }
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

  loadActorHead(
    actorId: string,
  ): Promise<{ actor: ActorRow; head: TransitionRow | undefined } | undefined> {
    return settle(() => {
      this.ensureOpen('load', actorId);
      const row = this.actorTable.get(actorId);
      if (row === undefined) return undefined;
      const head = this.transitionTable.get(actorId)?.at(-1);
      return { actor: { ...row }, head: head?.seq === row.version ? { ...head } : undefined };
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

  history(actorId: string, page: HistoryPage = {}): Promise<TransitionRow[]> {
    return settle(() => {
      this.ensureOpen('query', actorId);
      const { afterSeq, limit } = checkHistoryPage(page);
      const rows = this.transitionTable.get(actorId) ?? [];
      // seq runs 1, 2, 3, … in order: row `seq` sits at index seq - 1.
      const from = rows.findIndex((t) => t.seq > afterSeq);
      if (from < 0) return [];
      return rows
        .slice(from, limit === undefined ? undefined : from + limit)
        .map((t) => ({ ...t }));
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

  acquireLeases(request: {
    owner: string;
    now: number;
    leaseUntil: number;
    limit: number;
    actorIds?: readonly string[] | undefined;
  }): Promise<LeaseRow[]> {
    return settle(() => {
      this.ensureOpen('commit');
      checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil, limit, actorIds } = request;
      const free = (id: string) => {
        const held = this.leaseTable.get(id);
        return held === undefined || held.leaseUntil < now;
      };
      const candidates =
        actorIds === undefined
          ? [...this.actorTable.values()].filter((a) => a.status === 'active' && free(a.id))
          : [...new Set(actorIds)]
              .map((id) => this.actorTable.get(id))
              .filter(
                (a): a is ActorRow =>
                  a !== undefined && (free(a.id) || this.leaseTable.get(a.id)?.owner === owner),
              );
      return candidates
        .map((a) => a.id)
        .sort(compareText)
        .slice(0, limit)
        .map((actorId) => {
          this.leaseTable.set(actorId, { owner, leaseUntil });
          return { actorId, owner, leaseUntil };
        });
    });
  }

  renewLeases(request: {
    owner: string;
    now: number;
    leaseUntil: number;
    actorIds: readonly string[];
  }): Promise<string[]> {
    return settle(() => {
      this.ensureOpen('commit');
      checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil } = request;
      return [...new Set(request.actorIds)]
        .filter((id) => {
          const held = this.leaseTable.get(id);
          return held?.owner === owner && held.leaseUntil >= now;
        })
        .sort(compareText)
        .map((id) => {
          this.leaseTable.set(id, { owner, leaseUntil });
          return id;
        });
    });
  }

  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void> {
    return settle(() => {
      this.ensureOpen('commit');
      checkLeaseRequest('commit', { owner });
      for (const id of actorIds) {
        if (this.leaseTable.get(id)?.owner === owner) this.leaseTable.delete(id);
      }
    });
  }

  lease(actorId: string): Promise<LeaseRow | undefined> {
    return settle(() => {
      this.ensureOpen('load', actorId);
      const held = this.leaseTable.get(actorId);
      return held && { actorId, ...held };
    });
  }

  claimDueTimers(request: {
    owner: string;
    now: number;
    claimUntil: number;
    limit: number;
  }): Promise<TimerClaim[]> {
    return settle(() => {
      this.ensureOpen('timer');
      checkLeaseRequest('timer', request);
      const { owner, now, claimUntil, limit } = request;
      return this.allTimers()
        .filter((t) => {
          const claim = this.claimTable.get(timerKey(t.actorId, t.timerId));
          return t.dueAt <= now && (claim === undefined || claim.claimUntil < now);
        })
        .sort(byTimer)
        .slice(0, limit)
        .map((t) => {
          this.claimTable.set(timerKey(t.actorId, t.timerId), { claimedBy: owner, claimUntil });
          return { ...t, claimedBy: owner, claimUntil };
        });
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

  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number> {
    return settle(() => {
      this.ensureOpen('query');
      return this.rejectionTable.filter(
        (r) =>
          r.at >= query.since &&
          (query.until === undefined || r.at < query.until) &&
          (query.reason === undefined || r.reason === query.reason),
      ).length;
    });
  }

  countActors(query: ActorCountQuery = {}): Promise<ActorCount[]> {
    return settle(() => {
      this.ensureOpen('query');
      const groups = new Map<string, ActorCount>();
      for (const a of this.actorTable.values()) {
        if (query.machineId !== undefined && a.machineId !== query.machineId) continue;
        if (query.userId !== undefined && this.actorMeta.get(a.id)?.userId !== query.userId) {
          continue;
        }
        if (query.updatedSince !== undefined && a.updatedAt < query.updatedSince) continue;
        const key = JSON.stringify([a.machineId, a.state, a.status]);
        const group = groups.get(key) ?? {
          machineId: a.machineId,
          state: a.state,
          status: a.status,
          count: 0,
          totalAgeMs: 0,
        };
        group.count++;
        group.totalAgeMs += a.updatedAt - a.createdAt;
        groups.set(key, group);
      }
      return [...groups.values()].sort(
        (x, y) =>
          compareText(x.machineId, y.machineId) ||
          compareText(x.state, y.state) ||
          compareText(x.status, y.status),
      );
    });
  }

  actorsInStates(query: StatesQuery): Promise<ActorDwell[]> {
    return settle(() => {
      this.ensureOpen('query');
      const limit = checkLimit(query.limit ?? 100, 'query');
      const states = new Set(query.states);
      const found: ActorDwell[] = [];
      for (const a of this.actorTable.values()) {
        const meta = this.actorMeta.get(a.id);
        if (meta === undefined || !states.has(a.state)) continue;
        if (query.machineId !== undefined && a.machineId !== query.machineId) continue;
        if (query.userId !== undefined && meta.userId !== query.userId) continue;
        if (query.enteredBefore !== undefined && meta.stateSince > query.enteredBefore) continue;
        found.push({
          actorId: a.id,
          machineId: a.machineId,
          state: a.state,
          status: a.status,
          stateSince: meta.stateSince,
          updatedAt: a.updatedAt,
          userId: meta.userId,
        });
      }
      return found
        .sort((x, y) => x.stateSince - y.stateSince || compareText(x.actorId, y.actorId))
        .slice(0, limit);
    });
  }

  countStateEntries(query: StateEntryQuery): Promise<StateEntryCount[]> {
    return settle(() => {
      this.ensureOpen('query');
      const limit = checkLimit(query.limit ?? 100, 'query');
      const minCount = query.minCount ?? 1;
      const states = new Set(query.toStates);
      const found: StateEntryCount[] = [];
      for (const [actorId, rows] of this.transitionTable) {
        const count = rows.filter(
          (t) => t.at >= query.since && states.has(t.toState) && t.fromState !== t.toState,
        ).length;
        const actor = this.actorTable.get(actorId);
        if (actor === undefined || count === 0 || count < minCount) continue;
        found.push({
          actorId,
          machineId: actor.machineId,
          state: actor.state,
          status: actor.status,
          count,
        });
      }
      return found
        .sort((x, y) => y.count - x.count || compareText(x.actorId, y.actorId))
        .slice(0, limit);
    });
  }

  transitionsSince(query: {
    since: number;
    machineId?: string | undefined;
    limit?: number | undefined;
  }): Promise<TransitionFeedRow[]> {
    return settle(() => {
      this.ensureOpen('query');
      const limit = checkLimit(query.limit ?? 1000, 'query');
      const rows: TransitionFeedRow[] = [];
      for (const [actorId, history] of this.transitionTable) {
        const machineId = this.actorTable.get(actorId)?.machineId;
        if (machineId === undefined) continue;
        if (query.machineId !== undefined && machineId !== query.machineId) continue;
        for (const t of history) if (t.at >= query.since) rows.push({ ...t, machineId });
      }
      return rows
        .sort((x, y) => x.at - y.at || compareText(x.actorId, y.actorId) || x.seq - y.seq)
        .slice(0, limit);
    });
  }

  /** The memory store answers every query from its tables: nothing is derived. */
  refreshReadModels(): Promise<void> {
    return settle(() => this.ensureOpen('query'));
  }

  rebuildReadModels(): Promise<{ actors: number; entries: number }> {
    return settle(() => {
      this.ensureOpen('query');
      return { actors: this.actorTable.size, entries: 0 };
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

function timerKey(actorId: string, timerId: string): string {
  return `${actorId}\u0000${timerId}`;
}

/** Runs synchronous work as a promise, so a throw becomes a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
