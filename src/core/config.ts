/**
 * `agentcharts.config.ts`: the one place a project declares its charts (and the
 * store its commands open), read by every CLI command and by `serve`.
 *
 * @example
 * // agentcharts.config.ts
 * import { defineConfig } from 'agentcharts';
 * import { chart as expense } from './expense.ts';
 * export default defineConfig({ charts: [expense], store: 'sqlite:./expenses.db' });
 */
import type { AnyStateMachine } from 'xstate';
import type { ChartDefinition } from './chart.ts';

/** What `agentcharts.config.{ts,mts,js,mjs}` exports as its default. */
export interface AgentchartsConfig {
  /**
   * Your charts (`defineChart` results, or bare machines made charts with
   * defaults), added to the six built-in ones; a chart with a built-in
   * machine's id replaces it.
   */
  charts?: ReadonlyArray<ChartDefinition | AnyStateMachine> | undefined;
  /**
   * The store URL commands open when given neither `--store` nor `--db`
   * (`sqlite:<file>` or `postgres://…`). Default `sqlite:./agentcharts.db`.
   */
  store?: string | undefined;
}

/** Types a config file's default export (the identity at run time). */
export function defineConfig(config: AgentchartsConfig): AgentchartsConfig {
  return config;
}
