/**
 * The root `meta.events` of a chart, written compactly: an event whose metadata is
 * only its description is given as that text (`START: 'Begin.'`), any other as its
 * metadata (`kind`, `roles`, `signer`, `description`: see src/core/meta.ts).
 */
import type * as z from 'zod';
import type { eventMetaSchema } from '../src/core/meta.ts';

/** The metadata of one event, as a chart declares it. */
export type EventMeta = z.input<typeof eventMetaSchema>;

/**
 * `meta.events` from descriptions and metadata, in the order given.
 *
 * @example
 * eventMeta({ START: 'Begin.', APPROVE: { kind: 'approval', description: 'A person approves.' } });
 * // { START: { description: 'Begin.' }, APPROVE: { kind: 'approval', description: 'A person approves.' } }
 */
export function eventMeta(
  events: Readonly<Record<string, string | EventMeta>>,
): Record<string, EventMeta> {
  return Object.fromEntries(
    Object.entries(events).map(([type, meta]) => [
      type,
      typeof meta === 'string' ? { description: meta } : meta,
    ]),
  );
}
