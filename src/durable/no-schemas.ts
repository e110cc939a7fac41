/**
 * A durable actor whose machine declares no event schemas checks events by type
 * alone: a payload with a wrong, missing or extra field is committed as sent. That
 * is said once per machine id, as a process warning a program can listen for
 * (`process.on('warning')`, by `name` or `code`), unless the caller said
 * `schemas: false` (by type alone, on purpose).
 */
import type { AnyStateMachine } from 'xstate';

/** The warning emitted, once per machine id, for a durable actor created without event schemas. */
export class NoEventSchemasWarning extends Error {
  override name = 'NoEventSchemasWarning';
  readonly code = 'AGENTCHARTS_NO_EVENT_SCHEMAS';
  readonly machineId: string;
  constructor(machineId: string) {
    super(
      `durable actors of machine "${machineId}" check events by type alone: it has no event schemas. Pass schemas, define its chart with events (defineChart(machine, { events })), or pass schemas: false to mean it`,
    );
    this.machineId = machineId;
  }
}

const warned = new Set<string>();

/** Emits {@link NoEventSchemasWarning} for `machine`'s id, the first time only. */
export function warnNoEventSchemas(machine: AnyStateMachine): void {
  if (warned.has(machine.id)) return;
  warned.add(machine.id);
  process.emitWarning(new NoEventSchemasWarning(machine.id));
}
