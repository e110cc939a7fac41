/**
 * Chart metadata, checked where a chart is defined: the vocabulary (state
 * classes, event kinds), the shapes of `meta` on the root, on states and on
 * `after` transitions, and one {@link ChartMetadataError} naming the first thing
 * wrong. What the metadata means is compiled elsewhere (meta.ts), on first use.
 *
 * The checks are a few lines of hand-written rules rather than zod schemas: this
 * module is in every browser bundle of a chart (`agentcharts/chart`), where zod's
 * record and custom schemas, with the JSON Schema processors each classic schema
 * carries, would cost more than all of the chart code of agentcharts.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { ChartMetadataError } from './errors.ts';

/**
 * What a state means to a monitor:
 * - `idle`: created or reset, no work yet;
 * - `working`: doing the work (running, thinking, executing, planning…);
 * - `waiting`: blocked on a dependency, an input, another agent;
 * - `paused`: waiting for a person (an approval), or paused by one;
 * - `retrying`: backing off after a transient error;
 * - `completed`, `failed`, `terminated`: finished, whether or not the state is XState-final.
 */
export const STATE_CLASSES = [
  'idle',
  'working',
  'waiting',
  'paused',
  'retrying',
  'completed',
  'failed',
  'terminated',
] as const;
export type StateClass = (typeof STATE_CLASSES)[number];

/**
 * Who may cause an event:
 * - `command`: sent by a caller holding one of the event's roles (default role `agent`);
 * - `approval`: a person's decision; only `approver`-like roles, never an agent key;
 * - `timer-only`: raised by the chart's own timers (or recovery); refused from outside;
 * - `internal`: XState's own (`xstate.*`) or raised inside the chart; refused from outside.
 */
export const EVENT_KINDS = ['command', 'approval', 'timer-only', 'internal'] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** A state node's `meta` (other keys are the user's own and pass through). */
export interface StateMeta {
  /** The document's name for the state. */
  name?: string;
  class?: StateClass;
  /** Badge colour, `#rrggbb`. */
  color?: string;
  [key: string]: unknown;
}

/** One event's entry in the root `meta.events`. */
export interface EventMeta {
  kind?: EventKind;
  roles?: readonly string[];
  description?: string;
  /**
   * The payload field that names who sends the event (`approver`, `voterId`): from
   * outside it must be the caller's own identity (the signing key's id), never
   * someone else's.
   */
  signer?: string;
}

/** The root node's `meta`. */
export interface RootMeta {
  events?: Record<string, EventMeta>;
  /** Delay name → the document's event name of its timer. */
  delays?: Record<string, string>;
  /**
   * Which context fields name the actor and its current task on a dashboard card
   * (the card of “Agent State Machine” (v1.0): agent name, state badge, task).
   */
  display?: { name?: string; task?: string };
  /** Per invoke id: whether a run interrupted by a crash may simply run again. */
  invokes?: Record<string, { rerun: 'safe' | 'reconcile' }>;
  [key: string]: unknown;
}

/** The `meta` of any state node, the root's included (see {@link metaTypes}). */
export type NodeMeta = RootMeta & StateMeta;

/** An `after` transition's `meta`. */
export interface TransitionMeta {
  /** The document's event name of this branch (RETRY vs MAX_RETRIES_EXCEEDED). */
  event?: string;
  [key: string]: unknown;
}

/**
 * Chart metadata's types for XState's `setup`:
 * `setup({ types: { context: {} as C, events: {} as E, ...metaTypes } })` makes a
 * typo in a state's class, an event's kind or an invoke's `rerun` a type error,
 * not only an error when the chart is defined.
 */
export const metaTypes: { meta: NodeMeta; transitionMeta: TransitionMeta } = {
  meta: {},
  transitionMeta: {},
};

/** What is wrong with a value, and where inside it. */
interface Problem {
  path: string[];
  detail: string;
}
type Rule = (value: unknown) => Problem | undefined;

const fail = (detail: string): Problem => ({ path: [], detail });
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const text =
  (max: number): Rule =>
  (v) =>
    typeof v === 'string' && v.length >= 1 && v.length <= max
      ? undefined
      : fail(`expected a string of 1 to ${max} characters`);
const oneOf =
  (values: readonly string[]): Rule =>
  (v) =>
    values.includes(v as string) ? undefined : fail(`expected one of ${values.join(', ')}`);
const color: Rule = (v) =>
  typeof v === 'string' && /^#[0-9a-fA-F]{6}$/.test(v) ? undefined : fail('expected #rrggbb');

/** Each entry of an object (`record`) or array (`list`) checked by `rule`. */
const entries =
  (rule: Rule, kind: 'record' | 'list', max = Infinity): Rule =>
  (v) => {
    const ok = kind === 'list' ? Array.isArray(v) : isObject(v);
    const items = ok ? Object.entries(v as object) : [];
    if (!ok || items.length > max) {
      return fail(kind === 'list' ? `expected a list of at most ${max}` : 'expected an object');
    }
    for (const [key, item] of items) {
      const problem = key === '' ? fail('empty key') : rule(item);
      if (problem) return { path: [key, ...problem.path], detail: problem.detail };
    }
    return undefined;
  };

/** An object whose known fields follow `shape`; other fields are refused when `strict`. */
const fields =
  (shape: Record<string, Rule>, strict: boolean): Rule =>
  (v) => {
    if (!isObject(v)) return fail('expected an object');
    for (const [key, value] of Object.entries(v)) {
      const rule = Object.hasOwn(shape, key) ? shape[key] : undefined;
      const problem = rule
        ? value === undefined
          ? undefined
          : rule(value)
        : strict
          ? fail('unknown field')
          : undefined;
      if (problem) return { path: [key, ...problem.path], detail: problem.detail };
    }
    return undefined;
  };

const eventMeta = fields(
  {
    kind: oneOf(EVENT_KINDS),
    roles: entries(text(64), 'list', 32),
    description: (v) =>
      typeof v === 'string' && v.length <= 2000 ? undefined : fail('expected a string'),
    signer: text(100),
  },
  true,
);
const rules = {
  state: fields({ name: text(100), class: oneOf(STATE_CLASSES), color }, false),
  root: fields(
    {
      events: entries(eventMeta, 'record'),
      delays: entries(text(200), 'record'),
      display: fields({ name: text(200), task: text(200) }, true),
      invokes: entries(fields({ rerun: oneOf(['safe', 'reconcile']) }, true), 'record'),
    },
    false,
  ),
  transition: fields({ event: text(200) }, false),
};

/**
 * `meta` checked as the metadata of `what` (a state's, the root's, an `after`
 * transition's): the value itself (`{}` when there is none), or a
 * {@link ChartMetadataError} naming the machine, where and the field.
 */
export function checkMeta(
  what: 'state',
  meta: unknown,
  machineId: string,
  where: string,
): StateMeta;
export function checkMeta(what: 'root', meta: unknown, machineId: string, where: string): RootMeta;
export function checkMeta(
  what: 'transition',
  meta: unknown,
  machineId: string,
  where: string,
): TransitionMeta;
export function checkMeta(
  what: keyof typeof rules,
  meta: unknown,
  machineId: string,
  where: string,
): StateMeta | RootMeta | TransitionMeta {
  const value = meta ?? {};
  const problem = rules[what](value);
  if (!problem) return value as StateMeta;
  throw new ChartMetadataError({
    machineId,
    where,
    field: problem.path.join('.') || undefined,
    detail: problem.detail,
  });
}

/** Every state node but the root, with its dotted path, in document order. */
export function statePaths(machine: AnyStateMachine): Array<[string, AnyStateNode]> {
  const out: Array<[string, AnyStateNode]> = [];
  const walk = (node: AnyStateNode, prefix: string): void => {
    for (const [key, child] of Object.entries(node.states)) {
      const path = prefix ? `${prefix}.${key}` : key;
      out.push([path, child]);
      walk(child, path);
    }
  };
  walk(machine.root, '');
  return out;
}

/** The latest machine of each id this process defined or compiled a chart of. */
const machines = new Map<string, AnyStateMachine>();

/** Remembers `machine` as the latest of its id (what {@link knownMachine} answers). */
export function noteMachine(machine: AnyStateMachine): void {
  machines.set(machine.id, machine);
}

/** The latest machine of `machineId` this process has defined or compiled a chart of. */
export function knownMachine(machineId: string): AnyStateMachine | undefined {
  return machines.get(machineId);
}

/** Every machine id's latest machine. */
export function knownMachines(): AnyStateMachine[] {
  return [...machines.values()];
}

/**
 * Checks every piece of a machine's metadata (root, states, `after` transitions)
 * and remembers the machine; throws {@link ChartMetadataError} on the first one
 * ill-formed.
 */
export function checkChartMetadata(machine: AnyStateMachine): void {
  const id = machine.id;
  checkMeta('root', machine.root.meta, id, 'the root');
  for (const [path, node] of statePaths(machine)) {
    checkMeta('state', node.meta, id, `state "${path}"`);
    for (const list of node.transitions.values()) {
      for (const t of list) {
        if (t.meta !== undefined) checkMeta('transition', t.meta, id, `a transition of "${path}"`);
      }
    }
  }
  noteMachine(machine);
}
