/**
 * The store a command works on: `--store <url>` or `--db <file>`, else the
 * config file's `store`, else `./agentcharts.db`.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_SQLITE_FILE, openStore, parseStoreUrl } from '../store/open.ts';
import type { Store } from '../store/types.ts';
import { loadedConfig } from './config-file.ts';
import { CliOptionError } from './paths.ts';

/** The options `--store <url>` and `--db <file>`. */
export interface StoreOptions {
  db?: string;
  store?: string;
}

/**
 * The store URL a command opens: `--store`, else `--db`, else the config file's
 * `store`, else `sqlite:./agentcharts.db`.
 */
export function storeUrlFor(opts: StoreOptions): string {
  if (opts.store !== undefined) return opts.store;
  if (opts.db !== undefined) return `sqlite:${opts.db}`;
  return loadedConfig()?.store ?? `sqlite:${DEFAULT_SQLITE_FILE}`;
}

/**
 * Opens the store `--db <file>` or `--store <url>` names (default
 * `./agentcharts.db`) for a command that works on existing data: a missing
 * SQLite file is an error, never silently created, and a private in-memory
 * store is refused because it holds nothing another process wrote.
 */
export function openExistingStore(opts: StoreOptions): { store: Store; where: string } {
  if (opts.db !== undefined && opts.store !== undefined) {
    throw new CliOptionError('--db', 'give --db <file> or --store <url>, not both');
  }
  const option = opts.store !== undefined ? '--store' : '--db';
  const url = storeUrlFor(opts);
  const parsed = parseStoreUrl(url);
  if (parsed.kind === 'memory' || (parsed.kind === 'sqlite' && parsed.file === ':memory:')) {
    throw new CliOptionError(
      option,
      'an in-memory store lives inside one process and holds nothing to work on; name a SQLite file',
    );
  }
  if (parsed.kind === 'sqlite' && !existsSync(parsed.file)) {
    throw new CliOptionError(
      option,
      `no database at ${resolve(parsed.file)}: name the file your app's store opens (--db <file>, or --store <url>)`,
    );
  }
  const store = openStore(url);
  return {
    store,
    where: parsed.kind === 'sqlite' ? `sqlite:${resolve(parsed.file)}` : store.location,
  };
}

/** A command on the program with `--store <url>` and `--db <file>`. */
export function storeCommand(program: Command, name: string): Command {
  return program
    .command(name)
    .option('--store <url>', `the store URL (default sqlite:${DEFAULT_SQLITE_FILE})`)
    .option('--db <file>', 'a SQLite file instead of --store');
}
