/**
 * The in-memory store, for unit tests. It is also the reference semantics of the
 * Store contract (with the shared rules in ./rules.ts).
 */
import { ConcurrencyError, StoreError, type StoreOperation } from '../core/errors.ts';
import { dueOf, snapshotTimers } from './pending-timers.ts';
import * as rules from './rules.ts';
import {
  actorsInStates,
  countActors,
  countRejections,
  countStateEntries,
  listRejections,
  newTables,
  transitionsSince,
  type MemoryTables,
} from './memory-queries.ts';
import type * as S from './types.ts';

/**
 * A Store kept in process memory. Rows are copied in and out, so callers can
 * never change stored state by mutating what they passed or received.
 *
 * @example
 * const store = new MemoryStore();
 * await store.commit([write]);
 */
export class MemoryStore implements S.Store {
  readonly kind = 'memory';
  readonly location = 'memory:';
  // TypeScript `private`, not `#`: wrappers built with Object.create or Proxy
  // (instrumentation, fault injection) must still reach these members.
  private readonly t: MemoryTables = newTables();
  private closed = false;

  /** Runs one operation as a promise: refused once closed, a throw becoming a rejection. */
  private run<T>(
    operation: StoreOperation,
    actorId: string | undefined,
    work: () => T,
  ): Promise<T> {
    return settle(() => {
      if (this.closed) {
        throw new StoreError({ operation, kind: 'closed', actorId, detail: 'the store is closed' });
      }
      return work();
    });
  }

  /** The error that rejects this write alone, checked before anything changes. */
  private conflict(write: S.ActorWrite): Error | undefined {
    const invalid = rules.invalidWrite(write);
    if (invalid) return invalid;
    const { actorId, expectedVersion } = write;
    const current = this.t.actors.get(actorId);
    if (write.lease !== undefined) {
      const lease = this.t.leases.get(actorId);
      const lost = rules.leaseViolation(
        write,
        current && { owner: lease?.owner ?? null, leaseUntil: lease?.leaseUntil ?? null },
      );
      if (lost) return lost;
    }
    if (
      expectedVersion === 0
        ? current !== undefined
        : current?.version !== expectedVersion ||
          // The chain's own compare-and-set: a write made on top of another that was
          // refused finds its version written by someone else.
          current.headHash !== write.transition.prevHash
    ) {
      if (current === undefined) return rules.actorMissing(actorId);
      return new ConcurrencyError({ actorId, expectedVersion, actualVersion: current.version });
    }
    const consumed = write.consumeMessage;
    if (consumed !== undefined && this.t.messages.get(consumed)?.to !== actorId) {
      // Delivered (or dropped) by another writer at this version.
      return new ConcurrencyError({ actorId, expectedVersion, actualVersion: expectedVersion });
    }
    // Rows are appended in seq order: only the last one can collide (O(1), whatever the history).
    const last = this.t.transitions.get(actorId)?.at(-1);
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

  commit(writes: readonly S.ActorWrite[]): Promise<Array<Error | null>> {
    return this.run('commit', writes.length === 1 ? writes[0]?.actorId : undefined, () => {
      const results: Array<Error | null> = [];
      for (const write of writes) results.push(this.conflict(write) ?? this.apply(write));
      return results;
    });
  }

  /** Applies a write {@link conflict} found nothing wrong with. */
  private apply(write: S.ActorWrite): null {
    const { actorId, transition } = write;
    const current = this.t.actors.get(actorId);
    const meta = this.t.meta.get(actorId);
    if (meta === undefined || current?.state !== write.actor.state) {
      this.t.meta.set(actorId, {
        userId: meta ? meta.userId : (write.userId ?? null),
        stateSince: transition.at,
      });
    }
    this.t.actors.set(actorId, {
      ...write.actor,
      createdAt: current?.createdAt ?? write.actor.createdAt,
    });
    const history = this.t.transitions.get(actorId);
    if (history === undefined) this.t.transitions.set(actorId, [{ ...transition }]);
    else history.push({ ...transition });
    if (write.nextDueAt === undefined) this.t.nextDue.delete(actorId);
    else this.t.nextDue.set(actorId, write.nextDueAt);
    if (write.consumeMessage !== undefined) this.t.messages.delete(write.consumeMessage);
    if (write.messagesOut !== undefined) {
      for (const m of write.messagesOut) {
        const id = this.t.nextMessageId++;
        this.t.messages.set(id, {
          ...m,
          id,
          from: actorId,
          fromSeq: transition.seq,
          at: transition.at,
        });
      }
    }
    if (write.parentId !== undefined && write.expectedVersion === 0) {
      this.t.parents.set(actorId, write.parentId);
    }
    if (write.stepsBegin !== undefined) {
      for (const step of write.stepsBegin) {
        if (this.t.steps.has(step.key)) continue;
        this.t.steps.set(step.key, {
          ...step,
          actorId,
          status: 'executing',
          result: null,
          finishedAt: null,
          attempts: 0,
        });
      }
    }
    return null;
  }

  loadActor(actorId: string): Promise<S.ActorRow | undefined> {
    return this.run('load', actorId, () => {
      const row = this.t.actors.get(actorId);
      return row && { ...row };
    });
  }

  loadActorHead(actorId: string): Promise<S.ActorHead | undefined> {
    return this.run('load', actorId, () => {
      const row = this.t.actors.get(actorId);
      if (row === undefined) return undefined;
      const head = this.t.transitions.get(actorId)?.at(-1);
      const parentId = this.t.parents.get(actorId);
      return {
        actor: { ...row },
        head: head?.seq === row.version ? { ...head } : undefined,
        ...(parentId === undefined ? {} : { parentId }),
      };
    });
  }

  listActors(query: S.ActorQuery = {}): Promise<S.ActorRow[]> {
    return this.run('query', undefined, () => {
      const limit = rules.checkLimit(query.limit ?? 100, 'query');
      const { machineId, state, states, userId, status, afterId } = query;
      return [...this.t.actors.values()]
        .filter(
          (a) =>
            (machineId === undefined || a.machineId === machineId) &&
            (state === undefined || a.state === state) &&
            (states === undefined || states.includes(a.state)) &&
            (userId === undefined || this.t.meta.get(a.id)?.userId === userId) &&
            (status === undefined || a.status === status) &&
            (afterId === undefined || rules.compareText(a.id, afterId) > 0),
        )
        .sort((a, b) => rules.compareText(a.id, b.id))
        .slice(0, limit)
        .map((a) => ({ ...a }));
    });
  }

  history(actorId: string, page: S.HistoryPage = {}): Promise<S.TransitionRow[]> {
    return this.run('query', actorId, () => {
      const { afterSeq, limit } = rules.checkHistoryPage(page);
      const rows = this.t.transitions.get(actorId) ?? [];
      // seq runs 1, 2, 3, … in order: row `seq` sits at index seq - 1.
      const from = rows.findIndex((t) => t.seq > afterSeq);
      if (from < 0) return [];
      return rows
        .slice(from, limit === undefined ? undefined : from + limit)
        .map((t) => ({ ...t }));
    });
  }

  readActorLog(actorId: string): Promise<S.ActorLog | undefined> {
    return this.run('query', actorId, () => {
      const actor = this.t.actors.get(actorId);
      if (actor === undefined) return undefined;
      return {
        actor: { ...actor },
        parentId: this.t.parents.get(actorId),
        rows: (this.t.transitions.get(actorId) ?? []).map((t) => ({ ...t })),
        nextDueAt: this.t.nextDue.get(actorId),
      };
    });
  }

  actorIdsWithHistory(): Promise<string[]> {
    return this.run('query', undefined, () =>
      [...this.t.transitions.keys()].sort(rules.compareText),
    );
  }

  timers(actorId: string): Promise<S.TimerRow[]> {
    return this.run('timer', actorId, () => this.pendingTimers(actorId).sort(rules.byTimer));
  }

  dueTimers(now: number, limit: number): Promise<S.TimerRow[]> {
    return this.run('timer', undefined, () => {
      rules.checkLimit(limit, 'timer');
      return dueOf(this.dueActors(now, limit), () => [], now, limit);
    });
  }

  nextTimerDue(): Promise<number | undefined> {
    return this.run('timer', undefined, () => {
      let next: number | undefined;
      for (const due of this.t.nextDue.values()) if (next === undefined || due < next) next = due;
      return next;
    });
  }

  /** The actor's pending timers, as its snapshot has them. */
  private pendingTimers(actorId: string): S.TimerRow[] {
    const actor = this.t.actors.get(actorId);
    return (actor && snapshotTimers(actorId, actor.snapshot)) ?? [];
  }

  /** Actors with a timer due at `now` (and that pass `take`), earliest first, at most `limit`. */
  private dueActors(
    now: number,
    limit: number,
    take: (actorId: string) => boolean = () => true,
  ): S.ActorRow[] {
    return [...this.t.nextDue]
      .filter(([id, due]) => due <= now && take(id))
      .sort(([a, x], [b, y]) => x - y || rules.compareText(a, b))
      .slice(0, limit)
      .map(([id]) => this.t.actors.get(id))
      .filter((a): a is S.ActorRow => a !== undefined);
  }

  getStep(key: string): Promise<S.StepRow | undefined> {
    return this.run('step', undefined, () => {
      const row = this.t.steps.get(key);
      return row && { ...row };
    });
  }

  beginStep(step: S.NewStep): Promise<{ row: S.StepRow; created: boolean }> {
    return this.run('step', step.actorId, () => {
      const existing = this.t.steps.get(step.key);
      if (existing) return { row: { ...existing }, created: false };
      const row: S.StepRow = {
        key: step.key,
        actorId: step.actorId,
        name: step.name,
        status: 'executing',
        result: null,
        startedAt: step.startedAt,
        finishedAt: null,
        attempts: 1,
      };
      this.t.steps.set(step.key, row);
      return { row: { ...row }, created: true };
    });
  }

  finishStep(key: string, status: S.StepEnd, result: string | null, at: number): Promise<void> {
    return this.run('step', undefined, () => {
      const row = this.t.steps.get(key);
      if (row?.status !== 'executing') throw rules.stepMiss(key, row, 'executing');
      this.t.steps.set(key, { ...row, status, result, finishedAt: at });
    });
  }

  startStep(key: string, startedAt: number): Promise<boolean> {
    return this.run('step', undefined, () => {
      const row = this.t.steps.get(key);
      if (row?.status !== 'executing' || row.attempts !== 0) return false;
      this.t.steps.set(key, { ...row, attempts: 1, startedAt });
      return true;
    });
  }

  pendingMessages(query: S.MessageQuery): Promise<S.MessageRow[]> {
    return this.run('query', query.to, () => {
      const limit = rules.checkLimit(query.limit, 'query');
      const rows: S.MessageRow[] = [];
      for (const m of this.t.messages.values()) {
        if (rows.length >= limit) break;
        if (query.to !== undefined && m.to !== query.to) continue;
        if (query.afterId !== undefined && m.id <= query.afterId) continue;
        rows.push({ ...m });
      }
      return rows;
    });
  }

  dropMessage(id: number): Promise<boolean> {
    return this.run('commit', undefined, () => this.t.messages.delete(id));
  }

  childrenOf(parentId: string): Promise<S.ActorRow[]> {
    return this.run('query', undefined, () =>
      [...this.t.parents]
        .filter(([, parent]) => parent === parentId)
        .map(([child]) => this.t.actors.get(child))
        .filter((a): a is S.ActorRow => a !== undefined)
        .sort((a, b) => rules.compareText(a.id, b.id))
        .map((a) => ({ ...a })),
    );
  }

  restartStep(key: string, startedAt: number): Promise<void> {
    return this.run('step', undefined, () => {
      const row = this.t.steps.get(key);
      if (row === undefined || row.status === 'done')
        throw rules.stepMiss(key, row, 'executing or failed');
      this.t.steps.set(key, {
        ...row,
        status: 'executing',
        result: null,
        startedAt,
        finishedAt: null,
        attempts: row.attempts + 1,
      });
    });
  }

  listSteps(query: { actorId?: string; status?: S.StepStatus } = {}): Promise<S.StepRow[]> {
    return this.run('step', undefined, () =>
      [...this.t.steps.values()]
        .filter(
          (s) =>
            (query.actorId === undefined || s.actorId === query.actorId) &&
            (query.status === undefined || s.status === query.status),
        )
        .sort((a, b) => a.startedAt - b.startedAt || rules.compareText(a.key, b.key))
        .map((s) => ({ ...s })),
    );
  }

  acquireLeases(request: S.LeaseRequest): Promise<S.LeaseRow[]> {
    return this.run('commit', undefined, () => {
      rules.checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil, limit, actorIds } = request;
      const free = (id: string) => {
        const held = this.t.leases.get(id);
        return held === undefined || held.leaseUntil < now;
      };
      const candidates =
        actorIds === undefined
          ? [...this.t.actors.values()].filter((a) => a.status === 'active' && free(a.id))
          : [...new Set(actorIds)]
              .map((id) => this.t.actors.get(id))
              .filter(
                (a): a is S.ActorRow =>
                  a !== undefined && (free(a.id) || this.t.leases.get(a.id)?.owner === owner),
              );
      return candidates
        .map((a) => a.id)
        .sort(rules.compareText)
        .slice(0, limit)
        .map((actorId) => {
          this.t.leases.set(actorId, { owner, leaseUntil });
          return { actorId, owner, leaseUntil };
        });
    });
  }

  renewLeases(request: S.LeaseRenewal): Promise<string[]> {
    return this.run('commit', undefined, () => {
      rules.checkLeaseRequest('commit', request);
      const { owner, now, leaseUntil } = request;
      return [...new Set(request.actorIds)]
        .filter((id) => {
          const held = this.t.leases.get(id);
          return held?.owner === owner && held.leaseUntil >= now;
        })
        .sort(rules.compareText)
        .map((id) => {
          this.t.leases.set(id, { owner, leaseUntil });
          return id;
        });
    });
  }

  releaseLeases(owner: string, actorIds: readonly string[]): Promise<void> {
    return this.run('commit', undefined, () => {
      rules.checkLeaseRequest('commit', { owner });
      for (const id of actorIds) {
        if (this.t.leases.get(id)?.owner === owner) this.t.leases.delete(id);
      }
    });
  }

  lease(actorId: string): Promise<S.LeaseRow | undefined> {
    return this.run('load', actorId, () => {
      const held = this.t.leases.get(actorId);
      return held && { actorId, ...held };
    });
  }

  claimDueTimers(request: S.TimerClaimRequest): Promise<S.TimerClaim[]> {
    return this.run('timer', undefined, () => {
      rules.checkLeaseRequest('timer', request);
      const { owner, now, claimUntil, limit } = request;
      const free = (id: string) => {
        const held = this.t.leases.get(id);
        return held === undefined || held.leaseUntil < now || held.owner === owner;
      };
      const actors = this.dueActors(now, limit, free);
      for (const a of actors) this.t.leases.set(a.id, { owner, leaseUntil: claimUntil });
      return dueOf(actors, () => [], now, Number.MAX_SAFE_INTEGER).map((t) => ({
        ...t,
        claimedBy: owner,
        claimUntil,
      }));
    });
  }

  recordRejection(row: S.RejectionRow): Promise<void> {
    return this.run('commit', row.actorId, () => {
      this.t.rejections.push({ ...row });
    });
  }

  listRejections(query: { since?: number; actorId?: string } = {}): Promise<S.RejectionRow[]> {
    return this.run('query', undefined, () => listRejections(this.t, query));
  }

  countRejections(query: { since: number; until?: number; reason?: string }): Promise<number> {
    return this.run('query', undefined, () => countRejections(this.t, query));
  }

  pruneRejections(query: { before?: number; keep?: number }): Promise<number> {
    return this.run('commit', undefined, () => {
      const before = this.t.rejections.length;
      // Stable: rows of one time stay in insertion order.
      let kept = this.t.rejections
        .filter((r) => query.before === undefined || r.at >= query.before)
        .sort((a, b) => a.at - b.at);
      if (query.keep !== undefined) kept = kept.slice(Math.max(0, kept.length - query.keep));
      this.t.rejections = kept;
      return before - kept.length;
    });
  }

  countActors(query: S.ActorCountQuery = {}): Promise<S.ActorCount[]> {
    return this.run('query', undefined, () => countActors(this.t, query));
  }

  actorsInStates(query: S.StatesQuery): Promise<S.ActorDwell[]> {
    return this.run('query', undefined, () => actorsInStates(this.t, query));
  }

  countStateEntries(query: S.StateEntryQuery): Promise<S.StateEntryCount[]> {
    return this.run('query', undefined, () => countStateEntries(this.t, query));
  }

  transitionsSince(query: S.TransitionFeedQuery): Promise<S.TransitionFeedRow[]> {
    return this.run('query', undefined, () => transitionsSince(this.t, query));
  }

  refreshReadModels(): Promise<void> {
    return this.run('query', undefined, () => undefined);
  }

  private readonly nonces = new Map<string, number>();
  private noncesSweptAt = 0;

  rememberRequest(request: S.RememberedRequest): Promise<'new' | 'replayed'> {
    return this.run('commit', undefined, () => {
      if (request.now - this.noncesSweptAt > 60_000) {
        this.noncesSweptAt = request.now;
        for (const [id, expires] of this.nonces) if (expires < request.now) this.nonces.delete(id);
      }
      const id = `${request.key}\u0000${request.nonce}`;
      const expires = this.nonces.get(id);
      if (expires !== undefined && expires >= request.now) return 'replayed';
      this.nonces.set(id, request.expiresAt);
      return 'new';
    });
  }

  rebuildReadModels(): Promise<{ actors: number; entries: number }> {
    return this.run('query', undefined, () => ({ actors: this.t.actors.size, entries: 0 }));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** Runs synchronous work as a promise, so a throw becomes a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
