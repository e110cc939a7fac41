/**
 * The order agentcharts 0.1.0 wrote a step's messages in, where the planner now
 * places some of them earlier (./effects.ts): the spawns of an actor's first step
 * and those made inside `assign` go where XState starts the child, and events sent
 * to a child before its spawn go right after it. `verify` accepts a log written
 * in either order, so the planner records each moved message here.
 */
import type { AnyActorRef } from 'xstate';
import type { OutgoingMessage } from '../store/types.ts';

/**
 * A spawn planned earlier than agentcharts 0.1.0 planned it: its messages (a stop
 * of a child it replaces, then the spawn) at `at`, `count` of them, and how many
 * messages preceded it in 0.1.0's order: its `spawnChild` action, or for a spawn
 * inside `assign` (`late`), the first send to it or the end.
 */
export interface Early {
  at: number;
  count: number;
  before: number;
  ref: AnyActorRef;
  late: boolean;
  /** Not a spawn: an event sent to the child before its spawn, moved after it. */
  held?: true;
}

/**
 * `messages` in 0.1.0's order (each early one moved back to where 0.1.0 put it),
 * or undefined when that is the order they are in.
 */
export function legacyOrder(
  messages: ReadonlyArray<Omit<OutgoingMessage, 'idx'>>,
  spawns: readonly Early[],
): OutgoingMessage[] | undefined {
  const early = spawns.filter((e) => e.before >= 0);
  const moved = new Set<number>();
  for (const e of early) for (let k = 0; k < e.count; k++) moved.add(e.at + k);
  const order: number[] = [];
  for (let i = 0; i <= messages.length; i++) {
    for (const e of early)
      if (e.before === i) for (let k = 0; k < e.count; k++) order.push(e.at + k);
    if (i < messages.length && !moved.has(i)) order.push(i);
  }
  if (order.every((from, idx) => from === idx)) return undefined;
  return order.map((from, idx) => ({ ...(messages[from] as OutgoingMessage), idx }));
}
