/**
 * Actors written before ledgers existed: their snapshot carries no `agentcharts`
 * key, their pending timers are only rows of the timers table and the invokes they
 * await only children of their snapshot. Loading one builds its ledger from those,
 * once; its next commit writes the ledger on its row.
 */
import type { AnyActorLogic, AnyActorRef, AnyMachineSnapshot, EventObject } from 'xstate';
import type { Store } from '../store/types.ts';
import { actorKind } from './actor-kinds.ts';
import { parseInvokeKey } from './invoke.ts';
import { EMPTY_LEDGER, type Ledger, type PendingInvoke, type PendingTimer } from './ledger.ts';

export async function legacyLedger(
  store: Store,
  actorId: string,
  snapshot: AnyMachineSnapshot,
): Promise<Ledger> {
  const timers: PendingTimer[] = (await store.timers(actorId)).map((row) => {
    const timer: PendingTimer = {
      key: row.timerId,
      event: JSON.parse(row.event) as EventObject,
      due: row.dueAt,
    };
    // Ids of `after` delays and explicit ids; `raise:<type>` was made up for unnamed ones.
    if (!row.timerId.startsWith('raise:')) {
      timer.id = row.timerId;
      timer.sendId = row.timerId;
    }
    return timer;
  });
  const invokes: PendingInvoke[] = [];
  const children = snapshot.children as Record<
    string,
    (AnyActorRef & { logic: AnyActorLogic }) | undefined
  >;
  const promises = Object.keys(children).filter((id) => {
    const child = children[id];
    return child !== undefined && actorKind(child.logic) === 'promise';
  });
  if (promises.length > 0 && snapshot.status === 'active') {
    const steps = await store.listSteps({ actorId });
    for (const id of promises) {
      let latest: { key: string; version: number } | undefined;
      for (const row of steps) {
        const parsed = parseInvokeKey(actorId, row.key);
        if (parsed?.id === id && (!latest || parsed.version > latest.version)) {
          latest = { key: row.key, version: parsed.version };
        }
      }
      if (latest) invokes.push({ id, key: latest.key });
    }
  }
  return timers.length === 0 && invokes.length === 0 ? EMPTY_LEDGER : { timers, invokes };
}
