import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { PersistedSnapshot, SnapshotMigration } from '../core/chart.ts';
import { SnapshotVersionError, StoreError } from '../core/errors.ts';
import type { ActorRow } from '../store/types.ts';
import { pureRestore } from './pure.ts';
import { ledgerJson, ledgerOf, LEDGER_KEY, type Ledger } from './ledger.ts';
import { applyAtomicOrder, atomicOrder, ATOMIC_ORDER_KEY, recordedOrder } from './node-order.ts';

/** How a machine's persisted snapshots are versioned. */
export interface ChartVersioning {
  version: number;
  migrations: Readonly<Record<number, SnapshotMigration>>;
}

/** The fields of a machine snapshot that its persisted form keeps. */
interface SnapshotFields {
  status: string;
  output: unknown;
  error: unknown;
  value: unknown;
  historyValue: Record<string, Array<{ id: string }>> | undefined;
  context: unknown;
  children: Record<string, unknown>;
}

/**
 * The persisted (JSON) form of a live snapshot, as `machine.getPersistedSnapshot`
 * gives it, with the actor's ledger (what it has pending) under `agentcharts`.
 * Written directly, byte for byte what `JSON.stringify` of XState's persisted
 * snapshot gives: XState's version copies the snapshot with a rest spread and walks
 * the context for actor refs, which only child actors can put there (a third of the
 * send path's CPU); and it persists every child again on every commit, where the
 * JSON of a child whose snapshot has not changed is taken from {@link childJson}
 * (a parent of 100 children spent a quarter of its fan-out re-encoding them).
 */
export function encodeSnapshot(
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  ledger?: Ledger,
): string {
  const s = snapshot as unknown as SnapshotFields;
  const pending = ledger === undefined ? undefined : ledgerJson(ledger);
  if (pending !== undefined) {
    // The order of active atomic states, when a restore would not rebuild it (./node-order.ts).
    const order = atomicOrder(machine, snapshot);
    if (order !== undefined) (pending as Record<string, unknown>)[ATOMIC_ORDER_KEY] = order;
  }
  let history: Record<string, Array<{ id: string }>> | undefined;
  for (const key in s.historyValue) {
    history ??= {};
    history[key] = (s.historyValue[key] ?? []).map((node) => ({ id: node.id }));
  }
  if (isEmpty(s.children)) {
    return JSON.stringify({
      status: s.status,
      output: s.output,
      error: s.error,
      value: s.value,
      historyValue: history ?? {},
      context: s.context,
      children: {},
      [LEDGER_KEY]: pending,
    });
  }
  // XState's own part without its children (the context's actor refs persisted as
  // XState persists them), then each child, then the ledger: the key order of
  // `{ ...getPersistedSnapshot(snapshot), agentcharts }`.
  const { context } = machine.getPersistedSnapshot({
    context: s.context,
    children: {},
  } as never) as unknown as { context: unknown };
  let json = JSON.stringify({
    status: s.status,
    output: s.output,
    error: s.error,
    value: s.value,
    historyValue: history ?? {},
    context,
  }).slice(0, -1);
  json += ',"children":{';
  let first = true;
  for (const id in s.children) {
    json += `${first ? '' : ','}${JSON.stringify(id)}:${childJson(s.children[id] as ChildRef)}`;
    first = false;
  }
  json += '}';
  if (pending !== undefined) json += `,"${LEDGER_KEY}":${JSON.stringify(pending)}`;
  return `${json}}`;
}

interface ChildRef {
  getSnapshot(): unknown;
  getPersistedSnapshot(): unknown;
  src: unknown;
  systemId: unknown;
  _syncSnapshot?: unknown;
}

/** A child's persisted JSON, by the child snapshot it was made from (snapshots are immutable). */
const childJsonCache = new WeakMap<object, { snapshot: unknown; json: string }>();

/** The JSON XState persists for one child of a snapshot (its `children` entry). */
function childJson(child: ChildRef): string {
  const snapshot = child.getSnapshot();
  const cached = childJsonCache.get(child);
  if (cached !== undefined && cached.snapshot === snapshot) return cached.json;
  const json = JSON.stringify({
    snapshot: child.getPersistedSnapshot(),
    src: child.src,
    systemId: child.systemId,
    syncSnapshot: child._syncSnapshot,
  });
  childJsonCache.set(child, { snapshot, json });
  return json;
}

/** Turns persisted JSON into a live snapshot without starting anything. */
export function restoreSnapshot(
  machine: AnyStateMachine,
  persisted: PersistedSnapshot,
): AnyMachineSnapshot {
  return pureRestore(machine, persisted);
}

/**
 * Loads an actor row into a live snapshot: parses the JSON (corrupt → StoreError),
 * checks the machine id and version, runs migrations from the stored version up to
 * the current one, and checks the state exists in the chart.
 */
export function decodeActorRow(
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  row: ActorRow,
): AnyMachineSnapshot {
  return decodeActor(machine, versioning, row).snapshot;
}

/** {@link decodeActorRow} with the actor's ledger (what it has pending). */
export function decodeActor(
  machine: AnyStateMachine,
  versioning: ChartVersioning,
  row: ActorRow,
): { snapshot: AnyMachineSnapshot; ledger: Ledger | undefined } {
  const fail = (detail: string, missingState?: string) =>
    new SnapshotVersionError({
      actorId: row.id,
      machineId: machine.id,
      storedMachineId: row.machineId,
      storedVersion: row.chartVersion,
      currentVersion: versioning.version,
      detail,
      missingState,
    });
  if (row.machineId !== machine.id) throw fail('different machine');
  if (row.chartVersion > versioning.version) throw fail('stored by a newer chart version');

  let persisted: PersistedSnapshot;
  try {
    const parsed: unknown = JSON.parse(row.snapshot);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('not an object');
    persisted = parsed as PersistedSnapshot;
  } catch (cause) {
    throw new StoreError(
      { operation: 'load', kind: 'corrupt', actorId: row.id, detail: 'snapshot is not valid JSON' },
      { cause },
    );
  }
  // Migrations see XState's part only; what the actor has pending stays as it is.
  const ledger = ledgerOf(persisted);
  const order = recordedOrder(persisted, LEDGER_KEY);
  if (LEDGER_KEY in persisted) {
    const { [LEDGER_KEY]: _pending, ...rest } = persisted as PersistedSnapshot & {
      [LEDGER_KEY]?: unknown;
    };
    persisted = rest;
  }
  for (let v = row.chartVersion; v < versioning.version; v++) {
    const migrate = versioning.migrations[v];
    if (!migrate) throw fail(`no migration from version ${v} to ${v + 1}`);
    persisted = migrate(persisted);
  }
  if (!('value' in persisted) || !('status' in persisted)) {
    throw new StoreError({
      operation: 'load',
      kind: 'corrupt',
      actorId: row.id,
      detail: 'snapshot lacks value or status',
    });
  }
  const missing = missingState(machine, persisted.value);
  if (missing !== undefined) {
    throw fail(`state "${missing}" does not exist in this chart`, missing);
  }
  try {
    const snapshot = restoreSnapshot(machine, persisted);
    if (order !== undefined) applyAtomicOrder(snapshot, order);
    return { snapshot, ledger };
  } catch (cause) {
    throw Object.assign(fail('snapshot cannot be restored'), { cause });
  }
}

/** Whether every path of a (persisted) state value names state nodes of the chart. */
export function stateValueExists(machine: AnyStateMachine, value: unknown): boolean {
  return missingState(machine, value) === undefined;
}

/**
 * The first dotted path of a (persisted) state value that names no state node of
 * the chart (`review`, `active.review`; the parent's path plus `(none)` when a
 * compound state's value is empty or not a state value), or undefined when all do.
 */
export function missingState(machine: AnyStateMachine, value: unknown): string | undefined {
  // A machine without child states has the empty value.
  if (Object.keys(machine.root.states).length === 0) {
    const empty = typeof value === 'object' && value !== null && Object.keys(value).length === 0;
    return empty ? undefined : '(none)';
  }
  const at = (prefix: string, key: string) => (prefix ? `${prefix}.${key}` : key);
  const walk = (node: AnyStateMachine['root'], v: unknown, prefix: string): string | undefined => {
    if (typeof v === 'string') return Object.hasOwn(node.states, v) ? undefined : at(prefix, v);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return at(prefix, '(none)');
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0) return at(prefix, '(none)');
    for (const [key, child] of entries) {
      const next = Object.hasOwn(node.states, key) ? node.states[key] : undefined;
      if (!next) return at(prefix, key);
      // A compound state with an empty value object is not valid; atomic children are strings.
      const atomic = Object.keys(next.states).length === 0;
      const empty =
        child === undefined ||
        (typeof child === 'object' && child !== null && Object.keys(child).length === 0);
      const missing = atomic
        ? empty
          ? undefined
          : at(at(prefix, key), '(none)')
        : walk(next, child, at(prefix, key));
      if (missing !== undefined) return missing;
    }
    return undefined;
  };
  return walk(machine.root, value, '');
}

function isEmpty(record: object): boolean {
  for (const _ in record) return false;
  return true;
}
