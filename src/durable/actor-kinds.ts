/**
 * Which of XState's actors a durable actor can persist. An invoked promise
 * (`fromPromise`) becomes a durable step whose outcome is delivered through the
 * send path; a child machine becomes a durable actor of its own. Anything else —
 * a callback, an observable, custom logic — would run outside the log and vanish
 * on a restart, so a chart using it is refused with a typed error naming where,
 * never run silently.
 */
import type { AnyActorLogic, AnyStateMachine, AnyStateNode } from 'xstate';
import { UnsupportedActorError } from '../core/errors.ts';

export type ActorKind = 'promise' | 'machine' | 'callback' | 'observable' | 'transition' | 'custom';

const kinds = new WeakMap<object, ActorKind>();

/** Classifies actor logic by what it is and how it behaves (XState's logic carries no tag). */
export function actorKind(logic: AnyActorLogic): ActorKind {
  const known = kinds.get(logic);
  if (known) return known;
  const kind = classify(logic);
  kinds.set(logic, kind);
  return kind;
}

function classify(logic: AnyActorLogic): ActorKind {
  const l = logic as AnyActorLogic & {
    root?: unknown;
    getStateNodeById?: unknown;
    config?: unknown;
  };
  if (l.root !== undefined && typeof l.getStateNodeById === 'function') return 'machine';
  if (typeof l.config === 'function') {
    // fromTransition's logic is the only one of a function that starts nothing.
    if (typeof (l as { start?: unknown }).start !== 'function') return 'transition';
    // fromPromise settles on its resolve event; fromCallback/fromObservable have no such event.
    try {
      const settled = l.transition(
        { status: 'active', output: undefined, error: undefined, input: undefined },
        { type: 'xstate.promise.resolve', data: 1 },
        { self: {} } as never,
      ) as { status?: string; output?: unknown } | undefined;
      if (settled?.status === 'done' && settled.output === 1) return 'promise';
    } catch {
      // Not promise logic.
    }
    try {
      const next = l.transition(
        { status: 'active', context: undefined },
        { type: 'xstate.observable.next', data: 1 },
        { self: {} } as never,
      ) as { context?: unknown } | undefined;
      if (next?.context === 1) return 'observable';
    } catch {
      // Not observable logic.
    }
    return 'callback';
  }
  if (typeof l.config === 'object' && l.config !== null) return 'observable';
  return 'custom';
}

/** The kinds this runtime persists. */
const DURABLE: ReadonlySet<ActorKind> = new Set<ActorKind>(['promise', 'machine']);

const HINTS: Record<Exclude<ActorKind, 'promise' | 'machine'>, string> = {
  callback:
    'use fromPromise for a call that settles (an LLM or API call: a durable step), or a child machine for a long-lived conversation',
  observable:
    'use fromPromise per request, or a child machine fed by sendTo, so every message goes through the log',
  transition: 'model it as a child machine (createMachine), which the runtime persists',
  custom: 'use fromPromise or a child machine',
};

/** The logic an invoke or spawn names: a key of `setup({ actors })`, an inline invoke, or logic. */
export function resolveActorLogic(
  machine: AnyStateMachine,
  src: string | AnyActorLogic,
): AnyActorLogic | undefined {
  if (typeof src !== 'string') return src;
  const match = /^xstate\.invoke\.(\d+)\.(.*)$/.exec(src);
  if (!match) return machine.implementations.actors[src] as AnyActorLogic | undefined;
  const node = machine.getStateNodeById(match[2] as string);
  const config = node.config.invoke as unknown;
  const entry = (Array.isArray(config) ? config[Number(match[1])] : config) as
    { src?: string | AnyActorLogic } | undefined;
  return entry?.src === undefined ? undefined : resolveActorLogic(machine, entry.src);
}

/** Throws UnsupportedActorError unless `logic` is an actor kind the runtime persists. */
export function checkActor(
  machine: AnyStateMachine,
  state: string,
  actorId: string,
  logic: AnyActorLogic | undefined,
): ActorKind {
  const kind = logic === undefined ? 'custom' : actorKind(logic);
  if (DURABLE.has(kind) || kind === 'promise' || kind === 'machine') return kind;
  throw new UnsupportedActorError({
    machineId: machine.id,
    state,
    actorId,
    kind,
    hint: HINTS[kind],
  });
}

interface SpawnAction {
  type?: string;
  id?: string;
  src?: string | AnyActorLogic;
}

function spawnsOf(actions: readonly unknown[] | undefined): SpawnAction[] {
  return (actions ?? []).filter(
    (a): a is SpawnAction =>
      (typeof a === 'function' || typeof a === 'object') &&
      a !== null &&
      (a as SpawnAction).type === 'xstate.spawnChild',
  );
}

const checked = new WeakSet<AnyStateMachine>();

/**
 * Checks every `invoke` and every `spawnChild` action of a machine, once per
 * machine. Spawns made inside `assign` cannot be seen here; the send path checks
 * the children a transition creates.
 */
export function checkDurableActors(machine: AnyStateMachine): void {
  if (checked.has(machine)) return;
  const walk = (node: AnyStateNode, path: string): void => {
    for (const invoke of node.invoke) {
      checkActor(machine, path, invoke.id, resolveActorLogic(machine, invoke.src));
    }
    const actions = [
      ...node.entry,
      ...node.exit,
      ...[...node.transitions.values()].flatMap((ts) => ts.flatMap((t) => t.actions)),
    ];
    for (const spawn of spawnsOf(actions)) {
      if (spawn.src === undefined) continue;
      const id = spawn.id ?? (typeof spawn.src === 'string' ? spawn.src : 'spawned');
      checkActor(machine, path, id, resolveActorLogic(machine, spawn.src));
    }
    for (const [key, child] of Object.entries(node.states)) {
      walk(child, path ? `${path}.${key}` : key);
    }
  };
  walk(machine.root, '');
  checkChildIds(machine);
  checkMachineIds(machine);
  checked.add(machine);
}

/**
 * Two different machines of one tree under one machine id (a child machine and a
 * `.provide()`d copy of it, or two machines both left as `id: 'worker'`): a
 * durable actor is loaded by its machine's id (after a restart, by a timer, by
 * a message), so one of them would run the other's logic. Refused, naming the id.
 */
function checkMachineIds(machine: AnyStateMachine): void {
  const byId = new Map<string, AnyStateMachine>([[machine.id, machine]]);
  for (const child of childMachines(machine)) {
    const other = byId.get(child.id);
    if (other === undefined) byId.set(child.id, child);
    else if (other !== child) {
      throw new UnsupportedActorError({
        machineId: machine.id,
        state: '(root)',
        actorId: child.id,
        kind: 'machine id shared',
        hint: `two different machines of this chart have the id "${child.id}", and a durable actor is loaded by its machine's id: give each machine an id of its own`,
      });
    }
  }
}

/**
 * Two invoked child machines with one id that can run at once (one state inside
 * the other, or in parallel regions): XState runs both, but a durable child is an
 * actor named by its parent and that id, so only one could exist. Refused, naming
 * both states, so the chart gives them distinct ids.
 */
function checkChildIds(machine: AnyStateMachine): void {
  const byId = new Map<string, AnyStateNode[]>();
  const walk = (node: AnyStateNode): void => {
    for (const invoke of node.invoke) {
      const logic = resolveActorLogic(machine, invoke.src);
      if (logic && actorKind(logic) === 'machine') {
        const list = byId.get(invoke.id) ?? [];
        list.push(node);
        byId.set(invoke.id, list);
      }
    }
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  for (const [id, nodes] of byId) {
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i] as AnyStateNode;
        const b = nodes[j] as AnyStateNode;
        if (!canBeActiveTogether(a, b)) continue;
        throw new UnsupportedActorError({
          machineId: machine.id,
          state: b.path.join('.'),
          actorId: id,
          kind: 'machine invoked twice at once',
          hint: `state "${a.path.join('.') || '(root)'}" invokes a child machine with the same id while this one can be active; give the two invokes distinct ids`,
        });
      }
    }
  }
}

/** Whether two state nodes can be active at the same time. */
function canBeActiveTogether(a: AnyStateNode, b: AnyStateNode): boolean {
  const ancestors = (n: AnyStateNode): AnyStateNode[] => {
    const out: AnyStateNode[] = [];
    for (let p: AnyStateNode | undefined = n; p; p = p.parent) out.push(p);
    return out;
  };
  const ofA = ancestors(a);
  const ofB = new Set(ancestors(b));
  if (ofB.has(a) || ofA.includes(b)) return true; // one inside the other
  const common = ofA.find((n) => ofB.has(n));
  return common?.type === 'parallel';
}

const childrenOf = new WeakMap<AnyStateMachine, readonly AnyStateMachine[]>();

/** The child machines a machine invokes or spawns (statically visible), recursively; cached. */
export function childMachines(machine: AnyStateMachine): readonly AnyStateMachine[] {
  let known = childrenOf.get(machine);
  if (!known) {
    known = findChildMachines(machine);
    childrenOf.set(machine, known);
  }
  return known;
}

function findChildMachines(machine: AnyStateMachine): AnyStateMachine[] {
  const found = new Set<AnyStateMachine>();
  const visit = (m: AnyStateMachine): void => {
    const sources: Array<string | AnyActorLogic> = [];
    const walk = (node: AnyStateNode): void => {
      for (const invoke of node.invoke) sources.push(invoke.src);
      const actions = [
        ...node.entry,
        ...node.exit,
        ...[...node.transitions.values()].flatMap((ts) => ts.flatMap((t) => t.actions)),
      ];
      for (const spawn of spawnsOf(actions)) if (spawn.src !== undefined) sources.push(spawn.src);
      for (const child of Object.values(node.states)) walk(child);
    };
    walk(m.root);
    for (const actor of Object.values(m.implementations.actors))
      sources.push(actor as AnyActorLogic);
    for (const src of sources) {
      const logic = resolveActorLogic(m, src);
      if (logic && actorKind(logic) === 'machine' && !found.has(logic as AnyStateMachine)) {
        found.add(logic as AnyStateMachine);
        visit(logic as AnyStateMachine);
      }
    }
  };
  visit(machine);
  return [...found];
}
