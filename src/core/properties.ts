/**
 * What a chart promises, stated on the chart: a small, typed vocabulary of
 * properties that `agentcharts check` (and `checkChart`) proves or refutes for
 * every path of the chart's state space, not for a sample of them.
 *
 * - {@link reachable}`(state)`: some path reaches the state;
 * - {@link noDeadEnd}`()`: every reachable state that is not finished can be left,
 *   by some event or timer;
 * - {@link terminates}`()`: from every reachable state a finished state can be reached;
 * - {@link only}`(from, to, { via })`: a transition out of `from` into `to` is taken
 *   only by one of the `via` events;
 * - {@link before}`(first, then)`: no path takes `then` before it took `first`;
 * - {@link bounded}`(event, n)`: no path takes `event` more than `n` times
 *   (`n` a number, or a numeric field of the initial context);
 * - {@link waitsHaveTimeout}`(states)`: in each of these states a timer alone
 *   eventually leaves it.
 *
 * States are dotted paths (`active.executing`) or, when unique, a state's key or
 * document name (`executing`); `'*'` stands for any state where `only` allows it.
 * Events are event types, `after:<delay>` for a timer, the document name a timer
 * raises (the chart's `meta.delays`), or a pattern `{ type, …fields }` matched
 * against the event's payload. Names the chart does not have are a
 * {@link PropertyDefinitionError} where the chart is defined.
 */
import type { AnyStateMachine, ContextFrom, EventFromLogic, StateValueFrom } from 'xstate';
import { errorClass } from './errors.ts';
import { chartMeta } from './meta.ts';
import { EXPECTED, isOptionsBag, requireArg } from './options.ts';

// ---- Types ---------------------------------------------------------------------------

/** An event named by its type (or timer name), or a pattern `{ type, …fields }` of its payload. */
export type EventPatternLike =
  string | { readonly type: string; readonly [field: string]: unknown };

/** Shared by every property: what it promises, in words (cite the source document). */
export interface PropertyCommon {
  readonly description?: string | undefined;
}

export interface ReachableProperty<S extends string = string> extends PropertyCommon {
  readonly kind: 'reachable';
  readonly state: S;
}

export interface NoDeadEndProperty<S extends string = string> extends PropertyCommon {
  readonly kind: 'noDeadEnd';
  /** States allowed to stop the machine without being finished. */
  readonly except?: readonly S[] | undefined;
}

export interface TerminatesProperty extends PropertyCommon {
  readonly kind: 'terminates';
}

export interface OnlyProperty<
  S extends string = string,
  P = EventPatternLike,
> extends PropertyCommon {
  readonly kind: 'only';
  /** The states left (`'*'`: any state). */
  readonly from: '*' | S | readonly S[];
  /** The state entered (`'*'`: any change of state). */
  readonly to: '*' | S;
  readonly via: readonly P[];
}

export interface BeforeProperty<P = EventPatternLike> extends PropertyCommon {
  readonly kind: 'before';
  readonly first: P;
  readonly then: P;
  /** Events after which `first` must happen again (RESET starts a new run). */
  readonly resetBy?: readonly P[] | undefined;
}

export interface BoundedProperty<
  P = EventPatternLike,
  K extends string = string,
> extends PropertyCommon {
  readonly kind: 'bounded';
  readonly event: P;
  /** The most times `event` may happen: a number, or a numeric field of the initial context. */
  readonly max: number | { readonly context: K };
  /** Events after which the count starts again from zero. */
  readonly resetBy?: readonly P[] | undefined;
}

export interface WaitsHaveTimeoutProperty<S extends string = string> extends PropertyCommon {
  readonly kind: 'waitsHaveTimeout';
  readonly states: readonly S[];
}

/** One promise of a chart; `S` its state names, `P` its event patterns, `K` its numeric context fields. */
export type ChartProperty<
  S extends string = string,
  P = EventPatternLike,
  K extends string = string,
> =
  | ReachableProperty<S>
  | NoDeadEndProperty<S>
  | TerminatesProperty
  | OnlyProperty<S, P>
  | BeforeProperty<P>
  | BoundedProperty<P, K>
  | WaitsHaveTimeoutProperty<S>;

export type PropertyKind = ChartProperty['kind'];

export const PROPERTY_KINDS: readonly PropertyKind[] = [
  'reachable',
  'noDeadEnd',
  'terminates',
  'only',
  'before',
  'bounded',
  'waitsHaveTimeout',
];

/** Dotted paths of a state value type (`'active' | 'active.executing' | …`). */
type PathsOf<V> = V extends string
  ? V
  : string extends keyof V
    ? string
    : V extends object
      ? { [K in keyof V & string]: K | `${K}.${PathsOf<V[K]>}` }[keyof V & string]
      : never;
type LastSegment<P extends string> = P extends `${string}.${infer R}` ? LastSegment<R> : P;
type ReadonlyDeep<T> = T extends readonly (infer U)[]
  ? readonly ReadonlyDeep<U>[]
  : T extends object
    ? { readonly [K in keyof T]: ReadonlyDeep<T[K]> }
    : T;

/** A state of a machine, as a property names it: a dotted path or a state's key. */
export type StateRef<TLogic extends AnyStateMachine> =
  PathsOf<StateValueFrom<TLogic>> | LastSegment<PathsOf<StateValueFrom<TLogic>>>;

/** An event of a machine, as a property names it: its type, a timer, or a payload pattern. */
export type EventRef<TLogic extends AnyStateMachine> =
  | EventFromLogic<TLogic>['type']
  | `after:${string}`
  // An invoked actor's outcome, as the chart's samples name it (checked against
  // the machine's invokes where the chart is defined).
  | `xstate.done.actor.${string}`
  | `xstate.error.actor.${string}`
  | {
      [T in EventFromLogic<TLogic>['type']]: { readonly type: T } & {
        readonly [
          F in Exclude<keyof Extract<EventFromLogic<TLogic>, { type: T }>, 'type'>
        ]?: ReadonlyDeep<Extract<EventFromLogic<TLogic>, { type: T }>[F]>;
      };
    }[EventFromLogic<TLogic>['type']];

/** The numeric context fields of a machine (for {@link bounded}'s `max`). */
export type NumericContextKey<TLogic extends AnyStateMachine> = {
  [K in keyof ContextFrom<TLogic> & string]: ContextFrom<TLogic>[K] extends number ? K : never;
}[keyof ContextFrom<TLogic> & string];

/** The properties a chart of `TLogic` may declare, its state and event names checked. */
export type PropertyOf<TLogic extends AnyStateMachine> = ChartProperty<
  StateRef<TLogic>,
  EventRef<TLogic>,
  NumericContextKey<TLogic>
>;

// ---- Constructors --------------------------------------------------------------------

/** What every property takes last. */
export interface PropertyOptions {
  /** What it promises and where the promise comes from (cite the source document's title). */
  description?: string | undefined;
}

/** Checks the options every constructor takes; returns the shared fields. */
function common(fn: string, options: PropertyOptions | undefined): PropertyCommon {
  requireArg(fn, 'options', isOptionsBag(options), EXPECTED.options);
  const description = options?.description;
  requireArg(
    fn,
    'options.description',
    description === undefined || typeof description === 'string',
    EXPECTED.string,
  );
  return description === undefined ? {} : { description };
}

const STATE = 'a state name (a dotted path or a state key)';
const PATTERN = "an event type, or a pattern { type: 'EVENT', …fields }";

function isState(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

function isPattern(v: unknown): v is EventPatternLike {
  return (
    (typeof v === 'string' && v.length > 0) ||
    (typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string')
  );
}

function requirePatterns(fn: string, field: string, v: unknown, nonEmpty: boolean): void {
  requireArg(
    fn,
    field,
    Array.isArray(v) && (!nonEmpty || v.length > 0) && v.every(isPattern),
    `a${nonEmpty ? ' non-empty' : 'n'} array of events (${PATTERN})`,
  );
}

/**
 * Some path reaches `state`.
 *
 * @example
 * reachable('done', { description: 'A task can finish.' })
 */
export function reachable<const S extends string>(
  state: S,
  options?: PropertyOptions,
): ReachableProperty<S> {
  requireArg('reachable', 'state', isState(state), STATE);
  return { kind: 'reachable', state, ...common('reachable', options) };
}

/**
 * Every reachable state that is not finished (final, or of class `completed`,
 * `failed` or `terminated`) has a way out, by some event or timer. A state the
 * chart marks `meta: { deadEnd: true }`, or one of `except`, may stop.
 */
export function noDeadEnd<const S extends string = never>(
  options?: PropertyOptions & { except?: readonly S[] | undefined },
): NoDeadEndProperty<S> {
  const shared = common('noDeadEnd', options);
  const except = options?.except;
  requireArg(
    'noDeadEnd',
    'options.except',
    except === undefined || (Array.isArray(except) && except.every(isState)),
    `an array of states (${STATE})`,
  );
  return { kind: 'noDeadEnd', ...(except === undefined ? {} : { except }), ...shared };
}

/** From every reachable state, some path reaches a finished state. */
export function terminates(options?: PropertyOptions): TerminatesProperty {
  return { kind: 'terminates', ...common('terminates', options) };
}

/**
 * Every transition that leaves `from` (a state, a list, or `'*'`) and enters `to`
 * (a state, or `'*'` for any change of state) is taken by one of `via`.
 *
 * @example
 * only('paused', 'running', { via: ['APPROVAL_GRANTED'] })
 */
export function only<
  const F extends string,
  const T extends string,
  const P extends EventPatternLike,
>(
  from: F | readonly F[],
  to: T,
  options: PropertyOptions & { via: readonly P[] },
): OnlyProperty<Exclude<F | T, '*'>, P> {
  requireArg(
    'only',
    'from',
    isState(from) || (Array.isArray(from) && from.length > 0 && from.every(isState)),
    `a state, a non-empty array of states, or '*' (${STATE})`,
  );
  requireArg('only', 'to', isState(to), `a state or '*' (${STATE})`);
  requireArg(
    'only',
    'options',
    typeof options === 'object' && options !== null,
    'an object with via',
  );
  requirePatterns('only', 'options.via', options.via, true);
  return { kind: 'only', from, to, via: options.via, ...common('only', options) } as OnlyProperty<
    Exclude<F | T, '*'>,
    P
  >;
}

/**
 * No path takes `then` before it took `first` (since the last of `resetBy`).
 *
 * @example
 * before('PLAN_APPROVED', 'TASKS_CREATED', { resetBy: ['RESET'] })
 */
export function before<
  const A extends EventPatternLike,
  const B extends EventPatternLike,
  const R extends EventPatternLike = never,
>(
  first: A,
  then: B,
  options?: PropertyOptions & { resetBy?: readonly R[] | undefined },
): BeforeProperty<A | B | R> {
  requireArg('before', 'first', isPattern(first), PATTERN);
  requireArg('before', 'then', isPattern(then), PATTERN);
  const shared = common('before', options);
  const resetBy = options?.resetBy;
  if (resetBy !== undefined) requirePatterns('before', 'options.resetBy', resetBy, false);
  return { kind: 'before', first, then, ...(resetBy === undefined ? {} : { resetBy }), ...shared };
}

/**
 * No path takes `event` more than `max` times (since the last of `resetBy`); `max`
 * is a number or `{ context: field }`, a numeric field of the initial context.
 *
 * @example
 * bounded('RETRY', { context: 'max_retries' })
 */
export function bounded<
  const P extends EventPatternLike,
  const K extends string = never,
  const R extends EventPatternLike = never,
>(
  event: P,
  max: number | { readonly context: K },
  options?: PropertyOptions & { resetBy?: readonly R[] | undefined },
): BoundedProperty<P | R, K> {
  requireArg('bounded', 'event', isPattern(event), PATTERN);
  requireArg(
    'bounded',
    'max',
    (typeof max === 'number' && Number.isSafeInteger(max) && max >= 0) ||
      (typeof max === 'object' && max !== null && isState(max.context)),
    'a non-negative integer, or { context: field } naming a numeric field of the context',
  );
  const shared = common('bounded', options);
  const resetBy = options?.resetBy;
  if (resetBy !== undefined) requirePatterns('bounded', 'options.resetBy', resetBy, false);
  return { kind: 'bounded', event, max, ...(resetBy === undefined ? {} : { resetBy }), ...shared };
}

/**
 * In every reachable configuration where one of `states` is active, timers alone
 * (no event from outside) eventually leave it: nobody waits forever.
 *
 * @example
 * waitsHaveTimeout(['paused'])
 */
export function waitsHaveTimeout<const S extends string>(
  states: S | readonly S[],
  options?: PropertyOptions,
): WaitsHaveTimeoutProperty<S> {
  const list: readonly S[] = typeof states === 'string' ? [states] : states;
  requireArg(
    'waitsHaveTimeout',
    'states',
    Array.isArray(list) && list.length > 0 && list.every(isState),
    `a state or a non-empty array of states (${STATE})`,
  );
  return { kind: 'waitsHaveTimeout', states: list, ...common('waitsHaveTimeout', options) };
}

// ---- Titles --------------------------------------------------------------------------

/** `VOTE`, or `VOTE[decision=approve]` for a pattern. */
export function patternText(pattern: EventPatternLike): string {
  if (typeof pattern === 'string') return pattern;
  const fields = Object.entries(pattern)
    .filter(([k]) => k !== 'type')
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return fields.length === 0 ? pattern.type : `${pattern.type}[${fields.join(',')}]`;
}

const list = (patterns: readonly EventPatternLike[]) => patterns.map(patternText).join(', ');

/**
 * A property in one line, as the check prints it: `reachable(done)`,
 * `only(paused → running via APPROVAL_GRANTED)`, `bounded(RETRY ≤ context.max_retries)`.
 */
export function propertyTitle(property: ChartProperty): string {
  requireArg(
    'propertyTitle',
    'property',
    typeof property === 'object' && property !== null && PROPERTY_KINDS.includes(property.kind),
    'a property (reachable(), only(), …)',
  );
  switch (property.kind) {
    case 'reachable':
      return `reachable(${property.state})`;
    case 'noDeadEnd':
      return property.except?.length
        ? `noDeadEnd(except ${property.except.join(', ')})`
        : 'noDeadEnd()';
    case 'terminates':
      return 'terminates()';
    case 'only': {
      const from = typeof property.from === 'string' ? property.from : property.from.join(' | ');
      return `only(${from} → ${property.to} via ${list(property.via)})`;
    }
    case 'before':
      return `before(${patternText(property.first)}, ${patternText(property.then)}${
        property.resetBy?.length ? `, reset by ${list(property.resetBy)}` : ''
      })`;
    case 'bounded': {
      const max =
        typeof property.max === 'number' ? String(property.max) : `context.${property.max.context}`;
      return `bounded(${patternText(property.event)} ≤ ${max}${
        property.resetBy?.length ? `, reset by ${list(property.resetBy)}` : ''
      })`;
    }
    case 'waitsHaveTimeout':
      return `waitsHaveTimeout(${property.states.join(', ')})`;
  }
}

// ---- Checking a chart's properties ---------------------------------------------------

/** The fields of a {@link PropertyDefinitionError}. */
export interface PropertyDefinitionFields {
  machineId: string;
  /** The property, as {@link propertyTitle} writes it (or its index when it is no property). */
  property: string;
  /** What is missing or wrong: `no state "runing"`, `no event "APROVE"`. */
  problem: string;
}

/**
 * A property names a state, event, payload field or context field the chart does
 * not have, or is not a property at all. Thrown where the chart is defined
 * (`defineChart`), or by the check for what only the initial context can tell.
 */
export class PropertyDefinitionError extends errorClass<PropertyDefinitionFields>(
  'PROPERTY_DEFINITION',
  (f) => `Property ${f.property} of chart "${f.machineId}": ${f.problem}`,
) {
  override name = 'PropertyDefinitionError';
}

/** What is wrong with a name a property uses (caught and turned into its error). */
class NameProblem extends Error {}

/** The names a property may use for one machine: states by path and key, events, timers. */
export interface PropertyNames {
  /** A state reference → its dotted path; throws when it is unknown or ambiguous. */
  state(ref: string): string;
  /** Whether an event name (type, `after:<delay>`, a timer's document name) is the chart's. */
  hasEvent(name: string): boolean;
  /** Payload fields the event's schema declares, when it is a zod object. */
  fields(type: string): readonly string[] | undefined;
}

/** The names properties of `machine` may use. */
export function propertyNames(machine: AnyStateMachine): PropertyNames {
  const meta = chartMeta(machine);
  const nodes = meta.states
    .map((info) => machine.getStateNodeById(`${machine.id}.${info.path}`))
    .filter((n) => n.type !== 'history');
  const paths = new Set(nodes.map((n) => n.path.join('.')));
  const byKey = new Map<string, string[]>();
  const add = (name: string, path: string) => {
    const list = byKey.get(name) ?? [];
    if (!list.includes(path)) list.push(path);
    byKey.set(name, list);
  };
  for (const node of nodes) add(node.key, node.path.join('.'));
  for (const info of meta.states) add(info.name, info.path);

  const events = new Set<string>([...machine.events, ...meta.events.map((e) => e.type)]);
  const rootMeta = (machine.root.meta ?? {}) as { delays?: Record<string, string> };
  for (const name of Object.values(rootMeta.delays ?? {})) events.add(name);
  for (const node of nodes) {
    for (const t of node.after) {
      const delay = /^xstate\.after\.([^.]+)\./.exec(t.eventType)?.[1];
      if (delay !== undefined) events.add(`after:${delay}`);
      const named = (t.meta as { event?: unknown } | undefined)?.event;
      if (typeof named === 'string') events.add(named);
    }
  }
  const schemas = (machine.schemas as { events?: Record<string, unknown> } | undefined)?.events;

  return {
    state(ref) {
      if (paths.has(ref)) return ref;
      const found = byKey.get(ref) ?? [];
      if (found.length === 1) return found[0] as string;
      if (found.length > 1) {
        throw new NameProblem(`state "${ref}" is ambiguous: ${found.join(', ')}`);
      }
      throw new NameProblem(`no state "${ref}" (states: ${[...paths].join(', ')})`);
    },
    hasEvent: (name) => events.has(name),
    fields(type) {
      const schema = schemas?.[type] as { shape?: Record<string, unknown> } | undefined;
      return schema?.shape ? Object.keys(schema.shape).filter((k) => k !== 'type') : undefined;
    },
  };
}

const MAX_DESCRIPTION = 2000;

/** The problem with one property, or undefined; `names` resolves the chart's names. */
function problemOf(property: ChartProperty, names: PropertyNames): string | undefined {
  const state = (ref: unknown, star = false): void => {
    if (star && ref === '*') return;
    if (typeof ref !== 'string') throw new NameProblem('a state must be a string');
    names.state(ref);
  };
  const event = (pattern: unknown): void => {
    const type =
      typeof pattern === 'string' ? pattern : (pattern as { type?: unknown } | null)?.type;
    if (typeof type !== 'string')
      throw new NameProblem('an event must be a type or a pattern { type, …fields }');
    if (!names.hasEvent(type)) throw new NameProblem(`no event "${type}"`);
    if (typeof pattern === 'object' && pattern !== null) {
      const declared = names.fields(type);
      const unknown = Object.keys(pattern).filter(
        (k) => k !== 'type' && declared !== undefined && !declared.includes(k),
      );
      if (unknown.length > 0) throw new NameProblem(`event "${type}" has no field "${unknown[0]}"`);
    }
  };
  const events = (value: unknown, what: string, nonEmpty: boolean): void => {
    if (value === undefined && !nonEmpty) return;
    if (!Array.isArray(value) || (nonEmpty && value.length === 0)) {
      throw new NameProblem(`${what} must be a${nonEmpty ? ' non-empty' : 'n'} array of events`);
    }
    for (const p of value) event(p);
  };
  try {
    if (property.description !== undefined) {
      if (
        typeof property.description !== 'string' ||
        property.description.length > MAX_DESCRIPTION
      ) {
        throw new NameProblem(
          `description must be a string of at most ${MAX_DESCRIPTION} characters`,
        );
      }
    }
    switch (property.kind) {
      case 'reachable':
        state(property.state);
        break;
      case 'noDeadEnd':
        if (property.except !== undefined) {
          if (!Array.isArray(property.except))
            throw new NameProblem('except must be an array of states');
          for (const s of property.except) state(s);
        }
        break;
      case 'terminates':
        break;
      case 'only':
        for (const s of typeof property.from === 'string' ? [property.from] : property.from) {
          state(s, true);
        }
        state(property.to, true);
        events(property.via, 'via', true);
        break;
      case 'before':
        event(property.first);
        event(property.then);
        events(property.resetBy, 'resetBy', false);
        break;
      case 'bounded':
        event(property.event);
        events(property.resetBy, 'resetBy', false);
        if (typeof property.max === 'number') {
          if (!Number.isSafeInteger(property.max) || property.max < 0) {
            throw new NameProblem('max must be a non-negative integer');
          }
        } else if (typeof property.max?.context !== 'string') {
          throw new NameProblem('max must be a number or { context: field }');
        }
        break;
      case 'waitsHaveTimeout':
        if (!Array.isArray(property.states) || property.states.length === 0) {
          throw new NameProblem('states must be a non-empty array');
        }
        for (const s of property.states) state(s);
        break;
      default:
        throw new NameProblem(
          `unknown kind "${String((property as { kind?: unknown }).kind)}" (one of ${PROPERTY_KINDS.join(', ')})`,
        );
    }
  } catch (problem) {
    if (problem instanceof NameProblem) return problem.message;
    throw problem;
  }
  return undefined;
}

/**
 * Checks that each property names only what the machine has: throws
 * {@link PropertyDefinitionError} naming the property and what is missing.
 * `defineChart` calls it, so a typo fails where the chart is defined.
 */
export function checkChartProperties(
  machine: AnyStateMachine,
  properties: readonly ChartProperty[] | undefined,
): void {
  if (properties === undefined) return;
  if (!Array.isArray(properties)) {
    throw new PropertyDefinitionError({
      machineId: machine.id,
      property: 'list',
      problem: 'properties must be an array',
    });
  }
  const names = propertyNames(machine);
  for (const [i, property] of properties.entries()) {
    const isObject = typeof property === 'object' && property !== null;
    const title =
      isObject && PROPERTY_KINDS.includes(property.kind) ? safeTitle(property) : `#${i + 1}`;
    const problem = isObject
      ? problemOf(property, names)
      : 'not a property (use reachable(), only(), …)';
    if (problem !== undefined) {
      throw new PropertyDefinitionError({ machineId: machine.id, property: title, problem });
    }
  }
}

function safeTitle(property: ChartProperty): string {
  try {
    return propertyTitle(property);
  } catch {
    return property.kind;
  }
}
