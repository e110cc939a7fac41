/**
 * An inspector that writes into this server's {@link InspectionHub} directly,
 * for actors that run in the same process (what `agentcharts inspect` shows of
 * a store's durable actors): XState's inspection events become the messages an
 * app would send over the inspection socket, and the machine itself is kept for
 * the diagram.
 */
import type { AnyActorRef, AnyStateMachine, InspectionEvent } from 'xstate';
import type { InspectorLike } from '../inspect/inspector.ts';
import type { InspectionHub, InspectionMessage } from './inspection.ts';

/** The plain JSON of a snapshot's value, status, context, output and error. */
function plainSnapshot(snapshot: unknown): Record<string, unknown> {
  const s = (snapshot ?? {}) as Record<string, unknown>;
  return JSON.parse(
    JSON.stringify({
      value: s['value'] ?? null,
      status: s['status'] ?? null,
      context: s['context'] ?? null,
      output: s['output'] ?? null,
      error: s['error'] ?? null,
    }),
  ) as Record<string, unknown>;
}

/** The inspector of connection 0 (this process) of a hub. */
export function localInspector(hub: InspectionHub): InspectorLike {
  const keep = (message: InspectionMessage, machine?: AnyStateMachine) => {
    const cost = hub.cost(message);
    if (cost === undefined) hub.refuse('too_deep');
    else hub.record(0, message, cost, machine);
  };
  return {
    inspect(event: InspectionEvent) {
      const ref = event.actorRef as AnyActorRef & { id?: string; logic?: unknown };
      const sessionId = ref.sessionId;
      if (event.type === '@xstate.actor') {
        const logic = ref.logic as AnyStateMachine | undefined;
        keep(
          {
            type: '@xstate.actor',
            sessionId,
            name: ref.id ?? sessionId,
            parentId: null,
            rootId: null,
            snapshot: plainSnapshot(ref.getSnapshot()),
          },
          logic && typeof logic === 'object' && 'root' in logic ? logic : undefined,
        );
      } else if (event.type === '@xstate.event') {
        keep({
          type: '@xstate.event',
          sessionId,
          event: JSON.parse(JSON.stringify(event.event)) as { type: string },
          sourceId: event.sourceRef?.sessionId ?? null,
        });
      } else if (event.type === '@xstate.snapshot') {
        keep({
          type: '@xstate.snapshot',
          sessionId,
          event: JSON.parse(JSON.stringify(event.event)) as { type: string },
          snapshot: plainSnapshot(event.snapshot),
        });
      }
    },
  };
}
