/**
 * Finding and reading `agentcharts.config.{ts,mts,js,mjs}` in the working
 * directory, once per directory, before a command runs (a commander
 * `preAction` hook), so that synchronous code (opening the store) can read it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChartDefinition } from '../core/chart.ts';
import { chartList } from './chart-list.ts';
import { AgentchartsError } from '../core/errors.ts';
import { parseStoreUrl } from '../store/open.ts';
import { importModule } from './load-module.ts';
import { isChartLike, isStateMachine } from './resolve-chart.ts';

/** The file names looked for, in this order. */
export const CONFIG_FILES = [
  'agentcharts.config.ts',
  'agentcharts.config.mts',
  'agentcharts.config.mjs',
  'agentcharts.config.js',
] as const;

/** The config file cannot be used; names the file and what is wrong. */
export class ConfigError extends AgentchartsError {
  override name = 'ConfigError';
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super('CONFIG', `${file}: ${detail}`);
  }
}

/** A config file, read and checked. */
export interface LoadedConfig {
  file: string;
  charts: ChartDefinition[];
  store: string | undefined;
}

const loaded = new Map<string, LoadedConfig | undefined>();

/** The config file of `cwd`, if there is one (read once per directory). */
export async function loadConfig(cwd = process.cwd()): Promise<LoadedConfig | undefined> {
  if (loaded.has(cwd)) return loaded.get(cwd);
  const name = CONFIG_FILES.find((file) => existsSync(join(cwd, file)));
  const config = name === undefined ? undefined : readConfig(name, await importModule(name, cwd));
  loaded.set(cwd, config);
  return config;
}

/** The config `loadConfig` read for `cwd` (undefined when none, or not read yet). */
export function loadedConfig(cwd = process.cwd()): LoadedConfig | undefined {
  return loaded.get(cwd);
}

function readConfig(file: string, mod: Record<string, unknown>): LoadedConfig {
  const value = mod.default;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(file, 'must `export default defineConfig({ charts, store })`');
  }
  const { charts, store, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new ConfigError(file, `unknown field "${unknown[0]}" (known: charts, store)`);
  }
  if (store !== undefined) {
    if (typeof store !== 'string') throw new ConfigError(file, 'store must be a store URL string');
    try {
      parseStoreUrl(store);
    } catch (error) {
      throw new ConfigError(file, `store: ${(error as Error).message}`);
    }
  }
  if (charts !== undefined && !Array.isArray(charts)) {
    throw new ConfigError(
      file,
      'charts must be an array of charts (defineChart results) or machines',
    );
  }
  const list = (charts ?? []) as unknown[];
  list.forEach((chart, index) => {
    if (!isStateMachine(chart) && !isChartLike(chart)) {
      throw new ConfigError(
        file,
        `charts[${index}] is neither a chart (defineChart) nor a machine`,
      );
    }
  });
  return { file, charts: chartList(file, list), store };
}
