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

/** Which part of an event failed validation. */
export type InvalidEventReason =
  | 'not_an_object'
  | 'unknown_type'
  | 'invalid_field'
  | 'missing_field'
  | 'unexpected_field'
  | 'forbidden_key'
  | 'oversize';

/**
 * The event is ill-formed: not an object, an unknown `type`, a missing, wrong or
 * extra field, a forbidden key (`__proto__`, `constructor`, `prototype`) or too
 * large. Nothing was changed.
 */
export class InvalidEventError extends AgentchartsError {
  override name = 'InvalidEventError';
  readonly machineId: string;
  readonly actorId: string | undefined;
  readonly eventType: string | undefined;
  readonly reason: InvalidEventReason;
  /** Dotted path of the offending field (`payload.amount`), when there is one. */
  readonly field: string | undefined;
  constructor(fields: {
    machineId: string;
    actorId?: string | undefined;
    eventType?: string | undefined;
    reason: InvalidEventReason;
    field?: string | undefined;
    detail?: string | undefined;
  }) {
    const where = fields.actorId ? ` for actor "${fields.actorId}"` : '';
    const type = fields.eventType !== undefined ? ` "${fields.eventType}"` : '';
    const field = fields.field !== undefined ? ` at field "${fields.field}"` : '';
    const detail = fields.detail ? `: ${fields.detail}` : '';
    super(
      'INVALID_EVENT',
      `Invalid event${type} for machine "${fields.machineId}"${where}: ${fields.reason}${field}${detail}`,
    );
    this.machineId = fields.machineId;
    this.actorId = fields.actorId;
    this.eventType = fields.eventType;
    this.reason = fields.reason;
    this.field = fields.field;
  }
}

/** The event is well-formed but no transition is enabled for it in the current state. */
export class InvalidTransitionError extends AgentchartsError {
  override name = 'InvalidTransitionError';
  readonly machineId: string;
  readonly actorId: string | undefined;
  /** State label of the current state (`executing`, `EXECUTION.working`). */
  readonly state: string;
  readonly eventType: string;
  constructor(fields: {
    machineId: string;
    actorId?: string | undefined;
    state: string;
    eventType: string;
  }) {
    const where = fields.actorId ? ` (actor "${fields.actorId}")` : '';
    super(
      'INVALID_TRANSITION',
      `Machine "${fields.machineId}"${where} in state "${fields.state}" does not accept event "${fields.eventType}"`,
    );
    this.machineId = fields.machineId;
    this.actorId = fields.actorId;
    this.state = fields.state;
    this.eventType = fields.eventType;
  }
}

/** The actor's stored version moved since it was read: reload and retry. */
export class ConcurrencyError extends AgentchartsError {
  override name = 'ConcurrencyError';
  readonly actorId: string;
  readonly expectedVersion: number;
  readonly actualVersion: number | undefined;
  constructor(fields: {
    actorId: string;
    expectedVersion: number;
    actualVersion?: number | undefined;
  }) {
    const actual = fields.actualVersion === undefined ? 'unknown' : String(fields.actualVersion);
    super(
      'CONCURRENCY',
      `Actor "${fields.actorId}" was changed concurrently: expected version ${fields.expectedVersion}, found ${actual}`,
    );
    this.actorId = fields.actorId;
    this.expectedVersion = fields.expectedVersion;
    this.actualVersion = fields.actualVersion;
  }
}

/** What the store was doing when it failed. */
export type StoreOperation =
  'open' | 'migrate' | 'load' | 'create' | 'commit' | 'query' | 'timer' | 'step' | 'close';

/**
 * The store could not do its work (corrupt row, busy or locked database, full or
 * read-only disk, lost connection, unknown actor). Nothing was half-written.
 */
export class StoreError extends AgentchartsError {
  override name = 'StoreError';
  readonly operation: StoreOperation;
  readonly actorId: string | undefined;
  /** A short classification: `busy`, `readonly`, `full`, `corrupt`, `not_found`, `connection`, `timeout`, … */
  readonly kind: string;
  constructor(
    fields: {
      operation: StoreOperation;
      kind: string;
      actorId?: string | undefined;
      detail?: string | undefined;
    },
    options?: { cause?: unknown },
  ) {
    const where = fields.actorId ? ` for actor "${fields.actorId}"` : '';
    const detail = fields.detail ? `: ${fields.detail}` : '';
    super('STORE', `Store ${fields.operation} failed${where} (${fields.kind})${detail}`, options);
    this.operation = fields.operation;
    this.actorId = fields.actorId;
    this.kind = fields.kind;
  }
}

/** A persisted snapshot cannot be loaded by this machine (unknown state, machine or version). */
export class SnapshotVersionError extends AgentchartsError {
  override name = 'SnapshotVersionError';
  readonly actorId: string;
  readonly machineId: string;
  readonly storedMachineId: string;
  readonly storedVersion: number;
  readonly currentVersion: number;
  constructor(fields: {
    actorId: string;
    machineId: string;
    storedMachineId: string;
    storedVersion: number;
    currentVersion: number;
    detail: string;
  }) {
    super(
      'SNAPSHOT_VERSION',
      `Actor "${fields.actorId}" stored by machine "${fields.storedMachineId}" v${fields.storedVersion} cannot be loaded by "${fields.machineId}" v${fields.currentVersion}: ${fields.detail}`,
    );
    this.actorId = fields.actorId;
    this.machineId = fields.machineId;
    this.storedMachineId = fields.storedMachineId;
    this.storedVersion = fields.storedVersion;
    this.currentVersion = fields.currentVersion;
  }
}

/**
 * An idempotent step was found `executing` with no process running it (a crash
 * mid-step): whether its side effect happened is unknown. It is never re-run
 * blindly; `recover({ reconcile })` or `actor.reconcileStep()` settles it.
 */
export class UncertainStepError extends AgentchartsError {
  override name = 'UncertainStepError';
  readonly actorId: string;
  readonly key: string;
  constructor(fields: { actorId: string; key: string }) {
    super(
      'UNCERTAIN_STEP',
      `Step "${fields.key}" of actor "${fields.actorId}" was interrupted mid-run; reconcile it before running it again`,
    );
    this.actorId = fields.actorId;
    this.key = fields.key;
  }
}

/** An actor's input does not match its machine's input schema; no actor was created. */
export class InvalidInputError extends AgentchartsError {
  override name = 'InvalidInputError';
  readonly machineId: string;
  readonly actorId: string | undefined;
  readonly field: string | undefined;
  constructor(fields: {
    machineId: string;
    actorId?: string | undefined;
    field?: string | undefined;
    detail?: string | undefined;
  }) {
    const where = fields.actorId ? ` for actor "${fields.actorId}"` : '';
    const field = fields.field ? ` at field "${fields.field}"` : '';
    const detail = fields.detail ? `: ${fields.detail}` : '';
    super(
      'INVALID_INPUT',
      `Invalid input for machine "${fields.machineId}"${where}${field}${detail}`,
    );
    this.machineId = fields.machineId;
    this.actorId = fields.actorId;
    this.field = fields.field;
  }
}

/**
 * A write that needs the actor's lease (timer firing, recovery action) was made by
 * a worker that no longer holds it: another worker took the actor over.
 */
export class LeaseLostError extends AgentchartsError {
  override name = 'LeaseLostError';
  readonly actorId: string;
  readonly owner: string;
  readonly holder: string | undefined;
  constructor(fields: { actorId: string; owner: string; holder?: string | undefined }) {
    const holder = fields.holder ? `; held by "${fields.holder}"` : '';
    super(
      'LEASE_LOST',
      `Worker "${fields.owner}" does not hold the lease of actor "${fields.actorId}"${holder}`,
    );
    this.actorId = fields.actorId;
    this.owner = fields.owner;
    this.holder = fields.holder;
  }
}

/** A chart's metadata (`meta` on its states, events, delays or transitions) is ill-formed. */
export class ChartMetadataError extends AgentchartsError {
  override name = 'ChartMetadataError';
  readonly machineId: string;
  /** Which metadata: `root meta`, `state "active.executing"`, … */
  readonly where: string;
  readonly field: string | undefined;
  constructor(fields: {
    machineId: string;
    where: string;
    field?: string | undefined;
    detail: string;
  }) {
    const field = fields.field ? ` at "${fields.field}"` : '';
    super(
      'CHART_METADATA',
      `Chart "${fields.machineId}": ${fields.where} metadata is invalid${field}: ${fields.detail}`,
    );
    this.machineId = fields.machineId;
    this.where = fields.where;
    this.field = fields.field;
  }
}

/**
 * A machine uses an actor the durable runtime cannot make durable (a callback, an
 * observable, custom logic): it would run outside the log and be lost on a
 * restart. Raised when the actor is created or loaded (or when a transition would
 * spawn one), naming where it is used and what to use instead; nothing is written.
 */
export class UnsupportedActorError extends AgentchartsError {
  override name = 'UnsupportedActorError';
  readonly machineId: string;
  /** State path of the `invoke`, or of the transition whose action spawns it. */
  readonly state: string;
  /** The invoke id or spawned child id. */
  readonly actorId: string;
  /** What kind of actor logic it is: `callback`, `observable`, `transition`, `custom`, … */
  readonly kind: string;
  constructor(fields: {
    machineId: string;
    state: string;
    actorId: string;
    kind: string;
    hint: string;
  }) {
    super(
      'UNSUPPORTED_ACTOR',
      `Machine "${fields.machineId}" in state "${fields.state}" uses actor "${fields.actorId}" (${fields.kind} logic), which a durable actor cannot persist: ${fields.hint}`,
    );
    this.machineId = fields.machineId;
    this.state = fields.state;
    this.actorId = fields.actorId;
    this.kind = fields.kind;
  }
}
