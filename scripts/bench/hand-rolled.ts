/**
 * The durable program a user of XState writes by hand, as the benchmarks' third
 * baseline: a started actor, and after its creation and each send the actor's
 * `getPersistedSnapshot()` as JSON, written with the raw minimal write's rows (a
 * compare-and-set of the actor row and one log row; ./minimal.ts). It checks no
 * event, keeps no ledger, chain or timers and recovers nothing: what it costs is
 * XState's step, one `JSON.stringify` and the write.
 */
import { createActor, type EventObject } from 'xstate';
import type { MinimalTransition } from './minimal.ts';
import { chart } from './workload.ts';

/** A started XState actor of the task chart, as a caller without durability has it. */
export function plainTask(id: string) {
  return createActor(chart.machine, {
    input: { taskId: id, backoff: { baseMs: 3_600_000, capMs: 3_600_000 } },
  }).start();
}

const INIT_EVENT = JSON.stringify({ type: 'xstate.init' });

/** One task of the hand-written program: each call gives the rows to write. */
export class HandRolledTask {
  private readonly actor: ReturnType<typeof plainTask>;
  private version = 0;
  private state: string | null = null;

  constructor(private readonly id: string) {
    this.actor = plainTask(id);
  }

  /** The rows of the task's creation. */
  created(): MinimalTransition {
    return this.rows(INIT_EVENT);
  }

  /** Sends `event`; the rows of the transition it made. */
  send(event: EventObject): MinimalTransition {
    this.actor.send(event as never);
    return this.rows(JSON.stringify(event));
  }

  stop(): void {
    this.actor.stop();
  }

  private rows(event: string): MinimalTransition {
    const value: unknown = this.actor.getSnapshot().value;
    const state = typeof value === 'string' ? value : JSON.stringify(value);
    const row: MinimalTransition = {
      id: this.id,
      expectedVersion: this.version,
      fromState: this.state,
      state,
      snapshot: JSON.stringify(this.actor.getPersistedSnapshot()),
      event,
      at: Date.now(),
    };
    this.version += 1;
    this.state = state;
    return row;
  }
}
