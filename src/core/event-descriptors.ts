/**
 * XState's event descriptors. A transition is named for one event type, for any
 * event (`'*'`), or for a family of types (`'user.*'`: `user` itself and every
 * type that starts `user.`). XState matches them in `matchesEventDescriptor`,
 * which its package does not export; {@link matchesDescriptor} is the same rule.
 * A wildcard names no event: it is no type to offer an agent, list in a chart's
 * vocabulary or sample, but a machine that has one takes the events it matches.
 */
import type { AnyStateMachine } from 'xstate';

/** Whether an event descriptor of a transition is a wildcard (`'*'`, `'user.*'`). */
export function isWildcard(descriptor: string): boolean {
  return descriptor === '*' || descriptor.endsWith('.*');
}

/** Whether `descriptor` matches an event of type `type`, as XState matches it. */
export function matchesDescriptor(type: string, descriptor: string): boolean {
  if (descriptor === type || descriptor === '*') return true;
  if (!descriptor.endsWith('.*')) return false;
  const prefix = descriptor.slice(0, -2);
  return type === prefix || type.startsWith(`${prefix}.`);
}

interface Descriptors {
  readonly named: ReadonlySet<string>;
  readonly wildcards: readonly string[];
}

const byMachine = /* @__PURE__ */ new WeakMap<AnyStateMachine, Descriptors>();

function descriptorsOf(machine: AnyStateMachine): Descriptors {
  let found = byMachine.get(machine);
  if (found === undefined) {
    const named = new Set<string>();
    const wildcards: string[] = [];
    for (const descriptor of machine.events) {
      if (isWildcard(descriptor)) wildcards.push(descriptor);
      else named.add(descriptor);
    }
    found = { named, wildcards };
    byMachine.set(machine, found);
  }
  return found;
}

/** The event types the machine's transitions name, wildcards left out. */
export function namedEventTypes(machine: AnyStateMachine): string[] {
  return [...descriptorsOf(machine).named];
}

/** Whether a transition of the machine is named for events of `type`, by name or wildcard. */
export function handlesType(machine: AnyStateMachine, type: string): boolean {
  const { named, wildcards } = descriptorsOf(machine);
  return named.has(type) || wildcards.some((descriptor) => matchesDescriptor(type, descriptor));
}
