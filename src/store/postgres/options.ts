/* The store's options, apart from the store so that `openStore` can name them without `pg`'s types. */

/** How the PostgreSQL store connects. Each has a URL parameter (see `parseStoreUrl`). */
export interface PostgresStoreOptions {
  /**
   * Server-side `statement_timeout` in ms for every statement (`statement_timeout=`);
   * a statement running longer fails with kind `timeout`. Default: none.
   */
  statementTimeoutMs?: number | undefined;
  /** Milliseconds to wait for a connection (`connect_timeout=`, seconds in the URL). Default 10000. */
  connectTimeoutMs?: number | undefined;
  /**
   * How many times a statement or transaction of the store (a commit's, or any
   * other: a message dropped, a lease taken, a read model refreshed) that
   * PostgreSQL rolled back for a deadlock or a serialization failure (SQLSTATE
   * `40P01`, `40001`) is run again, after a short random wait, before the
   * operation fails with kind `conflict` (`rollback_retries=`). Such a failure
   * wrote nothing, so running it again is safe. Default 3; 0 never retries.
   * (Not the runtime's `conflictRetries`, which sends an event again after its
   * compare-and-set lost a race.)
   */
  rollbackRetries?: number | undefined;
  /** Connections in the pool (`pool_max=`). Default 10. */
  poolMax?: number | undefined;
  /**
   * The schema holding agentcharts' tables (`schema=`), created if missing, so
   * several deployments can share one database. Default: the server's
   * `search_path` (normally `public`).
   */
  schema?: string | undefined;
  /**
   * How long after a commit the derived read models are refreshed, in ms (default
   * 250; 0 turns the background refresh off — queries stay exact).
   */
  readModelRefreshMs?: number | undefined;
}
