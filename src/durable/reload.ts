/** Re-reading an actor from the store, checked against the head of its chain. */
import { StoreError } from '../core/errors.ts';
import type { ActorCore } from './actor-core.ts';
import { loadMigrated } from './migrate.ts';

/**
 * Re-reads the actor from the store, checking that its snapshot and the head of
 * its chain agree (StoreError kind `corrupt` otherwise: nothing is written on top).
 */
export async function reload(core: ActorCore): Promise<void> {
  const found = await core.runtime.store.loadActorHead(core.id);
  if (!found) throw new StoreError({ operation: 'load', kind: 'not_found', actorId: core.id });
  const loaded = await loadMigrated(core.runtime, core.machine, core.versioning, found);
  core.snapshot = loaded.snapshot;
  core.ledger = loaded.ledger;
  core.row = loaded.found.actor;
  core.stale = false;
}

/**
 * Before refusing an event as illegal: did another process move the actor since
 * it was loaded here? If so it is reloaded (one indexed read, paid only on the
 * rejection path) and the event is decided again on the stored state.
 */
export async function movedElsewhere(core: ActorCore): Promise<boolean> {
  if (!core.stale) {
    const stored = await core.runtime.store.loadActor(core.id);
    if (!stored || stored.version === core.row.version) return false;
  }
  await reload(core);
  return true;
}
