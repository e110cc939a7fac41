/**
 * XState's inspection protocol for durable actors. Durable actors do not run
 * XState's actor loop (the runtime calls the pure `transition()`), so nothing
 * would reach an inspector by itself. This replays what XState's own actor tells
 * an inspector — `@xstate.actor` when an actor appears (with its machine, from
 * which `@statelyai/inspect` sends the definition), then per transition
 * `@xstate.event` and `@xstate.snapshot` — from committed transitions only, so an
 * inspector never shows a state that was not persisted. It depends on XState's
 * types only; the Stately hookup lives in the inspect layer.
 */
import type {
  AnyMachineSnapshot,
  AnyStateMachine,
  EventObject,
  InspectionEvent,
  Observer,
} from 'xstate';
import type { TransitionNotice } from './notices.ts';

/**
 * Anything with XState's `inspect` observer: `createWebSocketInspector()`,
 * `createBrowserInspector()`, `createSkyInspector()` from `@statelyai/inspect`, or
 * a plain `{ inspect: { next(event) {} } }`.
 */
export interface InspectorLike {
  inspect: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

/** The inspector's session id of a durable actor: stable across processes and restarts. */
export function inspectionSessionId(actorId: string): string {
  return `durable:${actorId}`;
}

/**
 * The part of an ActorRef the inspector reads: ids, the machine (for the
 * definition) and `getSnapshot()`. A new ref per registration pins the snapshot
 * it reports, since inspectors read it later (on an idle callback).
 */
function actorRefFor(actorId: string, machine: AnyStateMachine, snapshot: AnyMachineSnapshot) {
  return {
    id: actorId,
    sessionId: inspectionSessionId(actorId),
    logic: machine,
    src: machine,
    _parent: undefined,
    getSnapshot: () => snapshot,
  };
}

/** Sends XState-shaped inspection events for durable transitions to one inspector. */
export class DurableInspection {
  private readonly next: (event: InspectionEvent) => void;
  private readonly registered = new Set<string>();

  constructor(inspector: InspectorLike) {
    const inspect = inspector.inspect;
    this.next =
      typeof inspect === 'function'
        ? inspect
        : (event) => {
            inspect.next?.(event);
          };
  }

  private send(event: Record<string, unknown>): void {
    this.next(event as unknown as InspectionEvent);
  }

  /** Whether the actor was announced to the inspector already. */
  has(actorId: string): boolean {
    return this.registered.has(actorId);
  }

  /**
   * Announces an actor as it stands now (`@xstate.actor`). When `initEvent` is
   * given (the actor was just created), the creation follows as XState's start
   * does: `@xstate.event` with `xstate.init`, then `@xstate.snapshot`.
   */
  register(
    actorId: string,
    machine: AnyStateMachine,
    snapshot: AnyMachineSnapshot,
    initEvent?: EventObject,
  ): void {
    this.registered.add(actorId);
    const sessionId = inspectionSessionId(actorId);
    const ref = actorRefFor(actorId, machine, snapshot);
    this.send({ type: '@xstate.actor', actorRef: ref, rootId: sessionId });
    if (initEvent) {
      this.send({
        type: '@xstate.event',
        actorRef: ref,
        sourceRef: undefined,
        event: initEvent,
        rootId: sessionId,
      });
      this.send({
        type: '@xstate.snapshot',
        actorRef: ref,
        event: initEvent,
        snapshot,
        rootId: sessionId,
      });
    }
  }

  /**
   * Reports one committed transition: `@xstate.event` (a timer's event comes from
   * the actor itself, as XState's delayed events do) and `@xstate.snapshot`.
   * An actor seen for the first time is announced first.
   */
  transition(notice: TransitionNotice, machine: AnyStateMachine): void {
    const sessionId = inspectionSessionId(notice.actorId);
    if (!this.registered.has(notice.actorId)) {
      if (notice.from === null || notice.previous === undefined) {
        this.register(notice.actorId, machine, notice.snapshot, notice.event);
        return;
      }
      this.register(notice.actorId, machine, notice.previous);
    }
    const ref = actorRefFor(notice.actorId, machine, notice.snapshot);
    this.send({
      type: '@xstate.event',
      actorRef: ref,
      sourceRef: notice.source === 'timer' ? ref : undefined,
      event: notice.event,
      rootId: sessionId,
    });
    this.send({
      type: '@xstate.snapshot',
      actorRef: ref,
      event: notice.event,
      snapshot: notice.snapshot,
      rootId: sessionId,
    });
  }
}
