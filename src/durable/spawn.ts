/**
 * Delivering a spawn message: the child machine a parent's transition spawned
 * becomes a durable actor of its own, created in a commit that consumes the
 * message (so it is created exactly once) and linked to its parent.
 */
import type { AnyStateMachine } from 'xstate';
import { ConcurrencyError } from '../core/errors.ts';
import type { MessageRow } from '../store/types.ts';
import { actorKind, resolveActorLogic } from './actor-kinds.ts';
import { createActor } from './create.ts';
import type { SpawnBody } from './spawn-body.ts';
import { childRegistration } from './registry.ts';
import type { Rank } from './ledger.ts';
import type { DurableRuntime } from './runtime.ts';

export async function spawnChild(
  runtime: DurableRuntime,
  message: MessageRow,
  /** The child's first step's place in the arm order (Rank), when the courier nests it. */
  base?: Rank,
): Promise<void> {
  const body = JSON.parse(message.body) as SpawnBody;
  const parent = runtime.requireChart(body.parentMachine, message.from);
  const logic = resolveActorLogic(parent.machine, body.src);
  if (logic === undefined || actorKind(logic) !== 'machine') {
    if (await runtime.store.dropMessage(message.id)) {
      runtime.logger.error(
        { actorId: message.to, parent: message.from, src: body.src },
        'spawn refused: its logic is not a machine of the parent chart',
      );
    }
    return;
  }
  const machine = logic as AnyStateMachine;
  if (!runtime.chartFor(machine.id)) {
    runtime.registerChart(childRegistration(machine, parent.version));
  }
  const existing = await runtime.store.loadActor(message.to);
  if (existing) {
    if (existing.status !== 'active') {
      // The parent spawned this child id again after it finished: it starts over.
      const child = await runtime.actor(message.to);
      if (await child.restartFromSpawn(message, body, base)) return;
    }
    await refuseRunning(runtime, message);
    return;
  }
  const chart = runtime.chartFor(machine.id);
  try {
    await createActor(
      runtime,
      machine,
      { version: chart?.version ?? 1, migrations: chart?.migrations ?? {} },
      {
        id: message.to,
        store: runtime.store,
        input: body.input as never,
        metadata: {
          source: 'spawn',
          parent: message.from,
          fromSeq: message.fromSeq,
          idx: message.idx,
          childId: body.childId,
          ...(body.systemId === undefined ? {} : { systemId: body.systemId }),
          ...(body.sync === true ? { sync: true } : {}),
        },
      },
      { schemas: chart?.events },
      { parentId: message.from, consumeMessage: message.id, base },
    );
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error; // created by another worker
  }
}

/**
 * A spawn of a child that is running: dropped, and logged when it was still pending.
 * A row read in a page of pending messages (`deliverAll`) may be one whose delivery
 * created the child meanwhile: it is gone from the store, and nothing is refused.
 */
async function refuseRunning(runtime: DurableRuntime, message: MessageRow): Promise<void> {
  // What the log needs to tell a refusal the parent's chart asked for (it spawned a
  // child of a running id) from one of delivery order (its stop still pending).
  const [child, ahead] = await Promise.all([
    runtime.store.loadActor(message.to),
    runtime.store.pendingMessages({ to: message.to, limit: 8 }),
  ]);
  if (!(await runtime.store.dropMessage(message.id))) return;
  runtime.logger.error(
    {
      actorId: message.to,
      parent: message.from,
      fromSeq: message.fromSeq,
      child: { status: child?.status, version: child?.version, state: child?.state },
      pending: ahead
        .filter((m) => m.id < message.id)
        .map((m) => ({ kind: m.kind, from: m.from, fromSeq: m.fromSeq, idx: m.idx })),
    },
    'spawn refused: the child is still running',
  );
}
