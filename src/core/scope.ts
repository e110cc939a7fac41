/** Actor scopes: which actor ids a credential may address. */

/**
 * Whether `actorId` is in `patterns` (exact ids, or prefixes ending in `*`);
 * `undefined` patterns cover every actor.
 *
 * @example
 * coversActor(['refund-*'], 'refund-42'); // true
 */
export function coversActor(patterns: readonly string[] | undefined, actorId: string): boolean {
  if (patterns === undefined) return true;
  return patterns.some((pattern) =>
    pattern.endsWith('*') ? actorId.startsWith(pattern.slice(0, -1)) : pattern === actorId,
  );
}
