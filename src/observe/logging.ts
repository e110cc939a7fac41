/**
 * Structured JSON logs (pino) at the levels of the “Log Level Guidance” of
 * “Agent State Machine Design”.
 * The durable runtime logs through the logger it is given:
 *
 * | level | when | message |
 * | --- | --- | --- |
 * | `info` | every committed transition | `transition` (actorId, machineId, from, to, eventType, version, source) |
 * | `warn` | an event refused: illegal transition or invalid payload | `event rejected` (actorId, machineId, state, eventType, reason) |
 * | `error` | a transition not committed (persistence failed; state unchanged) | `transition not committed; state unchanged` |
 * | `debug` | internals, development only | — |
 *
 * Log lines carry ids, states and event types, never payloads.
 */
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import { requireOptions } from '../core/options.ts';

/** The document's guidance as data: which level each kind of runtime record uses. */
export const LOG_LEVELS = {
  transition: 'info',
  rejection: 'warn',
  writeFailure: 'error',
  internals: 'debug',
} as const satisfies Record<string, Level>;

export type LogLevelSetting = Level | 'silent';

export interface LoggerOptions {
  /** Lowest level written; default `AGENTCHARTS_LOG_LEVEL`, else `info`. */
  level?: LogLevelSetting | undefined;
  /** Where lines go: a stream (tests capture one), a file descriptor (default 2, stderr). */
  destination?: DestinationStream | number | undefined;
  /** `name` field of every line, default `agentcharts`. */
  name?: string | undefined;
}

const LEVELS: ReadonlySet<string> = new Set([
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
]);

/**
 * A pino logger for the durable runtime: one JSON object per line, the level as
 * its label (`"level":"warn"`), ISO time.
 *
 * @example
 * const logger = createLogger({ level: 'info' });
 * const task = await createDurableActor(machine, { id: 'task-1', store, logger });
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  requireOptions('createLogger', options);
  const fromEnv = process.env['AGENTCHARTS_LOG_LEVEL'];
  const level = options.level ?? (fromEnv !== undefined && LEVELS.has(fromEnv) ? fromEnv : 'info');
  const destination =
    typeof options.destination === 'object'
      ? options.destination
      : pino.destination(options.destination ?? 2);
  return pino(
    {
      name: options.name ?? 'agentcharts',
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
