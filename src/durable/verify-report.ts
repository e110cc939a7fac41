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
    | 'message';
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

export interface VerifyReport {
  ok: boolean;
  actorsChecked: number;
  rowsChecked: number;
  problems: VerifyProblem[];
  /** Replay checkpoints at migrations (not problems). */
  checkpoints: VerifyCheckpoint[];
}
