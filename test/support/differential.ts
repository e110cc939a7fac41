/**
 * The differential harness: one machine, one script, run on plain XState
 * (`createActor`, in memory, a stepped clock) and on durable actors (a store, the
 * same kind of clock, restarts that close the runtime and `recover()`), compared
 * after every step: state value, context, status and output of the actor and of
 * each child machine, the children it has, and the events each actor consumed
 * from effects (timers, messages, invoke results), in order.
 */
import { isDeepStrictEqual } from 'node:util';
import { createActor, type AnyActorRef, type AnyStateMachine, type InspectionEvent } from 'xstate';
import {
  createDurableActor,
  defineChart,
  getRuntime,
  InvalidEventError,
  InvalidTransitionError,
  openDurableActor,
  recover,
  type Clock,
  type Store,
} from '../../src/index.ts';
import type { Gate, ScriptStep } from './machine-gen.ts';

/** A manual clock whose `advance` fires one due callback at a time, settling in between. */
export class StepClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start: number) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Due times of the callbacks pending now. */
  dueTimes(): number[] {
    return [...this.pending.values()].map((p) => p.at);
  }

  async advance(ms: number, settle: () => Promise<void>): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) {
        if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      }
      if (!next) break;
      this.pending.delete(next[0]);
      this.current = Math.max(this.current, next[1].at);
      next[1].fn();
      await settle();
    }
    this.current = target;
  }
}

/** What one actor looks like, for comparison. */
interface ActorView {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  children: string[];
}

/** JSON's view of a value (context as it is stored: `undefined` properties absent). */
function json(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

function viewOf(snapshot: {
  value: unknown;
  context: unknown;
  status: string;
  output: unknown;
  children: Record<string, unknown>;
}): ActorView {
  return {
    value: snapshot.value,
    context: json(snapshot.context),
    status: snapshot.status,
    output: json(snapshot.output),
    children: Object.keys(snapshot.children).sort(),
  };
}

/** A divergence: where, and the two sides. */
export class Divergence extends Error {
  override name = 'Divergence';
  constructor(
    readonly step: number,
    readonly what: string,
    readonly plain: unknown,
    readonly durable: unknown,
  ) {
    super(
      `after step ${step}, ${what} differs:\n  plain   ${JSON.stringify(plain)}\n  durable ${JSON.stringify(durable)}`,
    );
  }
}

const START = 1_000_000;
const ROOT = 'root';

/** Settles plain XState: its promise actors resolve in microtasks. */
async function settlePlain(): Promise<void> {
  for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** How the durable side gets its store: opened again after each restart, or kept (memory). */
export interface StoreSource {
  open(): Store;
  /** The store survives the process (a file, a server): a restart closes and reopens it. */
  reopens: boolean;
}

/** Runs `script` on both sides and throws a Divergence at the first difference. */
export async function runBoth(
  /** Builds the machine (called once per side) and the gate its promises wait on. */
  make: () => { machine: AnyStateMachine; gate: Gate },
  script: readonly ScriptStep[],
  source: StoreSource,
): Promise<{ restarts: number }> {
  const { machine: plainMachine, gate: plainGate } = make();
  const { machine, gate } = make();
  const chart = defineChart(machine);
  // Plain: what each actor consumed from effects, in order.
  // Plain: the events from effects each actor consumed. Each is relayed to it (queued
  // in its mailbox) and consumed when XState reports the snapshot it led to; the
  // mailbox is first in, first out, so a report of the head of the queue consumes
  // it. (Events are matched by identity: one `sendParent` of many children may
  // relay the same object.)
  const queued = new Map<unknown, object[]>();
  const consumed = new Map<unknown, string[]>();
  const erroredWithSnapshot = new Set<unknown>();
  const plainClock = new StepClock(START);
  const root = createActor(plainMachine, {
    clock: plainClock,
    inspect: (event: InspectionEvent) => {
      if (event.type === '@xstate.snapshot') {
        const queue = queued.get(event.actorRef);
        if (queue !== undefined && queue[0] === event.event) {
          queue.shift();
          const list = consumed.get(event.actorRef) ?? [];
          list.push(event.event.type);
          consumed.set(event.actorRef, list);
        }
        if ((event.snapshot as { status?: string }).status === 'error') {
          erroredWithSnapshot.add(event.actorRef);
        }
        return;
      }
      if (event.type !== '@xstate.event' || event.sourceRef === undefined) return;
      const target = event.actorRef;
      const snapshot = target.getSnapshot() as { status?: string } | undefined;
      if (snapshot?.status !== 'active' || event.event.type === 'xstate.init') return;
      const queue = queued.get(target) ?? [];
      queue.push(event.event);
      queued.set(target, queue);
    },
  });
  /**
   * What a plain actor consumed; when its transition threw, the event it threw on
   * too (XState reports no snapshot for that one).
   */
  const consumedPlain = (ref: AnyActorRef): string[] => {
    const out = [...(consumed.get(ref) ?? [])];
    const status = (ref.getSnapshot() as { status?: string }).status;
    const threw = queued.get(ref)?.[0] as { type: string } | undefined;
    if (status === 'error' && !erroredWithSnapshot.has(ref) && threw) out.push(threw.type);
    return out;
  };
  root.subscribe({ error: () => {} });
  root.start();
  await settlePlain();

  const durableClock = new StepClock(START);
  let store = source.open();
  getRuntime(store, { clock: durableClock, charts: [chart] });
  await createDurableActor(machine, { id: ROOT, store, clock: durableClock, schemas: false });
  // Promises still waiting for their gate are not waited for; settled ones are.
  const settleDurable = async () => {
    await settlePlain();
    await getRuntime(store).drain({ invokes: 'settled' });
  };
  await settleDurable();

  let restarts = 0;
  const compare = async (step: number): Promise<void> => {
    const plainRoot = root.getSnapshot();
    const durableRoot = (await openDurableActor(store, ROOT)).getSnapshot();
    const a = viewOf(plainRoot);
    const b = viewOf(durableRoot);
    if (!isDeepStrictEqual(a, b)) throw new Divergence(step, 'the actor', a, b);
    for (const id of a.children) {
      const ref = plainRoot.children[id] as AnyActorRef & { logic: { config?: unknown } };
      if (id === 'work') continue; // a promise: compared by its results
      const plainKid = viewOf(ref.getSnapshot() as never);
      const stored = await store.loadActor(`${ROOT}/${id}`);
      // Spawned and stopped in one macrostep (a final state reached): XState never
      // starts it (its snapshot still reads active), and no durable actor is made.
      if (!stored && neverStarted(ref)) continue;
      if (!stored) throw new Divergence(step, `child ${id}`, plainKid, 'missing');
      const durableKid = viewOf((await openDurableActor(store, `${ROOT}/${id}`)).getSnapshot());
      if (!isDeepStrictEqual(plainKid, durableKid)) {
        throw new Divergence(step, `child ${id}`, plainKid, durableKid);
      }
      const plainEvents = consumedPlain(ref);
      const durableEvents = await consumedDurable(store, `${ROOT}/${id}`);
      if (!isDeepStrictEqual(plainEvents, durableEvents)) {
        throw new Divergence(step, `the effects child ${id} consumed`, plainEvents, durableEvents);
      }
    }
    const plainEvents = consumedPlain(root);
    const durableEvents = await consumedDurable(store, ROOT);
    if (!isDeepStrictEqual(plainEvents, durableEvents)) {
      throw new Divergence(step, 'the effects the actor consumed', plainEvents, durableEvents);
    }
  };
  await compare(0);

  for (const [i, step] of script.entries()) {
    if ('send' in step && !('kid' in step)) {
      const event = { type: step.send, k: step.k };
      const wasActive = root.getSnapshot().status === 'active';
      root.send(event);
      try {
        await (await openDurableActor(store, ROOT)).send(event);
      } catch (error) {
        // A caller's event whose transition throws: refused by the durable actor,
        // failing the plain one (by design, docs/durability.md). The two part there.
        if (wasActive && root.getSnapshot().status === 'error' && !refused(error)) break;
        if (!refused(error)) throw error;
      }
    } else if ('kid' in step) {
      const children = root.getSnapshot().children as Record<string, AnyActorRef | undefined>;
      const id = Object.keys(children)
        .filter((key) => key !== 'work')
        .sort()[step.kid];
      const ref = id === undefined ? undefined : children[id];
      const active =
        ref !== undefined &&
        !neverStarted(ref) &&
        (ref.getSnapshot() as { status?: string }).status === 'active';
      if (ref && active) {
        ref.send({ type: step.send });
        try {
          await (await openDurableActor(store, `${ROOT}/${id}`)).send({ type: step.send });
        } catch (error) {
          if (!refused(error)) throw error;
        }
      }
    } else if ('settle' in step) {
      root.send({ type: 'SETTLE' });
      const durable = await openDurableActor(store, ROOT);
      try {
        await durable.send({ type: 'SETTLE' });
      } catch (error) {
        if (!refused(error)) throw error;
      }
      const epoch = (root.getSnapshot().context as { epoch: number }).epoch;
      await plainGate.openTo(epoch, settlePlain);
      await gate.openTo(epoch, settleDurable);
    } else if ('wait' in step) {
      await plainClock.advance(step.wait, settlePlain);
      await durableClock.advance(step.wait, settleDurable);
    } else {
      // Timers of different actors due at the same instant fire in the order they
      // were armed; a restart re-arms them in another, so it is skipped then.
      const due = durableClock.dueTimes();
      if (new Set(due).size === due.length) {
        await getRuntime(store).close();
        if (source.reopens) {
          await store.close();
          store = source.open();
        }
        const report = await recover(store, { charts: [chart], clock: durableClock });
        if (process.env['DIFF_DEBUG'])
          console.log(
            JSON.stringify(report.steps),
            JSON.stringify(report.actors.map((a) => [a.actorId, a.action, a.reason])),
          );
        restarts++;
      }
    }
    await settlePlain();
    await settleDurable();
    await compare(i + 1);
  }
  await getRuntime(store).close();
  // A store that survives restarts is this run's to close; a kept one is the caller's.
  if (source.reopens) await store.close();
  root.stop();
  return { restarts };
}

/** The events an actor's log shows it consumed from effects since it (last) started, in order. */
async function consumedDurable(store: Store, actorId: string): Promise<string[]> {
  const out: string[] = [];
  for (const row of await store.history(actorId)) {
    const meta = JSON.parse(row.metadata) as { source?: string; relay?: unknown };
    // A child spawned again starts over, as a new actor does in XState.
    if (row.eventType === 'xstate.init') out.length = 0;
    if (meta.source !== 'timer' && meta.source !== 'message' && meta.source !== 'invoke') continue;
    if (meta.relay !== undefined) continue; // sent on, not consumed
    const event = JSON.parse(row.event) as { type: string };
    if (event.type === 'xstate.stop') continue;
    out.push(event.type);
  }
  return out;
}

/** An XState actor stopped before it ever ran (its processing status, XState's own). */
function neverStarted(ref: AnyActorRef): boolean {
  const STOPPED = 2;
  return (
    (ref as unknown as { _processingStatus: number })._processingStatus === STOPPED &&
    (ref.getSnapshot() as { status?: string }).status === 'active'
  );
}

/** A caller's event the durable actor refuses where plain XState ignores it. */
function refused(error: unknown): boolean {
  return (
    error instanceof InvalidTransitionError ||
    (error instanceof InvalidEventError && error.reason === 'unknown_type')
  );
}
