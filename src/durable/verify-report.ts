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

export interface VerifyReport {
  ok: boolean;
  actorsChecked: number;
  rowsChecked: number;
  problems: VerifyProblem[];
}
