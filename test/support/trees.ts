/**
 * An actor and all its descendants as the fidelity tests compare them: on plain
 * XState (a started actor's refs) and on durable actors (read from the store).
 */
import type { AnyActorRef, AnyMachineSnapshot } from 'xstate';
import { openDurableActor, type Store } from '../../src/index.ts';

/** An actor and its descendants as compared. */
export interface Tree {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  children: Record<string, Tree | 'promise'>;
}

function view(s: AnyMachineSnapshot, children: Tree['children']): Tree {
  return {
    value: s.value,
    context: JSON.parse(JSON.stringify(s.context)) as unknown,
    status: s.status,
    output: s.output,
    children,
  };
}

export function plainTree(ref: AnyActorRef): Tree {
  const s = ref.getSnapshot() as AnyMachineSnapshot;
  const children: Tree['children'] = {};
  for (const [id, child] of Object.entries(s.children as Record<string, AnyActorRef>)) {
    const logic = (child as unknown as { logic: object }).logic;
    children[id] = 'getStateNodeById' in logic ? plainTree(child) : 'promise';
  }
  return view(s, children);
}

export async function durableTree(store: Store, id: string): Promise<Tree> {
  const s = (await openDurableActor(store, id)).getSnapshot() as AnyMachineSnapshot;
  const children: Tree['children'] = {};
  for (const child of Object.keys(s.children)) {
    const childId = `${id}/${child}`;
    children[child] = (await store.loadActor(childId))
      ? await durableTree(store, childId)
      : 'promise';
  }
  return view(s, children);
}
