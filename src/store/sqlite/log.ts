/**
 * How SQLite's transition log is read and appended to (version 8). The log is a
 * rowid table with no other key: a commit writes two B-trees, the actor row's
 * and the log's. An actor's newest row is the one its actor row names
 * (`head_tx`); the rest of its rows are found through the read model
 * `transition_keys`, with the rows logged since its last refresh overlaid (the
 * view `actor_log`).
 */

/**
 * The id the write's log row gets, which its actor row names as its head. The log
 * row is inserted last in the write with no id given, and SQLite gives an INTEGER
 * PRIMARY KEY the largest one plus one (the writer holds the write lock).
 */
export const NEXT_TX = '(SELECT COALESCE(MAX(tx), 0) + 1 FROM transitions)';

/** A log row `t` as a TransitionRow. */
export const LOG_ROW_COLUMNS = `t.actor_id AS actorId, t.seq, t.from_state AS fromState,
  t.to_state AS toState, t.event_type AS eventType, t.event, t.at, t.metadata,
  t.prev_hash AS prevHash, t.hash, t.chart_version AS chartVersion,
  t.snapshot_hash AS snapshotHash`;

/** One actor's log rows `t`, for a `FROM`: filter and order by `l.actor_id`, `l.seq`, `l.tx`. */
export const ACTOR_LOG = 'actor_log l JOIN transitions t ON t.tx = l.tx';
