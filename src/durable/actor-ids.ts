/**
 * The names a durable actor gives what it runs: the id of a child actor, the
 * actor a send goes to as effects and timers hold its receiver, and the step key
 * and name of an invoked promise. Every part of the runtime that stores or finds
 * them (planning, delivery, system ids, steps) names them here.
 */
import { TO_ACTOR, TO_PARENT, TO_STOPPED } from './ledger.ts';
import { NOWHERE } from './pure.ts';

/** The durable actor id of child `childId` of `parentId`. */
export function childActorId(parentId: string, childId: string): string {
  return `${parentId}/${childId}`;
}

/**
 * The durable actor a send of `actorId` goes to, by its receiver as effects and
 * timers hold it: undefined for the actor itself, or for no one (a child stopped
 * since, an actor that takes no events).
 */
export function receiverId(
  actorId: string,
  parentId: string | undefined,
  to: string | undefined,
): string | undefined {
  if (to === undefined || to === TO_STOPPED) return to === undefined ? actorId : undefined;
  if (to === TO_PARENT) return parentId;
  if (to.startsWith(TO_ACTOR)) {
    const id = to.slice(TO_ACTOR.length);
    return id === NOWHERE ? undefined : id;
  }
  return childActorId(actorId, to);
}

/**
 * The tree an actor belongs to (XState's system: a root and its descendants),
 * named by the first segment of its id: a child's id is its parent's, a slash,
 * and its own. A root whose own id holds a slash shares its tree's name with
 * the roots of the same first segment; what is ordered by tree (./deliver.ts,
 * Courier.settledFor) then waits a little more than it must, never less.
 */
export function treeOf(actorId: string): string {
  const slash = actorId.indexOf('/');
  return slash < 0 ? actorId : actorId.slice(0, slash);
}

/** The step key of invoke `id` entered at actor version `version`. */
export function invokeKey(actorId: string, id: string, version: number): string {
  return `${actorId}:invoke:${id}:${version}`;
}

/** The step name of invoke `id` (its rows are found by actor and this name). */
export function invokeStepName(id: string): string {
  return `invoke:${id}`;
}
