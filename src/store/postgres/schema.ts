/**
 * Versioned schema of the PostgreSQL store. Pending migrations are applied when a
 * store first connects, in one transaction (PostgreSQL DDL is transactional) under
 * an advisory lock, so workers starting together never race each other and a
 * failure leaves the previous version intact. A database written by a newer
 * agentcharts (a version this build does not know) is refused, never guessed at.
 *
 * Text columns that are ordered or compared (ids, keys) use the `"C"` collation:
 * byte order, the same order SQLite's BINARY collation and the memory store give,
 * whatever the database's locale.
 */
import type { ClientBase } from 'pg';
import { checkMigrations } from '../migrations.ts';
import { OBSERVABILITY_INDEXES, TASK_STATE_CHANGES, backfillStateSince } from '../sql-common.ts';
import { hasMethods, requireArg, requireOptions } from '../../core/options.ts';

/** One forward-only schema step. `version` numbers run 1, 2, 3, … without gaps. */
export interface PostgresMigration {
  version: number;
  description: string;
  sql: string;
}

/** Every migration this build knows, oldest first. Append only; never edit a released one. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    description: 'actors with leases, append-only transitions, claimable timers, steps, rejections',
    sql: `
      CREATE TABLE actors (
        id TEXT COLLATE "C" PRIMARY KEY,
        machine_id TEXT COLLATE "C" NOT NULL,
        chart_version INTEGER NOT NULL,
        version INTEGER NOT NULL,
        state TEXT COLLATE "C" NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'done', 'error', 'stopped')),
        snapshot TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        head_hash TEXT NOT NULL,
        owner TEXT,
        lease_until BIGINT
      );
      CREATE INDEX actors_machine_state ON actors (machine_id, state);
      CREATE INDEX actors_status ON actors (status);
      CREATE INDEX actors_state ON actors (state);
      CREATE INDEX actors_status_lease ON actors (status, lease_until);

      CREATE TABLE transitions (
        actor_id TEXT COLLATE "C" NOT NULL REFERENCES actors (id),
        seq INTEGER NOT NULL,
        from_state TEXT,
        to_state TEXT NOT NULL,
        event_type TEXT NOT NULL,
        event TEXT NOT NULL,
        at BIGINT NOT NULL,
        metadata TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (actor_id, seq)
      );
      CREATE FUNCTION agentcharts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'transitions are append-only' USING ERRCODE = 'restrict_violation';
      END
      $$;
      CREATE TRIGGER transitions_no_update BEFORE UPDATE OR DELETE ON transitions
        FOR EACH ROW EXECUTE FUNCTION agentcharts_append_only();
      CREATE TRIGGER transitions_no_truncate BEFORE TRUNCATE ON transitions
        FOR EACH STATEMENT EXECUTE FUNCTION agentcharts_append_only();

      CREATE TABLE timers (
        actor_id TEXT COLLATE "C" NOT NULL REFERENCES actors (id),
        timer_id TEXT COLLATE "C" NOT NULL,
        event TEXT NOT NULL,
        due_at BIGINT NOT NULL,
        claimed_by TEXT,
        claim_until BIGINT,
        PRIMARY KEY (actor_id, timer_id)
      );
      CREATE INDEX timers_due_at ON timers (due_at);

      CREATE TABLE steps (
        key TEXT COLLATE "C" PRIMARY KEY,
        actor_id TEXT COLLATE "C" NOT NULL,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('executing', 'done', 'failed')),
        result TEXT,
        started_at BIGINT NOT NULL,
        finished_at BIGINT,
        attempts INTEGER NOT NULL
      );
      CREATE INDEX steps_actor ON steps (actor_id);

      CREATE TABLE rejections (
        id BIGSERIAL PRIMARY KEY,
        actor_id TEXT COLLATE "C" NOT NULL,
        machine_id TEXT NOT NULL,
        state TEXT NOT NULL,
        event_type TEXT NOT NULL,
        reason TEXT NOT NULL,
        at BIGINT NOT NULL
      );
      CREATE INDEX rejections_at ON rejections (at);
    `,
  },
  {
    version: 2,
    description:
      'observability: actor user and state entry time, indexes for statistics, alerts and the transition feed',
    sql: `
      ALTER TABLE actors ADD COLUMN user_id TEXT COLLATE "C";
      ALTER TABLE actors ADD COLUMN state_since BIGINT;
      -- The entry time of the current state: the last row that changed the state label.
      ${backfillStateSince('t.from_state IS DISTINCT FROM t.to_state')}
      CREATE INDEX actors_stats ON actors (machine_id, state, status)
        INCLUDE (created_at, updated_at);
      CREATE INDEX actors_state_since ON actors (state, state_since);
      -- These two lead with the columns of version-1 indexes, which they replace.
      ${OBSERVABILITY_INDEXES}
    `,
  },
  {
    version: 3,
    description: 'transition rows record the chart version and the snapshot hash',
    sql: `
      ALTER TABLE transitions ADD COLUMN chart_version INTEGER;
      ALTER TABLE transitions ADD COLUMN snapshot_hash TEXT;
    `,
  },
  {
    version: 4,
    description: 'actors spawned by actors, and messages between actors',
    sql: `
      ALTER TABLE actors ADD COLUMN parent_id TEXT COLLATE "C";
      CREATE INDEX actors_parent ON actors (parent_id) WHERE parent_id IS NOT NULL;
      CREATE TABLE messages (
        id BIGSERIAL PRIMARY KEY,
        to_actor TEXT COLLATE "C" NOT NULL,
        from_actor TEXT COLLATE "C" NOT NULL,
        from_seq INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('spawn', 'event', 'stop')),
        body TEXT NOT NULL,
        at BIGINT NOT NULL
      );
      CREATE INDEX messages_to ON messages (to_actor, id);
    `,
  },
  {
    version: 5,
    description:
      'the commit writes only what must survive a crash: read models move to a projection refreshed off the commit path, watermarked by transaction id',
    sql: `
      -- Every index below held a column some sends change.
      DROP INDEX IF EXISTS actors_stats;
      DROP INDEX IF EXISTS actors_state_since;
      DROP INDEX IF EXISTS actors_user_state;
      DROP INDEX IF EXISTS actors_status;
      DROP INDEX IF EXISTS actors_status_lease;
      DROP INDEX IF EXISTS transitions_to_state_at;
      CREATE INDEX actors_active ON actors (id) WHERE status = 'active';
      CREATE INDEX steps_executing ON steps (started_at, key) WHERE status = 'executing';
      -- Room on each page, so an update of the actor row stays a heap-only tuple.
      ALTER TABLE actors SET (fillfactor = 80);

      -- The transaction that wrote each row: a refresh folds in every row of the
      -- transactions below the oldest one still running (all of them finished).
      ALTER TABLE transitions ADD COLUMN tx xid8;
      ALTER TABLE transitions ALTER COLUMN tx SET DEFAULT pg_current_xact_id();
      CREATE INDEX transitions_tx ON transitions (tx);

      CREATE TABLE actor_index (
        actor_id TEXT COLLATE "C" PRIMARY KEY,
        machine_id TEXT COLLATE "C" NOT NULL,
        state TEXT COLLATE "C" NOT NULL,
        status TEXT NOT NULL,
        user_id TEXT COLLATE "C",
        state_since BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX actor_index_stats ON actor_index (machine_id, state, status)
        INCLUDE (created_at, updated_at);
      CREATE INDEX actor_index_state_since ON actor_index (state, state_since);
      CREATE INDEX actor_index_user ON actor_index (user_id, state) WHERE user_id IS NOT NULL;
      CREATE TABLE state_entries (
        to_state TEXT COLLATE "C" NOT NULL,
        at BIGINT NOT NULL,
        actor_id TEXT COLLATE "C" NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (to_state, at, actor_id, seq)
      );
      CREATE TABLE read_model (name TEXT PRIMARY KEY, applied xid8 NOT NULL);
      INSERT INTO actor_index
        SELECT id, machine_id, state, status, user_id, COALESCE(state_since, updated_at),
          created_at, updated_at FROM actors;
      INSERT INTO state_entries
        SELECT to_state, at, actor_id, seq FROM transitions
        WHERE from_state IS DISTINCT FROM to_state;
      INSERT INTO read_model VALUES ('transitions', pg_snapshot_xmin(pg_current_snapshot()));
    `,
  },
  {
    version: 6,
    description:
      "the source documents' tables as views: agent_states (Agent State Machine), task_checkpoints and state_transitions (Agent Task Lifecycle), so their own queries run unchanged",
    sql: `
      -- "Agent State Machine" (v1.0): one row per agent-lifecycle actor, its flat
      -- state name, StateMetadata without its null fields, the last 20 transitions.
      CREATE VIEW agent_states AS
        SELECT a.id AS id,
          (a.snapshot::jsonb) -> 'context' ->> 'agent_name' AS agent_name,
          a.user_id AS user_id,
          (a.snapshot::jsonb) -> 'context' ->> 'task_id' AS task_id,
          CASE WHEN a.state LIKE 'active.%' THEN substr(a.state, 8) ELSE a.state END
            AS current_state,
          jsonb_strip_nulls(jsonb_build_object(
            'task_id', (a.snapshot::jsonb) -> 'context' -> 'task_id',
            'plan_id', (a.snapshot::jsonb) -> 'context' -> 'plan_id',
            'current_step_id', (a.snapshot::jsonb) -> 'context' -> 'current_step_id',
            'iteration', (a.snapshot::jsonb) -> 'context' -> 'iteration',
            'confidence', (a.snapshot::jsonb) -> 'context' -> 'confidence',
            'error', (a.snapshot::jsonb) -> 'context' -> 'error',
            'waiting_for', (a.snapshot::jsonb) -> 'context' -> 'waiting_for',
            'paused_from_state', (a.snapshot::jsonb) -> 'context' -> 'paused_from_state',
            'extra', (a.snapshot::jsonb) -> 'context' -> 'extra'
          )) AS metadata,
          COALESCE((SELECT jsonb_agg(jsonb_build_object(
              'from_state', h.from_state, 'to_state', h.to_state, 'event', h.event::jsonb,
              'timestamp', to_timestamp(h.at / 1000.0)) ORDER BY h.seq)
            FROM (SELECT * FROM transitions t
                  WHERE t.actor_id = a.id AND t.from_state IS NOT NULL
                  ORDER BY t.seq DESC LIMIT 20) h), '[]'::jsonb) AS history,
          to_timestamp(a.created_at / 1000.0) AS created_at,
          to_timestamp(a.updated_at / 1000.0) AS updated_at
        FROM actors a WHERE a.machine_id = 'agent-lifecycle';
      -- "Agent State Machine Design", StatePersistence: the latest checkpoint per task.
      CREATE VIEW task_checkpoints AS
        SELECT id AS task_id, state,
          COALESCE(((snapshot::jsonb) -> 'context' ->> 'retry_count')::integer, 0) AS retry_count,
          COALESCE(NULLIF((snapshot::jsonb) -> 'context' -> 'checkpoint', 'null'::jsonb),
            '{}'::jsonb)::text AS checkpoint_data,
          to_timestamp(updated_at / 1000.0) AS updated_at
        FROM actors WHERE machine_id = 'task-lifecycle';
      -- Its state_transitions: every transition between states (creation has no
      -- from_state); id orders a task's rows as the document's AUTOINCREMENT did.
      CREATE VIEW state_transitions AS
        SELECT t.seq AS id, t.actor_id AS task_id, t.from_state, t.to_state,
          t.event_type AS event, to_timestamp(t.at / 1000.0) AS timestamp, t.metadata
        ${TASK_STATE_CHANGES}
    `,
  },
  {
    version: 7,
    description:
      'signed requests remembered until they expire: replays are refused after a restart',
    sql: `
      CREATE TABLE request_nonces (
        key_id TEXT COLLATE "C" NOT NULL,
        nonce TEXT COLLATE "C" NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (key_id, nonce)
      );
      CREATE INDEX request_nonces_expiry ON request_nonces (expires_at);
    `,
  },
  {
    version: 8,
    description:
      'a commit writes two rows: timers live in the snapshot, the actor row keeps the next one due; the indexes of due and unfinished actors move to the projection refreshed off the commit path',
    sql: `
      -- What a snapshot keeps pending (its "agentcharts" key), NULL when it keeps
      -- nothing of its own (written before it did) or is not JSON; and the earliest
      -- due time of its timers. Used by this migration only.
      CREATE FUNCTION agentcharts_v8_pending(snapshot text) RETURNS jsonb
        LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN snapshot::jsonb -> 'agentcharts';
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END
      $$;
      CREATE FUNCTION agentcharts_v8_next_due(pending jsonb) RETURNS bigint
        LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN (SELECT MIN((j ->> 'due')::numeric)::bigint
                FROM jsonb_array_elements(pending -> 'timers') j);
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END
      $$;

      ALTER TABLE actors ADD COLUMN next_due_at BIGINT;
      UPDATE actors a SET next_due_at = CASE WHEN p.pending IS NOT NULL
          THEN agentcharts_v8_next_due(p.pending)
          ELSE (SELECT MIN(t.due_at) FROM timers t WHERE t.actor_id = a.id)
        END
        FROM (SELECT id, agentcharts_v8_pending(snapshot) AS pending FROM actors
              WHERE status = 'active') p
        WHERE a.id = p.id;

      -- Timer rows stay only for actors whose snapshot keeps no timers of its own
      -- (read when such an actor loads; gone once it commits).
      CREATE TABLE legacy_timers (
        actor_id TEXT COLLATE "C" NOT NULL,
        timer_id TEXT COLLATE "C" NOT NULL,
        event TEXT NOT NULL,
        due_at BIGINT NOT NULL,
        PRIMARY KEY (actor_id, timer_id)
      );
      INSERT INTO legacy_timers
        SELECT t.actor_id, t.timer_id, t.event, t.due_at FROM timers t
        JOIN actors a ON a.id = t.actor_id
        WHERE a.status = 'active' AND agentcharts_v8_pending(a.snapshot) IS NULL;
      DROP TABLE timers;
      DROP FUNCTION agentcharts_v8_next_due(jsonb);
      DROP FUNCTION agentcharts_v8_pending(text);

      -- Due and unfinished actors are found through the projection: no index of
      -- actors holds a column a commit changes, so every update is heap-only.
      ALTER TABLE actor_index ADD COLUMN next_due_at BIGINT;
      UPDATE actor_index i SET next_due_at = a.next_due_at FROM actors a
        WHERE a.id = i.actor_id AND a.next_due_at IS NOT NULL;
      CREATE INDEX actor_index_due ON actor_index (next_due_at, actor_id)
        WHERE next_due_at IS NOT NULL;
      CREATE INDEX actor_index_active ON actor_index (actor_id) WHERE status = 'active';
      DROP INDEX actors_active;
    `,
  },
];

/** The schema version this build writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** Throws InvalidOptionsError unless `client` is a pg client. */
function requireClient(fn: string, client: unknown): void {
  requireArg(fn, 'client', hasMethods(client, 'query'), 'a pg client (pool.connect())');
}

/**
 * The version recorded in `schema_migrations` of the connection's current schema
 * (the first of its `search_path`), 0 when the table does not exist.
 */
export async function postgresSchemaVersion(client: ClientBase): Promise<number> {
  requireClient('postgresSchemaVersion', client);
  const table = await client.query<{ t: string | null }>(
    `SELECT to_regclass(quote_ident(current_schema()) || '.schema_migrations')::text AS t`,
  );
  if (table.rows[0]?.t == null) return 0;
  const row = await client.query<{ v: number | null }>(
    'SELECT MAX(version) AS v FROM schema_migrations',
  );
  return row.rows[0]?.v ?? 0;
}

/** Options of {@link migratePostgres}. */
export interface MigratePostgresOptions {
  /** The migrations to apply; default {@link POSTGRES_MIGRATIONS}. */
  migrations?: readonly PostgresMigration[];
  /**
   * A schema to create if missing; the connection's `search_path` must already
   * name it first (the store sets it at connect time).
   */
  schema?: string | undefined;
}

/**
 * Brings the database to the newest version in `migrations`, in place, on
 * `client` (a dedicated connection). Returns the versions before and after.
 * Throws StoreError (`migrate`): kind `schema_too_new` when the database is newer
 * than this build knows, `bad_migration` when the list has a gap.
 *
 * @example
 * const client = await pool.connect();
 * try { await migratePostgres(client); } finally { client.release(); }
 */
export async function migratePostgres(
  client: ClientBase,
  options: MigratePostgresOptions = {},
): Promise<{ from: number; to: number }> {
  requireClient('migratePostgres', client);
  requireOptions('migratePostgres', options);
  const migrations = options.migrations ?? POSTGRES_MIGRATIONS;
  const { latest, tooNew } = checkMigrations(migrations);

  // Read first without locking or writing: an up-to-date database (the common
  // case, and the only one a read-only standby can serve) costs two reads.
  const before =
    options.schema === undefined || (await schemaExists(client, options.schema))
      ? await postgresSchemaVersion(client)
      : 0;
  if (before > latest) throw tooNew(before);
  if (before === latest) return { from: before, to: latest };

  await client.query('BEGIN');
  try {
    // One lock per schema, taken before anything else (CREATE SCHEMA included):
    // workers sharing a database migrate one at a time, and the others find the
    // work done when they get the lock.
    await client.query(
      `SELECT pg_advisory_xact_lock(
         hashtextextended('agentcharts.migrate.' || COALESCE($1::text, current_schema()), 0))`,
      [options.schema ?? null],
    );
    if (options.schema !== undefined) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(options.schema)}`);
    }
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version INTEGER PRIMARY KEY,
         description TEXT NOT NULL,
         applied_at BIGINT NOT NULL
       )`,
    );
    const from = await postgresSchemaVersion(client);
    if (from > latest) throw tooNew(from);
    for (const m of migrations.slice(from)) {
      await client.query(m.sql);
      await client.query(
        'INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)',
        [m.version, m.description, Date.now()],
      );
    }
    await client.query('COMMIT');
    return { from, to: latest };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

async function schemaExists(client: ClientBase, schema: string): Promise<boolean> {
  const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return found.rowCount === 1;
}

/** A schema name the store accepts: lower-case identifier, no quoting needed. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Quotes an identifier already checked against {@link SCHEMA_NAME}. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
