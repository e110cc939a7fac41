/**
 * Messages between durable actors. A child machine (invoked, or `spawnChild`) is a
 * durable actor of its own (id `<parent>/<child>`); everything that crosses between
 * actors — the spawn itself, `sendTo`/`sendParent`, a stop when the parent leaves
 * the state, the child's completion (`xstate.done.actor.<id>` with its output) — is
 * a message row written in the sender's commit and consumed in the receiver's,
 * so it is delivered exactly once, in order per sender.
 *
 * Planning is a pure function of the transition (the send path writes what it
 * plans; `verify` re-plans from the sender's log to check every delivery).
 */
import type { AnyActorLogic, AnyActorRef, AnyMachineSnapshot, EventObject } from 'xstate';
import { UnsupportedActorError } from '../core/errors.ts';
import { stateLabel } from '../core/state.ts';
import type { OutgoingMessage } from '../store/types.ts';
import { actorKind } from './actor-kinds.ts';
import { PARENT_REF } from './pure.ts';

/** The durable actor id of child `childId` of `parentId`. */
export function childActorId(parentId: string, childId: string): string {
  return `${parentId}/${childId}`;
}

/** What a spawn message carries: how the receiver builds the child. */
export interface SpawnBody {
  /** The parent's machine id and the child's logic there (an `actors` key or inline invoke). */
  parentMachine: string;
  src: string;
  childId: string;
  systemId: string | undefined;
  input: unknown;
}

type Children = Record<string, AnyActorRef | undefined>;
type ChildRef = AnyActorRef & { logic: AnyActorLogic; src: unknown; systemId?: string };

interface Transition {
  actorId: string;
  /** The actor that spawned this one, if any. */
  parentId: string | undefined;
  machineId: string;
  previous: AnyMachineSnapshot | undefined;
  next: AnyMachineSnapshot;
  actions: readonly unknown[];
}

function isMachineChild(ref: AnyActorRef | undefined): ref is ChildRef {
  return ref !== undefined && actorKind((ref as ChildRef).logic) === 'machine';
}

/**
 * The messages one transition sends, in order: child machines it stops, then those
 * it spawns, then its `sendTo`/`sendParent` events, then (when it finished) its
 * completion to its parent.
 */
export function planMessages(t: Transition): OutgoingMessage[] {
  const out: Array<Omit<OutgoingMessage, 'idx'>> = [];
  const before = (t.previous?.children ?? {}) as Children;
  const after = t.next.children as Children;
  for (const id in before) {
    if (after[id] !== before[id] && isMachineChild(before[id])) {
      out.push({ to: childActorId(t.actorId, id), kind: 'stop', body: '{"type":"xstate.stop"}' });
    }
  }
  for (const id in after) {
    const child = after[id];
    if (child === before[id] || !isMachineChild(child)) continue;
    const body: SpawnBody = {
      parentMachine: t.machineId,
      src: typeof child.src === 'string' ? child.src : id,
      childId: id,
      systemId: child.systemId,
      input: (child as unknown as { options?: { input?: unknown } }).options?.input,
    };
    out.push({ to: childActorId(t.actorId, id), kind: 'spawn', body: JSON.stringify(body) });
  }
  for (const raw of t.actions) {
    const action = raw as { type?: string; params?: SendParams };
    if (action.type !== 'xstate.sendTo' || !action.params) continue;
    out.push(sendMessage(t, action.params, { ...before, ...after }));
  }
  // A child that finishes, in a transition or already at creation (its initial state is final).
  const finishes = t.previous === undefined || t.previous.status === 'active';
  if (t.next.status !== 'active' && t.parentId !== undefined && finishes) {
    const childId = t.actorId.slice(t.parentId.length + 1);
    const event =
      t.next.status === 'done'
        ? { type: `xstate.done.actor.${childId}`, output: t.next.output, actorId: childId }
        : { type: `xstate.error.actor.${childId}`, error: t.next.error, actorId: childId };
    if (t.next.status !== 'stopped')
      out.push({ to: t.parentId, kind: 'event', body: JSON.stringify(event) });
  }
  return out.map((m, idx) => ({ ...m, idx }));
}

interface SendParams {
  to?: unknown;
  event?: EventObject;
  delay?: unknown;
}

function sendMessage(
  t: Transition,
  params: SendParams,
  children: Children,
): Omit<OutgoingMessage, 'idx'> {
  const refuse = (target: string, kind: string, hint: string) =>
    new UnsupportedActorError({
      machineId: t.machineId,
      state: stateLabel(t.next.value),
      actorId: target,
      kind,
      hint,
    });
  const event = params.event ?? { type: 'unknown' };
  const targetName = (): string => {
    const id = (params.to as { id?: unknown } | undefined)?.id;
    return typeof id === 'string' ? id : typeof params.to === 'string' ? params.to : 'actor';
  };
  if (typeof params.delay === 'number') {
    throw refuse(
      targetName(),
      'delayed sendTo',
      'use an `after` delay in the receiving chart, or raise an event from a durable timer and send from there',
    );
  }
  if (params.to === PARENT_REF) {
    if (t.parentId === undefined) {
      throw refuse(
        '#_parent',
        'sendParent',
        'this actor has no parent: it was not spawned by a durable actor',
      );
    }
    return { to: t.parentId, kind: 'event', body: JSON.stringify(event) };
  }
  const entry = Object.entries(children).find(([, ref]) => ref === params.to);
  if (entry && isMachineChild(entry[1])) {
    return { to: childActorId(t.actorId, entry[0]), kind: 'event', body: JSON.stringify(event) };
  }
  throw refuse(
    targetName(),
    'sendTo',
    'a durable actor sends only to its child machines and its parent; other actors get events through the store',
  );
}

/** A child actor's completion event (`xstate.done.actor.<id>`): ignored where unhandled, as in XState. */
export function isCompletion(eventType: string): boolean {
  return eventType.startsWith('xstate.done.actor.');
}
