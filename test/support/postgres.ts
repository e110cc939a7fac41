/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries,
 * `initdb` into a fresh temporary directory, a free port on 127.0.0.1, a unix
 * socket in the same directory, `fsync=on`; removed when stopped.
 *
 * PostgreSQL refuses to run as root, so as root the server runs as the
 * `postgres` OS user the Debian package creates (spawned with its uid/gid).
 *
 * Without the binaries the suites that need it skip, loudly; in CI
 * (`process.env.CI`) a missing PostgreSQL fails the run instead.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

/** The superuser the throwaway cluster is created with. */
const USER = 'agentcharts';
/** A database whose default collation is not byte order (ICU en-US), to keep the store honest. */
export const TEST_DATABASE = 'agentcharts_test';

/** Where Debian's PostgreSQL binaries are (`AGENTCHARTS_PG_BIN` overrides), or undefined. */
export function findPostgresBin(): string | undefined {
  const override = process.env['AGENTCHARTS_PG_BIN'];
  const candidates =
    override !== undefined
      ? [override]
      : existsSync('/usr/lib/postgresql')
        ? readdirSync('/usr/lib/postgresql')
            .filter((v) => /^\d+$/.test(v))
            .sort((a, b) => Number(b) - Number(a))
            .map((v) => join('/usr/lib/postgresql', v, 'bin'))
        : [];
  return candidates.find((dir) =>
    ['initdb', 'postgres'].every((bin) => existsSync(join(dir, bin))),
  );
}

let warned = false;

/**
 * Whether PostgreSQL tests can run here. Absent binaries: throws in CI, and
 * otherwise prints a loud SKIPPED banner (once per file) and returns false.
 */
export function postgresAvailable(): boolean {
  if (findPostgresBin() !== undefined) return true;
  const message =
    'PostgreSQL not installed (no initdb/postgres under /usr/lib/postgresql/*/bin); ' +
    'install Debian\'s "postgresql" package (`.ci/run` does)';
  if (process.env['CI']) throw new Error(`PostgreSQL is required in CI: ${message}`);
  if (!warned) {
    warned = true;
    const bar = '!'.repeat(78);
    console.warn(`\n${bar}\n!!! SKIPPED: ${message}\n${bar}\n`);
  }
  return false;
}

/** A running throwaway server. */
export interface PostgresServer {
  readonly port: number;
  readonly password: string;
  /** The temporary directory holding data, socket and log. */
  readonly dir: string;
  /** A URL for `database` (default {@link TEST_DATABASE}) with extra query parameters. */
  url(params?: Record<string, string>, database?: string): string;
  /** A URL of {@link TEST_DATABASE} in a schema no one used before: a fresh, empty store. */
  freshUrl(params?: Record<string, string>): string;
  /** Runs SQL as the superuser on a short-lived connection. */
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    database?: string,
  ): Promise<R[]>;
  /** Stops the server (fast shutdown), keeping its data, for outage tests. */
  stop(): Promise<void>;
  /** Starts it again on the same port after {@link stop}. */
  start(): Promise<void>;
  /** Stops the server and removes every file. */
  destroy(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** uid/gid to run the server as: the `postgres` user when we are root, else ourselves. */
function serverIdentity(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => {
    const out = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    if (out.status !== 0) {
      throw new Error('running as root but there is no "postgres" OS user to run the server as');
    }
    return Number(out.stdout.trim());
  };
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Creates and starts a throwaway cluster with {@link TEST_DATABASE}. Call
 * {@link postgresAvailable} first.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (bin === undefined) throw new Error('PostgreSQL binaries not found');
  const identity = serverIdentity();
  const dir = mkdtempSync(join(tmpdir(), 'agentcharts-pg-'));
  const data = join(dir, 'data');
  const socket = join(dir, 'sock');
  mkdirSync(socket);
  const password = randomBytes(12).toString('hex');
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (identity !== undefined) {
    for (const path of [dir, socket, pwfile]) chownSync(path, identity.uid, identity.gid);
  }
  const asServer = identity ?? {};

  const init = spawnSync(
    join(bin, 'initdb'),
    [
      '-D',
      data,
      '-U',
      USER,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ],
    { ...asServer, encoding: 'utf8', cwd: dir },
  );
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  }

  const port = await freePort();
  let child: ChildProcess | undefined;
  let log = '';

  const url = (params: Record<string, string> = {}, database = TEST_DATABASE) => {
    const query = new URLSearchParams(params).toString();
    return `postgres://${USER}:${password}@127.0.0.1:${port}/${database}${query ? `?${query}` : ''}`;
  };

  const sql = async <R extends pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    database = TEST_DATABASE,
  ): Promise<R[]> => {
    const client = new pg.Client({ connectionString: url({}, database) });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };

  const start = async () => {
    log = '';
    const server = spawn(
      join(bin, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        socket,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=on',
        '-c',
        'max_connections=200',
        '-c',
        'shared_buffers=32MB',
      ],
      { ...asServer, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = server;
    // A test process that exits without its afterAll (a failed hook, an uncaught
    // error) still takes its server down with it.
    const reap = () => server.kill('SIGKILL');
    process.once('exit', reap);
    server.once('exit', () => process.removeListener('exit', reap));
    server.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
    server.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`postgres exited at start-up:\n${log}`);
      try {
        await sql('SELECT 1', [], 'postgres');
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`postgres did not start: ${String(error)}\n${log}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };

  const stop = async () => {
    const server = child;
    child = undefined;
    if (server === undefined || server.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
    server.kill('SIGINT'); // fast shutdown: abort sessions, checkpoint, exit
    const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await start();
    await sql(
      `CREATE DATABASE ${TEST_DATABASE} TEMPLATE template0 ENCODING 'UTF8'
         LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`,
      [],
      'postgres',
    );
  } catch (error) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  let schemas = 0;
  return {
    port,
    password,
    dir,
    url,
    freshUrl: (params = {}) =>
      url({ ...params, schema: `t${process.pid}_${++schemas}_${randomBytes(3).toString('hex')}` }),
    sql,
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A throwaway server for the enclosing `describe` (started in `beforeAll`, removed
 * in `afterAll`); the getter is undefined where no PostgreSQL binaries exist (CI
 * installs them, so there it never is).
 */
export function usePostgres(): () => PostgresServer | undefined {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    if (postgresAvailable()) server = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.destroy();
  });
  return () => server;
}
