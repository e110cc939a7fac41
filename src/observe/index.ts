/** Observing durable actors: the seed 003 stream, seed 001 metrics, alerts and logs, statistics. */
export * from './alerts.ts';
export * from '../core/meanings.ts';
export * from './logging.ts';
export * from './metrics.ts';
export * from './stats.ts';
export * from './stream.ts';
