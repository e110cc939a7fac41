/**
 * Chart metadata: what states and events mean, declared on the chart itself with
 * XState's own `meta` (and `tags`), checked by a schema, and read by everything
 * that needs meaning (observe, store read models, server permissions, dashboard,
 * CLI, agent tools). Nothing else keeps a table of state names.
 *
 * Where it lives on a chart:
 * - a state node's `meta`: `{ name?, class?, color? }` (the document's name for the
 *   state, its class, its badge colour); a state's `description` is XState's own;
 * - the root node's `meta`: `{ events?: { [type]: { kind?, roles?, description? } },
 *   delays?: { [delayName]: documentEventName } }`, where a key may be a descriptor
 *   (`'audit.*'`) declaring every type it matches that has no key of its own;
 * - an `after` transition's `meta`: `{ event? }` (the document's event name when a
 *   delay has guarded branches, e.g. RETRY vs MAX_RETRIES_EXCEEDED).
 *
 * A chart without metadata still works: every default is derived from its
 * structure (final states are `completed`, others `working`; events are commands
 * an agent may send; `xstate.*` events are internal).
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject } from 'xstate';
import {
  STATE_CLASSES,
  checkMeta,
  knownMachine,
  knownMachines,
  noteMachine,
  statePaths,
  type EventKind,
  type StateClass,
} from './meta-check.ts';
import { EXPECTED, isMachine, requireArg } from './options.ts';
import { allLabels, displayLabel } from './state-labels.ts';
import { isWildcard, matchesDescriptor, namedEventTypes } from './event-descriptors.ts';

export {
  EVENT_KINDS,
  STATE_CLASSES,
  type EventKind,
  type EventMeta,
  metaTypes,
  type NodeMeta,
  type RootMeta,
  type StateClass,
  type StateMeta,
  type TransitionMeta,
} from './meta-check.ts';

/** Roles used by the built-in charts; a chart may name others. */
export const ROLES = ['agent', 'approver', 'leader', 'operator'] as const;

export interface StateInfo {
  /** Dotted path from the root (`active.executing`): the label segment the store keeps. */
  path: string;
  /** The document's name (`executing`); defaults to the node's key. */
  name: string;
  class: StateClass;
  color: string;
  description: string | undefined;
  /** XState `type: 'final'`. */
  final: boolean;
  /** Leaf (atomic or final) node. */
  leaf: boolean;
  /** A parallel state: its regions are active at once. */
  parallel: boolean;
}

export interface EventInfo {
  type: string;
  kind: EventKind;
  /** Roles that may send it from outside (empty for timer-only and internal events). */
  roles: readonly string[];
  description: string | undefined;
  /** The payload field naming the sender, bound to the caller's identity. */
  signer: string | undefined;
}

/** Default badge colour of each class (the palette of “Agent State Machine” (v1.0), as hex). */
export const CLASS_COLORS: Readonly<Record<StateClass, string>> = {
  idle: '#6b7280',
  working: '#eab308',
  waiting: '#06b6d4',
  paused: '#9ca3af',
  retrying: '#ec4899',
  completed: '#22c55e',
  failed: '#ef4444',
  terminated: '#4b5563',
};

/** Finished: completed, failed or terminated. */
export function isFinishedClass(cls: StateClass): boolean {
  return cls === 'completed' || cls === 'failed' || cls === 'terminated';
}

/**
 * Working, waiting or retrying: the active agents of “Agent State Machine” (v1.0) and
 * `is_active()` of “Agent Status Models”.
 */
export function isActiveClass(cls: StateClass): boolean {
  return cls === 'working' || cls === 'waiting' || cls === 'retrying';
}

/**
 * Paused, waiting or retrying: the states “Agent State Machine Design” measures time to
 * recover from.
 */
export function isDisruptedClass(cls: StateClass): boolean {
  return cls === 'paused' || cls === 'waiting' || cls === 'retrying';
}

/** For a parallel label, the region whose class describes the whole actor. */
const CLASS_PRIORITY: readonly StateClass[] = [
  'failed',
  'paused',
  'waiting',
  'retrying',
  'working',
  'idle',
  'terminated',
  'completed',
];

/** The meaning of one chart, compiled once per machine. */
export interface ChartMeta {
  readonly machineId: string;
  /** Every state node but the root, in document order. */
  readonly states: readonly StateInfo[];
  /** Every event type the chart handles or declares, with its kind and roles. */
  readonly events: readonly EventInfo[];
  /** A state by its path (`active.executing`) or, when unambiguous, its document name. */
  state(pathOrName: string): StateInfo | undefined;
  /**
   * The document's name of a stored state label: `active.executing` → `executing`;
   * parallel labels keep one name per region, joined by `,`.
   */
  stateName(label: string): string;
  /** Every stored label whose state has this document name or path (for queries). */
  labelsFor(pathOrName: string): string[];
  /** The class of a label; an actor whose status is not `active` is finished whatever its state. */
  classify(label: string, status?: string): StateClass;
  /** Colour of a label's badge. */
  color(label: string): string;
  event(type: string): EventInfo;
  /**
   * The document's name of a timer event about to be delivered from `snapshot`
   * (`xstate.after.retryBackoff.task-lifecycle.retrying` → `RETRY` or
   * `MAX_RETRIES_EXCEEDED`, by the branch its guards take), with the delay name.
   * Undefined for an event that is not an `after` timer.
   */
  timerEvent(
    snapshot: AnyMachineSnapshot,
    event: EventObject,
  ): { name: string; delay: string } | undefined;
  /**
   * Whether an invoked promise interrupted mid-run may run again without asking
   * (root meta `invokes: { [id]: { rerun: 'safe' } }`); by default it is reconciled.
   */
  invokeRerunSafe(invokeId: string): boolean;
  /** The context fields that name the actor and its task, if the chart says. */
  readonly display: { readonly name?: string | undefined; readonly task?: string | undefined };
}

const cache = new WeakMap<AnyStateMachine, ChartMeta>();

/**
 * The meaning of a machine id's chart, if this process has defined, registered
 * or loaded it (the latest machine of that id; see {@link chartMeta}).
 */
export function knownChartMeta(machineId: string): ChartMeta | undefined {
  const machine = knownMachine(machineId);
  return machine ? chartMeta(machine) : undefined;
}

/** Every chart this process knows, one per machine id. */
export function knownChartMetas(): ChartMeta[] {
  return knownMachines().map(chartMeta);
}

/**
 * The compiled metadata of a machine (cached per machine). Throws
 * {@link ChartMetadataError} naming the state or event whose metadata is ill-formed.
 *
 * @example
 * const meta = chartMeta(agentLifecycle.machine);
 * meta.stateName('active.executing'); // 'executing'
 * meta.event('APPROVE').kind;         // 'approval'
 */
export function chartMeta(machine: AnyStateMachine): ChartMeta {
  requireArg('chartMeta', 'machine', isMachine(machine), EXPECTED.machine);
  let meta = cache.get(machine);
  if (!meta) {
    meta = compile(machine);
    cache.set(machine, meta);
  }
  // The latest machine of its id is the one its actors are read by.
  if (knownMachine(machine.id) !== machine) noteMachine(machine);
  return meta;
}

function compile(machine: AnyStateMachine): ChartMeta {
  const machineId = machine.id;
  const root = checkMeta('root', machine.root.meta, machineId, 'the root');
  const states: StateInfo[] = [];
  const byPath = new Map<string, StateInfo>();
  /** States whose class was said (on them, or on a state around them). */
  const classSaid = new Set<StateInfo>();
  const byName = new Map<string, StateInfo[]>();

  for (const [path, child] of statePaths(machine)) {
    const own = checkMeta('state', child.meta, machineId, `state "${path}"`);
    const final = child.type === 'final';
    const leaf = Object.keys(child.states).length === 0;
    const tagged = STATE_CLASSES.find((c) => child.tags.includes(c));
    // A class said on a compound or parallel state holds for every state inside it
    // that says none (`reviewing` is `paused` whichever review is still pending).
    const parent = path.includes('.')
      ? byPath.get(path.slice(0, path.lastIndexOf('.')))
      : undefined;
    const said = own.class ?? tagged;
    const inherited = said === undefined && parent && classSaid.has(parent) ? parent : undefined;
    // Only a top-level final state finishes the actor; a nested one ends its region.
    const finishes = final && child.parent === machine.root;
    const cls: StateClass = said ?? inherited?.class ?? (finishes ? 'completed' : 'working');
    const info: StateInfo = {
      path,
      name: own.name ?? child.key,
      class: cls,
      color: own.color ?? inherited?.color ?? CLASS_COLORS[cls],
      description: child.description,
      final,
      leaf,
      parallel: child.type === 'parallel',
    };
    if (said !== undefined || inherited !== undefined) classSaid.add(info);
    states.push(info);
    byPath.set(path, info);
    const list = byName.get(info.name) ?? [];
    list.push(info);
    byName.set(info.name, list);
    // Transition metas are checked here too, so a bad one fails at definition time.
    for (const defs of child.transitions.values()) {
      for (const t of defs) {
        if (t.meta !== undefined) {
          checkMeta('transition', t.meta, machineId, `a transition of "${path}"`);
        }
      }
    }
  }

  const declared = root.events ?? {};
  // A declared descriptor (`'audit.*'`, `'*'`) speaks for the types it matches that
  // have no declaration of their own, the most specific (longest) first; it is no
  // type itself. Never for `xstate.*` types: they stay internal.
  const families = Object.keys(declared)
    .filter(isWildcard)
    .sort((a, b) => b.length - a.length);
  const eventTypes = new Set<string>([
    ...namedEventTypes(machine).filter((t) => !t.startsWith('xstate.')),
    ...Object.keys(declared).filter((t) => !isWildcard(t)),
  ]);
  const declarationOf = (type: string) => {
    if (Object.hasOwn(declared, type)) return declared[type];
    if (families.length === 0 || type.startsWith('xstate.')) return undefined;
    const family = families.find((f) => matchesDescriptor(type, f));
    return family === undefined ? undefined : declared[family];
  };
  const eventInfo = (type: string): EventInfo => {
    const own = declarationOf(type);
    const kind: EventKind = own?.kind ?? (type.startsWith('xstate.') ? 'internal' : 'command');
    const defaultRoles = kind === 'command' ? ['agent'] : kind === 'approval' ? ['approver'] : [];
    const roles = kind === 'timer-only' || kind === 'internal' ? [] : (own?.roles ?? defaultRoles);
    return { type, kind, roles, description: own?.description, signer: own?.signer };
  };
  const events = [...eventTypes].sort().map(eventInfo);
  const eventByType = new Map(events.map((e) => [e.type, e]));

  const regionInfo = (region: string): StateInfo | undefined => byPath.get(region.trim());
  let labels: string[] | undefined;
  const regions = (label: string): string[] => label.split(',');

  const meta: ChartMeta = {
    machineId,
    states,
    events,
    state(pathOrName) {
      const exact = byPath.get(pathOrName);
      if (exact) return exact;
      const named = byName.get(pathOrName);
      return named?.length === 1 ? named[0] : named?.find((s) => s.leaf);
    },
    stateName(label) {
      return displayLabel(label, (path) => byPath.get(path));
    },
    labelsFor(pathOrName) {
      const found = byPath.has(pathOrName)
        ? [byPath.get(pathOrName) as StateInfo]
        : (byName.get(pathOrName) ?? []);
      // A compound state stands for every label with a leaf below it; a parallel
      // state's labels are its regions' combinations.
      labels ??= allLabels(machine);
      const within = (leaf: string) =>
        found.some((s) => leaf === s.path || leaf.startsWith(`${s.path}.`));
      return labels.filter((label) => label.split(',').some(within));
    },
    classify(label, status = 'active') {
      const classes = regions(label).map((r) => regionInfo(r)?.class ?? 'working');
      const cls = CLASS_PRIORITY.find((c) => classes.includes(c)) ?? 'working';
      if (status === 'active' || isFinishedClass(cls)) return cls;
      if (status === 'error') return 'failed';
      if (status === 'stopped') return 'terminated';
      return 'completed';
    },
    color(label) {
      const cls = meta.classify(label);
      const region = regions(label).find((r) => regionInfo(r)?.class === cls);
      return (region !== undefined ? regionInfo(region)?.color : undefined) ?? CLASS_COLORS[cls];
    },
    event(type) {
      return eventByType.get(type) ?? eventInfo(type);
    },
    timerEvent(snapshot, event) {
      const match = /^xstate\.after\.([^.]+)\./.exec(event.type);
      if (!match) return undefined;
      const delay = match[1] as string;
      let name: string | undefined;
      try {
        const taken = machine.getTransitionData(snapshot as never, event)[0];
        const own = taken?.meta as { event?: unknown } | undefined;
        if (typeof own?.event === 'string') name = own.event;
      } catch {
        // A guard that throws decides nothing here; the delay's name is used.
      }
      return { name: name ?? root.delays?.[delay] ?? event.type, delay };
    },
    display: root.display ?? {},
    invokeRerunSafe(invokeId) {
      return root.invokes?.[invokeId]?.rerun === 'safe';
    },
  };
  return meta;
}
