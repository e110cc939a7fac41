/**
 * The root `meta.events` of a chart, written compactly: an event whose metadata is
 * only its description is given as that text (`START: 'Begin.'`), any other as its
 * metadata (`kind`, `roles`, `signer`, `description`: see src/core/meta.ts).
 */
import type { EventKind } from '../src/core/meta.ts';

/** The metadata of one event, as a chart declares it (src/core/meta.ts checks it). */
export interface EventMeta {
  readonly kind?: EventKind;
  readonly roles?: readonly string[];
  readonly description?: string;
  readonly signer?: string;
}

/**
 * `meta.events` from descriptions and metadata, in the order given; the literal
 * types are kept, as in a config written inline.
 *
 * @example
 * eventMeta({ START: 'Begin.', APPROVE: { kind: 'approval', description: 'A person approves.' } });
 * // { START: { description: 'Begin.' }, APPROVE: { kind: 'approval', description: 'A person approves.' } }
 */
export function eventMeta<const T extends Readonly<Record<string, string | EventMeta>>>(
  events: T,
): { -readonly [K in keyof T]: T[K] extends string ? { description: T[K] } : T[K] } {
  return Object.fromEntries(
    Object.entries(events).map(([type, meta]) => [
      type,
      typeof meta === 'string' ? { description: meta } : meta,
    ]),
  ) as never;
}
