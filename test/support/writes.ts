import type { ActorWrite } from '../../src/store/types.ts';

/** A minimal write moving `actorId` to `version` (1 creates it), for store-specific tests. */
export function write(actorId: string, version: number, snapshot = '{"value":"s"}'): ActorWrite {
  const at = 1_000 + version;
  return {
    actorId,
    expectedVersion: version - 1,
    actor: {
      id: actorId,
      machineId: 'm',
      chartVersion: 1,
      version,
      state: `s${version}`,
      status: 'active',
      snapshot,
      createdAt: at,
      updatedAt: at,
      headHash: `h${version}`,
    },
    transition: {
      actorId,
      seq: version,
      fromState: version === 1 ? null : `s${version - 1}`,
      toState: `s${version}`,
      eventType: 'NEXT',
      event: '{"type":"NEXT"}',
      at,
      metadata: '{}',
      prevHash: `h${version - 1}`,
      hash: `h${version}`,
      chartVersion: null,
      snapshotHash: null,
    },
  };
}
