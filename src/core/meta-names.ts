/**
 * The names a chart's root metadata uses must be the chart's own. Each entry of
 * `meta.events`, `meta.delays` and `meta.invokes` is keyed by a name (an event
 * type, a delay, an invoke id) and says something only of what bears that name;
 * a misspelled key says nothing, silently, and the thing it meant keeps its
 * defaults: `meta.events.APROVE: { kind: 'approval' }` leaves `APPROVE` a command
 * any agent key may send. A `signer` names a field of its event's payload, which
 * the server fills from the caller's identity; a field the schema does not have
 * would check nothing. And those entries say nothing on any state but the root.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { handlesType, isWildcard, namedEventTypes } from './event-descriptors.ts';
import { ChartMetadataError } from './errors.ts';
import { statePaths, type RootMeta } from './meta-check.ts';

/** Root-only metadata keys: on another state they would be ignored. */
const ROOT_ONLY = ['events', 'delays', 'invokes', 'display'] as const;

/** A list for an error message: the first names, sorted, and how many more. */
function listed(names: Iterable<string>): string {
  const sorted = [...new Set(names)].sort();
  if (sorted.length === 0) return '(none)';
  const shown = sorted.slice(0, 20).join(', ');
  return sorted.length > 20 ? `${shown}, … (${sorted.length - 20} more)` : shown;
}

/** The delay names `after` transitions of the machine use, and those `setup` declares. */
function delayNames(machine: AnyStateMachine): Set<string> {
  const names = new Set(Object.keys(machine.implementations.delays));
  const walk = (node: AnyStateNode): void => {
    const after = (node.config as { after?: Record<string, unknown> }).after;
    if (after !== undefined && typeof after === 'object') {
      for (const key of Object.keys(after)) names.add(key);
    }
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  return names;
}

/** Every invoke id of the machine's states. */
function invokeIds(machine: AnyStateMachine): Set<string> {
  const ids = new Set<string>();
  const walk = (node: AnyStateNode): void => {
    for (const invoke of node.invoke) ids.add(invoke.id);
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  return ids;
}

/** The payload fields an event schema names, when it is an object schema. */
function schemaFields(schema: unknown): Set<string> | undefined {
  const shape = (schema as { shape?: unknown } | null)?.shape;
  return typeof shape === 'object' && shape !== null ? new Set(Object.keys(shape)) : undefined;
}

/**
 * Throws {@link ChartMetadataError} where the root metadata names an event type,
 * delay or invoke the chart does not have, a `signer` its event's schema does not
 * declare, or where a state other than the root carries root-only metadata.
 * `schemas`: the chart's event schemas (they may declare types no transition
 * names yet).
 */
export function checkMetaNames(
  machine: AnyStateMachine,
  schemas: Readonly<Record<string, unknown>> = {},
): void {
  const id = machine.id;
  const fail = (where: string, field: string, detail: string): never => {
    throw new ChartMetadataError({ machineId: id, where, field, detail });
  };
  for (const [path, node] of statePaths(machine)) {
    const meta = node.meta as Record<string, unknown> | undefined;
    for (const key of ROOT_ONLY) {
      if (meta !== undefined && Object.hasOwn(meta, key)) {
        fail(`state "${path}"`, key, `\`${key}\` belongs on the root's meta; here it says nothing`);
      }
    }
  }
  const root = (machine.root.meta ?? {}) as RootMeta;
  const declared = new Set([...namedEventTypes(machine), ...Object.keys(schemas)]);
  for (const [type, entry] of Object.entries(root.events ?? {})) {
    if (!isWildcard(type) && !declared.has(type) && !handlesType(machine, type)) {
      fail(
        'the root',
        `events.${type}`,
        `the chart has no event "${type}"; its events: ${listed([...declared].filter((t) => !t.startsWith('xstate.')))}`,
      );
    }
    const signer = entry.signer;
    const fields = signer === undefined ? undefined : schemaFields(schemas[type]);
    if (signer !== undefined && fields !== undefined && !fields.has(signer)) {
      fail(
        'the root',
        `events.${type}.signer`,
        `the schema of ${type} has no field "${signer}"; its fields: ${listed(fields)}`,
      );
    }
  }
  const delays = delayNames(machine);
  for (const name of Object.keys(root.delays ?? {})) {
    if (!delays.has(name)) {
      fail(
        'the root',
        `delays.${name}`,
        `the chart has no delay "${name}"; its delays: ${listed(delays)}`,
      );
    }
  }
  const invokes = invokeIds(machine);
  for (const name of Object.keys(root.invokes ?? {})) {
    if (!invokes.has(name)) {
      fail(
        'the root',
        `invokes.${name}`,
        `the chart invokes nothing as "${name}"; its invokes: ${listed(invokes)}`,
      );
    }
  }
}
