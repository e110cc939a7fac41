/**
 * Typed errors of agentcharts. Every error carries structured fields (ids, state
 * labels, event types) and a message built only from those fields: payload values
 * and secrets never appear in messages, so errors are safe to log.
 */

/** Base class of every error agentcharts throws on purpose. */
export class AgentchartsError extends Error {
  override name = 'AgentchartsError';
  /** A stable machine-readable code, e.g. `INVALID_EVENT`. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

type ErrorOptions = { cause?: unknown };

/** ` for actor "…"` when the error names an actor. */
function forActor(f: { actorId?: string | undefined }): string {
  return f.actorId ? ` for actor "${f.actorId}"` : '';
}

/** `: detail` when the error has one. */
function detailOf(f: { detail?: string | undefined }): string {
  return f.detail ? `: ${f.detail}` : '';
}

/**
 * The base class of an error whose structured fields are `F`: its constructor
 * takes the fields, keeps them on the error and builds the message from them
 * alone, so each error class states its fields once.
 */
export function errorClass<F extends object>(
  code: string,
  message: (fields: F) => string,
): new (fields: F, options?: ErrorOptions) => AgentchartsError & Readonly<F> {
  class FieldsError extends AgentchartsError {
    constructor(fields: F, options?: ErrorOptions) {
      super(code, message(fields), options);
      Object.assign(this, fields);
    }
  }
  // Object.assign gives the instance every field of F, which TypeScript cannot see.
  return FieldsError as unknown as new (
    fields: F,
    options?: ErrorOptions,
  ) => AgentchartsError & Readonly<F>;
}

/** Which part of an event failed validation. */
export type InvalidEventReason =
  | 'not_an_object'
  | 'unknown_type'
  | 'invalid_field'
  | 'missing_field'
  | 'unexpected_field'
  | 'forbidden_key'
  | 'oversize';

/** Where an error happened: the machine, and the actor when there is one. */
export interface MachineScope {
  machineId: string;
  actorId?: string | undefined;
}

/** One thing wrong with an event: why, and the field when there is one. */
export interface EventProblem {
  reason: InvalidEventReason;
  /** Dotted path of the offending field (`payload.amount`), when there is one. */
  field?: string | undefined;
  /**
   * What is wrong with it: for a field the schema refuses, zod's issue code
   * (`invalid_type`, `too_small`, `invalid_value`), never the value; otherwise
   * in words.
   */
  detail?: string | undefined;
}

/** The fields of an {@link InvalidEventError}: its first problem, and the others found with it. */
export interface InvalidEventFields extends MachineScope, EventProblem {
  eventType?: string | undefined;
  /**
   * The problems a schema found besides the first (at most
   * {@link MAX_EVENT_PROBLEMS} in all), so a caller fixes them in one go; absent
   * when the first is the only one.
   */
  more?: readonly EventProblem[] | undefined;
}

/** The most problems an {@link InvalidEventError} lists. */
export const MAX_EVENT_PROBLEMS = 10;

/** `reason at field "x": detail` of one problem. */
function problemText(p: EventProblem): string {
  return `${p.reason}${p.field !== undefined ? ` at field "${p.field}"` : ''}${detailOf(p)}`;
}

/** `; also …` listing an event's further problems, when it has any. */
function moreProblems(f: InvalidEventFields): string {
  return f.more === undefined || f.more.length === 0
    ? ''
    : `; also ${f.more.map(problemText).join('; ')}`;
}

/**
 * The event is ill-formed: not an object, an unknown `type`, a missing, wrong or
 * extra field, a forbidden key (`__proto__`, `constructor`, `prototype`) or too
 * large. Nothing was changed.
 */
export class InvalidEventError
  extends /* @__PURE__ */ errorClass<InvalidEventFields>(
    'INVALID_EVENT',
    (f) =>
      `Invalid event${f.eventType !== undefined ? ` "${f.eventType}"` : ''} for machine "${f.machineId}"${forActor(f)}: ${problemText(f)}${moreProblems(f)}`,
  )
{
  override name = 'InvalidEventError';
}

/** The fields of an {@link InvalidTransitionError}. */
export interface InvalidTransitionFields extends MachineScope {
  /** State label of the current state (`executing`, `EXECUTION.working`). */
  state: string;
  eventType: string;
}

/** The event is well-formed but no transition is enabled for it in the current state. */
export class InvalidTransitionError
  extends /* @__PURE__ */ errorClass<InvalidTransitionFields>(
    'INVALID_TRANSITION',
    (f) =>
      `Machine "${f.machineId}"${f.actorId ? ` (actor "${f.actorId}")` : ''} in state "${f.state}" does not accept event "${f.eventType}"`,
  )
{
  override name = 'InvalidTransitionError';
}

/** The fields of a {@link ConcurrencyError}. */
export interface ConcurrencyFields {
  actorId: string;
  expectedVersion: number;
  actualVersion?: number | undefined;
}

/** The actor's stored version moved since it was read: reload and retry. */
export class ConcurrencyError
  extends /* @__PURE__ */ errorClass<ConcurrencyFields>(
    'CONCURRENCY',
    (f) =>
      `Actor "${f.actorId}" was changed concurrently: expected version ${f.expectedVersion}, found ${f.actualVersion ?? 'unknown'}`,
  )
{
  override name = 'ConcurrencyError';
}

/** What the store was doing when it failed. */
export type StoreOperation =
  'open' | 'migrate' | 'load' | 'create' | 'commit' | 'query' | 'timer' | 'step' | 'close';

/** The fields of a {@link StoreError}. */
export interface StoreErrorFields {
  operation: StoreOperation;
  /** A short classification: `busy`, `readonly`, `full`, `corrupt`, `not_found`, `connection`, `timeout`, … */
  kind: string;
  actorId?: string | undefined;
  detail?: string | undefined;
}

/**
 * The store could not do its work (corrupt row, busy or locked database, full or
 * read-only disk, lost connection, unknown actor). Nothing was half-written.
 */
export class StoreError
  extends /* @__PURE__ */ errorClass<StoreErrorFields>(
    'STORE',
    (f) => `Store ${f.operation} failed${forActor(f)} (${f.kind})${detailOf(f)}`,
  )
{
  override name = 'StoreError';
}

/** The fields of a {@link SnapshotVersionError}. */
export interface SnapshotVersionFields {
  actorId: string;
  machineId: string;
  storedMachineId: string;
  storedVersion: number;
  currentVersion: number;
  detail: string;
  /** The state of the (migrated) snapshot the chart lacks, when that is the reason. */
  missingState?: string | undefined;
}

/** A persisted snapshot cannot be loaded by this machine (unknown state, machine or version). */
export class SnapshotVersionError
  extends /* @__PURE__ */ errorClass<SnapshotVersionFields>(
    'SNAPSHOT_VERSION',
    (f) =>
      `Actor "${f.actorId}" stored by machine "${f.storedMachineId}" v${f.storedVersion} cannot be loaded by "${f.machineId}" v${f.currentVersion}: ${f.detail}`,
  )
{
  override name = 'SnapshotVersionError';
}

/** The fields of an {@link UncertainStepError}. */
export interface UncertainStepFields {
  actorId: string;
  key: string;
}

/**
 * An idempotent step was found `executing` with no process running it (a crash
 * mid-step): whether its side effect happened is unknown. It is never re-run
 * blindly; `recover({ reconcile })` or `actor.reconcileStep()` settles it.
 */
export class UncertainStepError
  extends /* @__PURE__ */ errorClass<UncertainStepFields>(
    'UNCERTAIN_STEP',
    (f) =>
      `Step "${f.key}" of actor "${f.actorId}" was interrupted mid-run; reconcile it before running it again`,
  )
{
  override name = 'UncertainStepError';
}

/** The fields of an {@link InvalidInputError}. */
export interface InvalidInputFields extends MachineScope {
  field?: string | undefined;
  detail?: string | undefined;
}

/** An actor's input does not match its machine's input schema; no actor was created. */
export class InvalidInputError
  extends /* @__PURE__ */ errorClass<InvalidInputFields>(
    'INVALID_INPUT',
    (f) =>
      `Invalid input for machine "${f.machineId}"${forActor(f)}${f.field ? ` at field "${f.field}"` : ''}${detailOf(f)}`,
  )
{
  override name = 'InvalidInputError';
}

/** The fields of a {@link LeaseLostError}. */
export interface LeaseLostFields {
  actorId: string;
  /** The worker that tried to write. */
  owner: string;
  /** The worker holding the lease now, when known. */
  holder?: string | undefined;
}

/**
 * A write that needs the actor's lease (timer firing, recovery action) was made by
 * a worker that no longer holds it: another worker took the actor over.
 */
export class LeaseLostError
  extends /* @__PURE__ */ errorClass<LeaseLostFields>(
    'LEASE_LOST',
    (f) =>
      `Worker "${f.owner}" does not hold the lease of actor "${f.actorId}"${f.holder ? `; held by "${f.holder}"` : ''}`,
  )
{
  override name = 'LeaseLostError';
}

/** The fields of a {@link ChartMetadataError}. */
export interface ChartMetadataFields {
  machineId: string;
  /** Which metadata: `root meta`, `state "active.executing"`, … */
  where: string;
  field?: string | undefined;
  detail: string;
}

/** A chart's metadata (`meta` on its states, events, delays or transitions) is ill-formed. */
export class ChartMetadataError
  extends /* @__PURE__ */ errorClass<ChartMetadataFields>(
    'CHART_METADATA',
    (f) =>
      `Chart "${f.machineId}": ${f.where} metadata is invalid${f.field ? ` at "${f.field}"` : ''}: ${f.detail}`,
  )
{
  override name = 'ChartMetadataError';
}

/** The fields of an {@link UnsupportedActorError}. */
export interface UnsupportedActorFields {
  machineId: string;
  /** State path of the `invoke`, or of the transition whose action spawns it. */
  state: string;
  /** The invoke id or spawned child id. */
  actorId: string;
  /** What kind of actor logic it is: `callback`, `observable`, `transition`, `custom`, … */
  kind: string;
  /** What to use instead. */
  hint: string;
}

/**
 * A machine uses an actor the durable runtime cannot make durable (a callback, an
 * observable, custom logic): it would run outside the log and be lost on a
 * restart. Raised when the actor is created or loaded (or when a transition would
 * spawn one), naming where it is used and what to use instead; nothing is written.
 */
export class UnsupportedActorError
  extends /* @__PURE__ */ errorClass<UnsupportedActorFields>(
    'UNSUPPORTED_ACTOR',
    (f) =>
      `Machine "${f.machineId}" in state "${f.state}" uses actor "${f.actorId}" (${f.kind} logic), which a durable actor cannot persist: ${f.hint}`,
  )
{
  override name = 'UnsupportedActorError';
}

/** The fields of an {@link InvalidOutputError}. */
export interface InvalidOutputFields {
  /** Dotted path of the offending field of the output, when there is one. */
  field?: string | undefined;
  /** What is wrong with it (the schema's issue code; never the value). */
  detail?: string | undefined;
}

/**
 * An invoked promise resolved with an output that does not match the schema it
 * declared (`durablePromise(fn, { output })`); the invoking state hears it as
 * `xstate.error.actor.<id>`.
 */
export class InvalidOutputError
  extends /* @__PURE__ */ errorClass<InvalidOutputFields>(
    'INVALID_OUTPUT',
    (f) =>
      `The invoked promise's output does not match its declared output schema${f.field ? ` at field "${f.field}"` : ''}${detailOf(f)}`,
  )
{
  override name = 'InvalidOutputError';
}

export interface UnpersistableValueFields {
  machineId: string;
  actorId?: string | undefined;
  /** The state the transition came from. */
  state: string;
  /** The event whose transition produced the value. */
  eventType: string;
  /** What holds it: the actor's `context` or its `output`. */
  where: 'context' | 'output';
  /** Dotted path of the value inside it (empty for the whole). */
  path: string;
  /** What the value is and what JSON would make of it. */
  detail: string;
}

/**
 * A transition would store a value JSON cannot carry unchanged (a Date, a Map, a
 * Set, a BigInt, NaN, a class instance, a function, a cycle): after a restart the
 * actor would read something else. The send is refused and nothing is written; a
 * timer, message or invoke result that produces one fails the actor instead, as a
 * transition that throws does.
 */
export class UnpersistableValueError
  extends /* @__PURE__ */ errorClass<UnpersistableValueFields>(
    'UNPERSISTABLE_VALUE',
    (f) =>
      `Machine "${f.machineId}"${forActor(f)} in state "${f.state}" on "${f.eventType}" would store ${f.where}${f.path ? `.${f.path}` : ''}, which JSON cannot carry unchanged: ${f.detail}`,
  )
{
  override name = 'UnpersistableValueError';
}
