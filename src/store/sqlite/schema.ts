/**
 * Versioned schema of the SQLite store. Migrations are applied in order when a
 * store opens; each runs in its own `BEGIN IMMEDIATE` transaction together with
 * its `schema_migrations` row, so a crash or a second process opening the same
 * file never leaves a half-applied version. A database written by a newer
 * agentcharts (a version this build does not know) is refused, never guessed at.
 */
import type Database from 'better-sqlite3';
import { checkMigrations } from '../migrations.ts';
import { OBSERVABILITY_INDEXES, TASK_STATE_CHANGES, backfillStateSince } from '../sql-common.ts';

/** One forward-only schema step. `version` numbers run 1, 2, 3, … without gaps. */
export interface SqliteMigration {
  version: number;
  description: string;
  sql: string;
}

/**
 * The views of the source documents' tables over the log without its key (SQLite
 * version 8): one actor's rows are found through `actor_log`. The same columns
 * and rows as version 5's.
 */
/** The log's columns as version 1 made them (version 8 makes the table again). */
const LOG_COLUMNS = `actor_id TEXT NOT NULL REFERENCES actors (id),
        seq INTEGER NOT NULL,
        from_state TEXT,
        to_state TEXT NOT NULL,
        event_type TEXT NOT NULL,
        event TEXT NOT NULL,
        at INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,`;

/** A message's columns after its id, as version 4 made them (version 8 makes the table again). */
const MESSAGE_COLUMNS = `to_actor TEXT NOT NULL,
        from_actor TEXT NOT NULL,
        from_seq INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('spawn', 'event', 'stop')),
        body TEXT NOT NULL,
        at INTEGER NOT NULL`;

/** The triggers that keep the log append-only (version 1; again in version 8). */
const APPEND_ONLY = `CREATE TRIGGER transitions_no_update BEFORE UPDATE ON transitions
      BEGIN SELECT RAISE(ABORT, 'transitions are append-only'); END;
      CREATE TRIGGER transitions_no_delete BEFORE DELETE ON transitions
      BEGIN SELECT RAISE(ABORT, 'transitions are append-only'); END;`;

/**
 * The `agent_states` view of “Agent State Machine” (v1.0): one row per
 * agent-lifecycle actor, its flat state name, StateMetadata without its null
 * fields, the last 20 transitions, which `recentRows` selects (rows `t` of the
 * actor `a`). Version 5 wrote it over the log's key, version 8 through `actor_log`.
 */
function agentStatesView(recentRows: string): string {
  return `CREATE VIEW agent_states AS
        SELECT a.id AS id,
          json_extract(a.snapshot, '$.context.agent_name') AS agent_name,
          a.user_id AS user_id,
          json_extract(a.snapshot, '$.context.task_id') AS task_id,
          CASE WHEN a.state LIKE 'active.%' THEN substr(a.state, 8) ELSE a.state END
            AS current_state,
          json_patch('{}', json_object(
            'task_id', json_extract(a.snapshot, '$.context.task_id'),
            'plan_id', json_extract(a.snapshot, '$.context.plan_id'),
            'current_step_id', json_extract(a.snapshot, '$.context.current_step_id'),
            'iteration', json_extract(a.snapshot, '$.context.iteration'),
            'confidence', json_extract(a.snapshot, '$.context.confidence'),
            'error', json_extract(a.snapshot, '$.context.error'),
            'waiting_for', json_extract(a.snapshot, '$.context.waiting_for'),
            'paused_from_state', json_extract(a.snapshot, '$.context.paused_from_state'),
            'extra', json(json_extract(a.snapshot, '$.context.extra'))
          )) AS metadata,
          (SELECT json_group_array(json_object(
              'from_state', h.from_state, 'to_state', h.to_state, 'event', json(h.event),
              'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', h.at / 1000.0, 'unixepoch')))
            FROM (${recentRows}) h) AS history,
          strftime('%Y-%m-%dT%H:%M:%fZ', a.created_at / 1000.0, 'unixepoch') AS created_at,
          strftime('%Y-%m-%dT%H:%M:%fZ', a.updated_at / 1000.0, 'unixepoch') AS updated_at
        FROM actors a WHERE a.machine_id = 'agent-lifecycle';`;
}

/** Version 8's {@link agentStatesView}: one actor's rows found through `actor_log`. */
const AGENT_STATES_VIEW =
  agentStatesView(`SELECT t.* FROM actor_log l JOIN transitions t ON t.tx = l.tx
                  WHERE l.actor_id = a.id AND t.from_state IS NOT NULL
                  ORDER BY t.seq DESC LIMIT 20`);

const STATE_TRANSITIONS_VIEW = `CREATE VIEW state_transitions AS
        SELECT t.tx AS id, l.actor_id AS task_id, t.from_state, t.to_state,
          t.event_type AS event,
          strftime('%Y-%m-%dT%H:%M:%fZ', t.at / 1000.0, 'unixepoch') AS timestamp,
          t.metadata
        FROM actor_log l JOIN transitions t ON t.tx = l.tx JOIN actors a ON a.id = l.actor_id
        WHERE a.machine_id = 'task-lifecycle' AND t.from_state IS NOT NULL;`;

/** Every migration this build knows, oldest first. Append only; never edit a released one. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    description: 'actors, append-only transitions, timers, steps, rejections',
    sql: `
      CREATE TABLE actors (
        id TEXT PRIMARY KEY NOT NULL,
        machine_id TEXT NOT NULL,
        chart_version INTEGER NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'done', 'error', 'stopped')),
        snapshot TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        head_hash TEXT NOT NULL
      ) STRICT;
      CREATE INDEX actors_machine_state ON actors (machine_id, state);
      CREATE INDEX actors_status ON actors (status);
      CREATE INDEX actors_state ON actors (state);

      CREATE TABLE transitions (
        ${LOG_COLUMNS}
        PRIMARY KEY (actor_id, seq)
      ) STRICT;
      ${APPEND_ONLY}

      CREATE TABLE timers (
        actor_id TEXT NOT NULL REFERENCES actors (id),
        timer_id TEXT NOT NULL,
        event TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        PRIMARY KEY (actor_id, timer_id)
      ) STRICT;
      CREATE INDEX timers_due_at ON timers (due_at);

      CREATE TABLE steps (
        key TEXT PRIMARY KEY NOT NULL,
        actor_id TEXT NOT NULL,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('executing', 'done', 'failed')),
        result TEXT,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        attempts INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX steps_actor ON steps (actor_id);

      CREATE TABLE rejections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        actor_id TEXT NOT NULL,
        machine_id TEXT NOT NULL,
        state TEXT NOT NULL,
        event_type TEXT NOT NULL,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX rejections_at ON rejections (at);
    `,
  },
  {
    version: 2,
    description: 'actor leases (owner, lease_until) and timer claims (claimed_by, claim_until)',
    sql: `
      ALTER TABLE actors ADD COLUMN owner TEXT;
      ALTER TABLE actors ADD COLUMN lease_until INTEGER;
      CREATE INDEX actors_status_lease ON actors (status, lease_until);

      ALTER TABLE timers ADD COLUMN claimed_by TEXT;
      ALTER TABLE timers ADD COLUMN claim_until INTEGER;
    `,
  },
  {
    version: 3,
    description:
      'observability: actor user and state entry time, indexes for statistics, alerts and the transition feed',
    sql: `
      ALTER TABLE actors ADD COLUMN user_id TEXT;
      ALTER TABLE actors ADD COLUMN state_since INTEGER;
      -- The entry time of the current state: the last row that changed the state label.
      ${backfillStateSince('t.from_state IS NOT t.to_state')}
      -- Covering index of countActors: grouped counts and ages without reading rows.
      -- It and actors_state_since lead with the columns of two version-1 indexes,
      -- which they replace (one index less to maintain per write).
      CREATE INDEX actors_stats ON actors (machine_id, state, status, created_at, updated_at);
      CREATE INDEX actors_state_since ON actors (state, state_since);
      ${OBSERVABILITY_INDEXES}
    `,
  },
  {
    version: 4,
    description:
      'the commit writes only what must survive a crash: read models move to a projection refreshed off the commit path; rows record chart version and snapshot hash',
    sql: `
      -- Every index below was rewritten by every send (the UPDATE set status, and
      -- actors_stats holds updated_at). Unfinished actors (recovery, leases) get a
      -- partial index that changes only when an actor starts or finishes.
      DROP INDEX actors_status;
      DROP INDEX actors_status_lease;
      DROP INDEX actors_stats;
      DROP INDEX actors_state_since;
      DROP INDEX actors_user_state;
      CREATE INDEX actors_active ON actors (id) WHERE status = 'active';

      ALTER TABLE transitions ADD COLUMN chart_version INTEGER;
      ALTER TABLE transitions ADD COLUMN snapshot_hash TEXT;
      DROP INDEX transitions_to_state_at;
      DROP INDEX transitions_at;

      -- Timers keyed by (actor, timer) in one tree instead of a rowid table plus its key index.
      CREATE TABLE timers_by_actor (
        actor_id TEXT NOT NULL REFERENCES actors (id),
        timer_id TEXT NOT NULL,
        event TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        claimed_by TEXT,
        claim_until INTEGER,
        PRIMARY KEY (actor_id, timer_id)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO timers_by_actor
        SELECT actor_id, timer_id, event, due_at, claimed_by, claim_until FROM timers;
      DROP TABLE timers;
      ALTER TABLE timers_by_actor RENAME TO timers;
      CREATE INDEX timers_due_at ON timers (due_at);

      CREATE INDEX steps_executing ON steps (started_at, key) WHERE status = 'executing';

      -- Actors spawned by other actors, and the messages between actors: written in
      -- the sender's commit, deleted in the receiver's (delivered exactly once).
      ALTER TABLE actors ADD COLUMN parent_id TEXT;
      CREATE INDEX actors_parent ON actors (parent_id) WHERE parent_id IS NOT NULL;
      CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        ${MESSAGE_COLUMNS}
      ) STRICT;
      CREATE INDEX messages_to ON messages (to_actor, id);

      -- Derived read models: rebuilt from the authoritative tables at any time
      -- (agentcharts reindex), refreshed off the commit path from the transition log.
      -- read_model.applied is the rowid of the last transition they include; queries
      -- overlay the actors changed after it, so they are exact between refreshes.
      CREATE TABLE actor_index (
        actor_id TEXT PRIMARY KEY NOT NULL,
        machine_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status TEXT NOT NULL,
        user_id TEXT,
        state_since INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX actor_index_stats
        ON actor_index (machine_id, state, status, created_at, updated_at);
      CREATE INDEX actor_index_state_since ON actor_index (state, state_since);
      CREATE INDEX actor_index_user ON actor_index (user_id, state) WHERE user_id IS NOT NULL;
      CREATE TABLE state_entries (
        to_state TEXT NOT NULL,
        at INTEGER NOT NULL,
        actor_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (to_state, at, actor_id, seq)
      ) STRICT, WITHOUT ROWID;
      -- The transition feed by time (tail, streams, inspectors).
      CREATE TABLE transition_feed (
        at INTEGER NOT NULL,
        actor_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (at, actor_id, seq)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE read_model (
        name TEXT PRIMARY KEY NOT NULL,
        applied INTEGER NOT NULL
      ) STRICT;
      INSERT INTO actor_index
        SELECT id, machine_id, state, status, user_id, COALESCE(state_since, updated_at),
          created_at, updated_at FROM actors;
      INSERT INTO state_entries
        SELECT to_state, at, actor_id, seq FROM transitions WHERE from_state IS NOT to_state;
      INSERT INTO transition_feed SELECT at, actor_id, seq FROM transitions;
      INSERT INTO read_model (name, applied)
        VALUES ('transitions', (SELECT COALESCE(MAX(rowid), 0) FROM transitions));
    `,
  },
  {
    version: 5,
    description:
      "the source documents' tables as views: agent_states (Agent State Machine), task_checkpoints and state_transitions (Agent Task Lifecycle), so their own queries run unchanged",
    sql: `
      -- “Agent State Machine” (v1.0): one row per agent-lifecycle actor, its flat
      -- state name, StateMetadata without its null fields, the last 20 transitions.
      ${agentStatesView(`SELECT * FROM transitions t
                  WHERE t.actor_id = a.id AND t.from_state IS NOT NULL
                  ORDER BY t.seq DESC LIMIT 20`)}
      -- “Agent State Machine Design”, StatePersistence: the latest checkpoint per task.
      CREATE VIEW task_checkpoints AS
        SELECT id AS task_id, state,
          COALESCE(json_extract(snapshot, '$.context.retry_count'), 0) AS retry_count,
          COALESCE(json(json_extract(snapshot, '$.context.checkpoint')), '{}') AS checkpoint_data,
          strftime('%Y-%m-%dT%H:%M:%fZ', updated_at / 1000.0, 'unixepoch') AS updated_at
        FROM actors WHERE machine_id = 'task-lifecycle';
      -- Its state_transitions: every transition between states (creation has no
      -- from_state); id orders a task's rows as the document's AUTOINCREMENT did.
      CREATE VIEW state_transitions AS
        SELECT t.rowid AS id, t.actor_id AS task_id, t.from_state, t.to_state,
          t.event_type AS event,
          strftime('%Y-%m-%dT%H:%M:%fZ', t.at / 1000.0, 'unixepoch') AS timestamp,
          t.metadata
        ${TASK_STATE_CHANGES}
    `,
  },
  {
    version: 6,
    description:
      'signed requests remembered until they expire: replays are refused after a restart',
    sql: `
      CREATE TABLE request_nonces (
        key_id TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (key_id, nonce)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX request_nonces_expiry ON request_nonces (expires_at);
    `,
  },
  {
    version: 7,
    description:
      'a commit writes two rows: timers live in the snapshot, the actor row keeps the next one due; the indexes of due and unfinished actors move to the projection refreshed off the commit path',
    sql: `
      -- The earliest due time of the actor's pending timers: from the timers its
      -- snapshot keeps (under "agentcharts"), or, for an actor written before it
      -- kept them there, from its timer rows. Finished actors have none.
      ALTER TABLE actors ADD COLUMN next_due_at INTEGER;
      UPDATE actors SET next_due_at = CASE
          WHEN json_valid(snapshot) AND json_type(snapshot, '$.agentcharts') IS NOT NULL
          THEN (SELECT MIN(json_extract(j.value, '$.due'))
                FROM json_each(snapshot, '$.agentcharts.timers') j)
          ELSE (SELECT MIN(t.due_at) FROM timers t WHERE t.actor_id = actors.id)
        END
        WHERE status = 'active';

      -- Timer rows stay only for actors whose snapshot keeps no timers of its own
      -- (read when such an actor loads; gone once it commits). The others' rows are
      -- what their snapshot already says.
      CREATE TABLE legacy_timers (
        actor_id TEXT NOT NULL,
        timer_id TEXT NOT NULL,
        event TEXT NOT NULL,
        due_at INTEGER NOT NULL,
        PRIMARY KEY (actor_id, timer_id)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO legacy_timers
        SELECT t.actor_id, t.timer_id, t.event, t.due_at FROM timers t
        JOIN actors a ON a.id = t.actor_id
        WHERE a.status = 'active' AND CASE WHEN json_valid(a.snapshot)
          THEN json_type(a.snapshot, '$.agentcharts') IS NULL ELSE 1 END;
      DROP TABLE timers;

      -- Due and unfinished actors are found through the projection: arming,
      -- moving or clearing a timer, creating or finishing an actor, touch no index
      -- in the commit.
      ALTER TABLE actor_index ADD COLUMN next_due_at INTEGER;
      UPDATE actor_index
        SET next_due_at = (SELECT a.next_due_at FROM actors a WHERE a.id = actor_index.actor_id);
      CREATE INDEX actor_index_due ON actor_index (next_due_at) WHERE next_due_at IS NOT NULL;
      CREATE INDEX actor_index_active ON actor_index (actor_id) WHERE status = 'active';
      DROP INDEX actors_active;
    `,
  },
  {
    version: 8,
    description:
      "a commit writes two B-trees: the log loses its (actor, seq) key, found instead through the actor row's head and a projection folded off the commit path; message ids are never reused",
    sql: `
      -- The actor row names its newest log row: loading an actor reads its head by
      -- that id, exactly, on any connection.
      ALTER TABLE actors ADD COLUMN head_tx INTEGER;
      UPDATE actors SET head_tx =
        (SELECT t.rowid FROM transitions t WHERE t.actor_id = actors.id AND t.seq = actors.version);

      -- The log's (actor, seq) key, as a read model: refreshed with the others off
      -- the commit path; reads of one actor's log overlay the rows logged since.
      -- Keyed by the row too, so two rows at one seq (a hand-edited file) both show.
      CREATE TABLE transition_keys (
        actor_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        tx INTEGER NOT NULL,
        PRIMARY KEY (actor_id, seq, tx)
      ) STRICT, WITHOUT ROWID;

      -- The log again, without its key; tx is the row id made explicit, so nothing
      -- (VACUUM included) renumbers it.
      DROP VIEW agent_states;
      DROP VIEW state_transitions;
      CREATE TABLE transitions_v8 (
        tx INTEGER PRIMARY KEY,
        ${LOG_COLUMNS}
        chart_version INTEGER,
        snapshot_hash TEXT
      ) STRICT;
      INSERT INTO transitions_v8 (tx, actor_id, seq, from_state, to_state, event_type, event,
          at, metadata, prev_hash, hash, chart_version, snapshot_hash)
        SELECT rowid, actor_id, seq, from_state, to_state, event_type, event,
          at, metadata, prev_hash, hash, chart_version, snapshot_hash
        FROM transitions ORDER BY rowid;
      DROP TABLE transitions;
      ALTER TABLE transitions_v8 RENAME TO transitions;
      ${APPEND_ONLY}
      INSERT INTO transition_keys
        SELECT actor_id, seq, tx FROM transitions
        WHERE tx <= (SELECT applied FROM read_model WHERE name = 'transitions');

      -- Message ids are never handed out twice. SQLite gives a plain INTEGER PRIMARY
      -- KEY the largest id plus one, so delivering the newest message freed its id
      -- for the next one, and a deliverer that had read the delivered message (and
      -- retried after a conflict, at the receiver's new version) consumed the newer
      -- message in its place: one event applied twice, another lost.
      CREATE TABLE messages_v8 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ${MESSAGE_COLUMNS}
      ) STRICT;
      INSERT INTO messages_v8 (id, to_actor, from_actor, from_seq, idx, kind, body, at)
        SELECT id, to_actor, from_actor, from_seq, idx, kind, body, at FROM messages;
      DROP TABLE messages;
      ALTER TABLE messages_v8 RENAME TO messages;
      CREATE INDEX messages_to ON messages (to_actor, id);

      -- One actor's log rows: the projection's, and those logged since it was refreshed.
      CREATE VIEW actor_log (actor_id, seq, tx) AS
        SELECT actor_id, seq, tx FROM transition_keys
        UNION ALL
        SELECT actor_id, seq, tx FROM transitions
          WHERE tx > (SELECT applied FROM read_model WHERE name = 'transitions');

      ${AGENT_STATES_VIEW}
      ${STATE_TRANSITIONS_VIEW}
    `,
  },
];

/** The schema version this build writes. */
export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

/** The version recorded in `schema_migrations`, 0 for a fresh database. */
export function sqliteSchemaVersion(db: Database.Database): number {
  const table = db
    .prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`)
    .get();
  if (table === undefined) return 0;
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as {
    v: number | null;
  };
  return row.v ?? 0;
}

/**
 * Brings the database to the newest version in `migrations`, in place. Returns the
 * versions before and after. Throws StoreError (`migrate`, kind `schema_too_new`)
 * when the database is newer than `migrations` knows.
 */
export function migrateSqlite(
  db: Database.Database,
  migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS,
): { from: number; to: number } {
  const { latest, tooNew } = checkMigrations(migrations);
  const from = sqliteSchemaVersion(db);
  if (from > latest) throw tooNew(from);
  // Read-only connections open a current database without writing anything.
  if (from === latest) return { from, to: latest };

  const step = db.transaction((m: SqliteMigration) => {
    // Re-read under the write lock: another process may have migrated meanwhile.
    const current = sqliteSchemaVersion(db);
    if (current > latest) throw tooNew(current);
    if (current >= m.version) return;
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(
      m.version,
      Date.now(),
    );
  });
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  );
  for (const m of migrations.slice(from)) step.immediate(m);
  return { from, to: latest };
}
