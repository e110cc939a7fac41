/** What `verify` reports. */

/** One integrity problem found by {@link verify}. */
export interface VerifyProblem {
  actorId: string;
  kind:
    | 'chain'
    | 'sequence'
    | 'replay'
    | 'snapshot'
    | 'unknown_machine'
    | 'missing_actor'
    | 'version'
    | 'message'
    /** The actor row's state or status differs from its log. */
    | 'state'
    | 'status'
    /** The actor row's parent differs from the one its creation row names. */
    | 'parent'
    /** The timer rows differ from what the actor has pending. */
    | 'timers';
  /** The first bad row, when the problem is in a row. */
  seq?: number;
  detail: string;
}

/**
 * Where replay restarted from a migration row's recorded snapshot because the
 * chart version before (or after) it is not registered: the rows of that segment
 * were checked by their hash chain only.
 */
export interface VerifyCheckpoint {
  actorId: string;
  /** The migration row. */
  seq: number;
  from: number;
  to: number;
  reason: string;
}

/** An actor stored at a chart version `verify` was not given: its rows were not replayed. */
export interface VerifyUnverifiable {
  actorId: string;
  machineId: string;
  chartVersion: number;
  reason: string;
}

export interface VerifyReport {
  ok: boolean;
  actorsChecked: number;
  rowsChecked: number;
  problems: VerifyProblem[];
  /** Replay checkpoints at migrations (not problems). */
  checkpoints: VerifyCheckpoint[];
  /** Actors at a chart version not registered: not verifiable here (not problems). */
  notVerifiable: VerifyUnverifiable[];
}
