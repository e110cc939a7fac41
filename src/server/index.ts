/**
 * `agentcharts/server`: the HTTP server (API, signed webhook, live stream,
 * dashboard, MCP) and Prometheus metrics. Needs the optional packages `hono`,
 * `@hono/node-server` and `prom-client`.
 *
 * @module agentcharts/server
 */
export {
  ListenError,
  createServer,
  listen,
  type AgentchartsServer,
  type CorsOptions,
  type DashboardOptions,
  type InspectionOptions,
  type ListeningServer,
  type RejectionRetention,
  type ServerOptions,
} from './app.ts';
export { InspectionHub, type InspectionLimits } from './inspection.ts';
export {
  DEFAULT_TOLERANCE_SECONDS,
  KEY_HEADER,
  KeyConfigError,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  computeSignature,
  loadKeysFile,
  signRequest,
  validateKeys,
  type ApiKey,
  type KeyQuota,
  type KeyRole,
  type SignedRequest,
} from './auth.ts';
export {
  DEFAULT_DURATION_BUCKETS,
  createMetrics,
  type AgentchartsMetrics,
  type MetricsOptions,
} from '../observe/metrics.ts';
