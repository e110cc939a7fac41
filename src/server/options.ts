/** What `createServer` takes: the store, keys, and how the server behaves. */
import type { Logger } from 'pino';
import type { ChartDefinition } from '../core/chart.ts';
import type { Store } from '../store/types.ts';
import type { ApiKey } from './auth.ts';
import type { InspectionLimits } from './inspection.ts';
import type { SseHubOptions } from './sse.ts';

/** The local inspector: the inspection socket XState apps send to, and its memory. */
export interface InspectionOptions extends InspectionLimits {
  /**
   * Accept inspection messages at `/inspect` and show them in the dashboard.
   * Default true. Connections from loopback need no credential; others need a
   * read credential (see docs/inspector.md).
   */
  enabled?: boolean | undefined;
}

/** Browsers of other origins that may read (agentcharts/react, a dashboard of your own). */
export interface CorsOptions {
  /** Exact origins (`https://app.example.com`), no wildcard. */
  origins: readonly string[];
}

/** The dashboard's approvals and sessions. */
export interface DashboardOptions {
  /**
   * Whether approvers may sign in to the dashboard (with their key id and secret)
   * to approve or deny there, in their own name. Default true. The read token's
   * session never approves.
   */
  approvals?: boolean | undefined;
  /** How long a dashboard session lasts (ms). Default 12 hours. */
  sessionTtlMs?: number | undefined;
}

/** How long the server keeps rejection rows (events the charts refused) in the store. */
export interface RejectionRetention {
  /** Rows older than this go (ms). Default 7 days. */
  maxAgeMs?: number | undefined;
  /** Past this many rows the oldest go, whatever their age. Default 100,000. */
  maxRows?: number | undefined;
  /** How often to prune (ms); 0 = never. Default 60 s. */
  everyMs?: number | undefined;
}

export interface ServerOptions {
  store: Store;
  /** Charts actors may run. Default: the six catalog charts. */
  charts?: Iterable<ChartDefinition> | undefined;
  /** Signing keys for writes (and signed reads). */
  keys: readonly ApiKey[];
  /**
   * Token for reads and the dashboard: `Authorization: Bearer <token>`, or once
   * through `/?token=<token>`, which starts a cookie session for the browser.
   */
  accessToken?: string | undefined;
  /** Let anyone read (e.g. behind an authenticating proxy). Default false. */
  publicRead?: boolean | undefined;
  dashboard?: DashboardOptions | undefined;
  /**
   * Host names the server answers for besides loopback (`localhost`, `127.0.0.1`,
   * `::1`); a request for any other host gets 421 (DNS rebinding). A leading `.`
   * allows subdomains; `*` allows any host.
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Behind a TLS-terminating proxy: take the scheme and host from
   * `X-Forwarded-Proto`/`X-Forwarded-Host` for the origin check and mark the
   * session cookie `Secure`. Default false.
   */
  trustProxy?: boolean | undefined;
  /** Freshness window of signed requests, seconds. Default 300. */
  toleranceSeconds?: number | undefined;
  /** Signed requests each key may make per freshness window (then 429). Default 100,000. */
  requestsPerKey?: number | undefined;
  /** Largest accepted request body. Default 64 KiB. */
  maxBodyBytes?: number | undefined;
  /** How often to look for transitions written by other processes (ms); 0 = off. Default 1000. */
  pollMs?: number | undefined;
  /** Fire due durable timers from this process (approval timeouts, retries). Default false. */
  fireTimers?: boolean | undefined;
  sse?: SseHubOptions | undefined;
  /**
   * Most actors the store's runtime keeps in memory; the least recently used
   * idle ones go first (see `DurableRuntime.limitLiveActors`). Default 10,000.
   */
  maxLiveActors?: number | undefined;
  logger?: Logger | undefined;
  /** Seconds clock for signature freshness (tests). */
  nowSeconds?: (() => number) | undefined;
  /** One INFO log line per request. Default true. */
  requestLogs?: boolean | undefined;
  /** API requests taking longer get 504 (the stream is exempt). Default 30 s. */
  requestTimeoutMs?: number | undefined;
  /** The local inspector (on by default). */
  inspection?: InspectionOptions | undefined;
  /** Cross-origin browser reads: which origins, with credentials (off by default). */
  cors?: CorsOptions | undefined;
  /**
   * Retention of the rejection rows a flood of refused events would otherwise
   * grow without bound (the alert rules read the last minutes of them).
   */
  rejections?: RejectionRetention | undefined;
}
