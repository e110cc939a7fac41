/**
 * System ids across an actor's tree. In XState one system is shared by a root
 * and all its descendants: an actor spawned or invoked with a `systemId` is
 * found by `system.get(id)` from any actor of the tree (a sibling, an ancestor, a
 * descendant) from its start until it stops or finishes. A durable tree is many
 * durable actors, each stepping on its own snapshot, so a step that asks for a
 * system id its own children do not hold is decided again with the answer this
 * module finds (advance.ts, `advanceOrLookUp`), and the row records what it
 * found, for replay.
 *
 * The answer is read from the tree as this process sees it: each actor's newest
 * decided step (a step still being committed included, as XState's synchronous
 * run has it), its children with their system ids, and whether each child
 * machine is still active. A child machine whose row is not created yet (its
 * spawn is on its way, replacing one that finished or was stopped under its id)
 * holds its id, as XState registers it at the spawn; a
 * child that finished does not, nor a settled promise. The walk loads every
 * child machine of the tree once at most (it ends when every id asked for is
 * found), and is made only by steps that ask for an id their own children do not
 * hold.
 */
import type { AnyActorLogic, AnyActorRef, AnyMachineSnapshot } from 'xstate';
import type { TreeView } from './notices.ts';
import { actorKind } from './actor-kinds.ts';
import { advanceOrLookUp, type LookUp, type Step, type StepFacts } from './advance.ts';
import { childActorId } from './actor-ids.ts';
import type { Ledger } from './ledger.ts';
import { NOWHERE } from './pure.ts';
import type { DurableRuntime } from './runtime.ts';

type Child = AnyActorRef & { systemId?: string; logic?: AnyActorLogic };

/** The actor whose step asks: its snapshot before the step (none while it is created). */
export interface Asker {
  readonly runtime: DurableRuntime;
  readonly id: string;
  readonly parentId: string | undefined;
  readonly snapshot: AnyMachineSnapshot | undefined;
  readonly ledger: Ledger;
}

/** How many times a step is decided again for ids it asks for only once others are found. */
const MAX_ROUNDS = 8;

/**
 * Decides the step `first` asked lookups for: looks its ids up in `core`'s tree
 * and decides again with them, until the step asks for nothing new.
 */
export async function decideWithTree(core: Asker, facts: StepFacts, first: LookUp): Promise<Step> {
  const system = new Map(facts.system ?? []);
  const lives = new Map(facts.lives ?? []);
  let decided: Step | LookUp = first;
  for (let round = 0; decided.kind === 'lookup' && round < MAX_ROUNDS; round++) {
    const found =
      decided.ids.length > 0 ? await lookUpSystemIds(core, decided.ids) : new Map<string, null>();
    let any = false;
    // The lives of the actors asked for, and of those found (a delayed send holds it).
    const wanted = new Set(decided.lives ?? []);
    for (const [id, actorId] of found) {
      system.set(id, actorId);
      if (actorId === null) continue;
      any = true;
      if (actorId !== NOWHERE && !lives.has(actorId)) wanted.add(actorId);
    }
    for (const actorId of wanted) lives.set(actorId, await lifeOf(core, actorId));
    // Nothing new found: the step as decided with those ids not found stands.
    if (!any && (decided.lives ?? []).length === 0) return decided.otherwise;
    decided = advanceOrLookUp({ ...facts, system, lives });
  }
  return decided.kind === 'lookup' ? decided.otherwise : decided;
}

/**
 * Which life (Ledger.life) of its id an actor of the tree is in, as the tree
 * stands in XState's terms: a spawn of it on its way is its next life (its first
 * when no actor was stored under the id).
 */
async function lifeOf(core: Asker, actorId: string): Promise<number> {
  const stored = await storedView(core, actorId);
  if (!core.runtime.courier.spawning(actorId)) return stored?.ledger.life ?? 1;
  return stored === undefined ? 1 : (stored.ledger.life ?? 1) + 1;
}

/** An actor of `core`'s tree as stored (or as its step being committed leaves it). */
async function storedView(core: Asker, actorId: string): Promise<TreeView | undefined> {
  if (actorId === core.id) {
    const { parentId, snapshot, ledger } = core;
    return snapshot === undefined ? undefined : { parentId, snapshot, ledger };
  }
  const held = core.runtime.heldActor(actorId);
  if (held !== undefined) return held.treeView();
  try {
    return (await core.runtime.actor(actorId)).treeView();
  } catch {
    return undefined; // not created yet, or not loadable here
  }
}

/**
 * Which durable actor of `core`'s tree holds each of `ids` (null: none; NOWHERE:
 * an actor that takes no events, a running promise). `core`'s own children are
 * not among the answers (its step finds them in its snapshot), but their
 * descendants are.
 */
export async function lookUpSystemIds(
  core: Asker,
  ids: readonly string[],
): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>(ids.map((id) => [id, null]));
  const stored = (actorId: string): Promise<TreeView | undefined> => storedView(core, actorId);
  // Its spawn is on its way: the new child holds its id, not the one stored under it.
  const view = (actorId: string): Promise<TreeView | undefined> =>
    core.runtime.courier.spawning(actorId) ? Promise.resolve(undefined) : stored(actorId);
  // The root: the tree's actors are its descendants. (An actor being created has
  // no view of its own yet: its parent is where the walk up starts.) The walk up
  // goes through an ancestor whose spawn again is on its way: the asker descends
  // from the one stored, which runs until that spawn's step stops it, as in XState.
  let rootId = core.id;
  let parentId = core.parentId;
  const seen = new Set([core.id]);
  while (parentId !== undefined && !seen.has(parentId)) {
    const parent = await stored(parentId);
    if (parent === undefined) break;
    seen.add(parentId);
    rootId = parentId;
    parentId = parent.parentId;
  }
  const root = await view(rootId);
  if (root === undefined) return found;
  // The root's own system id (createDurableActor's `systemId`), while it runs.
  const own = root.ledger.systemId;
  if (own !== undefined && found.get(own) === null && root.snapshot.status === 'active') {
    found.set(own, rootId);
  }
  await visit(rootId, root, core.id, found, view);
  return found;
}

async function visit(
  actorId: string,
  node: TreeView,
  asker: string,
  found: Map<string, string | null>,
  view: (actorId: string) => Promise<TreeView | undefined>,
): Promise<void> {
  // A finished or stopped actor has stopped its children; a failed one has not.
  if (node.snapshot.status !== 'active' && node.snapshot.status !== 'error') return;
  const children = node.snapshot.children as Record<string, Child | undefined>;
  const settled = node.ledger.settled ?? [];
  // What the step that failed it had moved before it threw (Ledger.orphaned).
  const orphaned = node.ledger.orphaned;
  if (orphaned !== undefined) {
    for (const [systemId, kind] of Object.entries(orphaned)) {
      if (kind === 'lost' && found.get(systemId) === null) found.set(systemId, NOWHERE);
    }
  }
  for (const key in children) {
    // Each id is held once in a tree: done when every one asked for is found.
    if (!hasMissing(found)) return;
    const ref = children[key];
    if (ref === undefined || ref.logic === undefined) continue;
    const kind = actorKind(ref.logic);
    const childId = childActorId(actorId, key);
    const child = kind === 'machine' ? await view(childId) : undefined;
    const active = child === undefined || child.snapshot.status === 'active';
    const systemId = ref.systemId;
    if (
      systemId !== undefined &&
      found.get(systemId) === null &&
      actorId !== asker &&
      !settled.includes(key) &&
      orphaned?.[systemId] === undefined &&
      active
    ) {
      if (kind === 'machine') found.set(systemId, childId);
      else if (kind === 'promise') found.set(systemId, NOWHERE);
    }
    if (child !== undefined) await visit(childId, child, asker, found, view);
  }
}

function hasMissing(found: ReadonlyMap<string, string | null>): boolean {
  for (const actorId of found.values()) if (actorId === null) return true;
  return false;
}
