/**
 * The core metrics of “Agent State Machine Design” (§7) through prom-client, fed by a durable runtime's
 * observers: time in state, transition counts, state distribution, retry rate,
 * time to recover and invalid transition attempts.
 *
 * | metric | type | labels |
 * | --- | --- | --- |
 * | `agentcharts_transitions_total` | counter | machine, event, target |
 * | `agentcharts_state_duration_seconds` | histogram | machine, state |
 * | `agentcharts_time_in_state_seconds` | gauge (on scrape) | machine, state, actor_id |
 * | `agentcharts_actors` | gauge (on scrape, from the store) | machine, state |
 * | `agentcharts_retries_total` | counter | machine |
 * | `agentcharts_retry_ratio` | gauge (on scrape) | machine |
 * | `agentcharts_recovery_duration_seconds` | histogram | machine, from |
 * | `agentcharts_invalid_transitions_total` | counter | machine, state, event |
 * | `agentcharts_invalid_events_total` | counter | machine, reason |
 * | `agentcharts_write_errors_total` | counter | error, kind |
 * | `agentcharts_store_rollback_retries_total` | counter (stores that retry: PostgreSQL) | code |
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DurableRuntime } from '../durable/runtime.ts';
import type { TransitionNotice } from '../durable/notices.ts';
import { InvalidTransitionError, StoreError } from '../core/errors.ts';
import type { Store } from '../store/types.ts';
import {
  classifyState,
  isDisruptedClass as isDisrupted,
  isFinishedClass as isFinished,
  stateName,
} from '../core/meanings.ts';
import { EXPECTED, isRuntime, requireArg, requireOptions } from '../core/options.ts';

/** Seconds: from sub-second hops to a day (“Agent State Machine Design” alerts at 30 min, 2 h and 4 h). */
export const DEFAULT_DURATION_BUCKETS: readonly number[] = [
  0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400,
];

/** Each metric's help text, by its name after the prefix. */
const HELP = {
  transitions_total:
    'Committed transitions, by machine, event type and target state (“Agent State Machine Design” transition_counts).',
  state_duration_seconds:
    'Time actors spent in a state, observed when they leave it (“Agent State Machine Design” time_in_state).',
  time_in_state_seconds:
    'Current time in state of each unfinished actor this process saw transition.',
  retries_total: 'Transitions into a retrying state, by machine.',
  retry_ratio:
    'Retrying transitions / all transitions seen by this process (“Agent State Machine Design” retry_rate).',
  recovery_duration_seconds:
    'Time from leaving work for a paused, blocked/waiting or retrying state until back at work (“Agent State Machine Design” mean_time_to_recovery).',
  invalid_transitions_total:
    'Events refused because no transition is enabled (InvalidTransitionError; “Agent State Machine Design” invalid_transition_attempts).',
  invalid_events_total: 'Events refused by their schema (InvalidEventError), by reason.',
  write_errors_total:
    'Transitions not committed (state unchanged), by error class and store error kind.',
  store_rollback_retries_total:
    'Statements or transactions the store ran again after the database rolled them back, by SQLSTATE (40P01 deadlock, 40001 serialization failure; Store.onRetry).',
  actors:
    'Actors per machine and state in the store (“Agent State Machine Design” state_distribution).',
} as const;

type MetricName = keyof typeof HELP;

export interface MetricsOptions {
  /** Where to register; default a new Registry (so several runtimes never clash). */
  registry?: Registry | undefined;
  /** Metric name prefix, default `agentcharts_`. */
  prefix?: string | undefined;
  /** Histogram buckets in seconds. */
  buckets?: readonly number[] | undefined;
  /**
   * The store whose actors `agentcharts_actors` counts on every scrape (one grouped,
   * indexed query): the runtime's store by default, `false` to leave the gauge out.
   */
  store?: Store | false | undefined;
  /**
   * Largest number of per-actor `time_in_state` series, the longest in state first
   * (default 1000): a bound on the scrape size when many actors are live.
   */
  maxActorSeries?: number | undefined;
}

export interface AgentchartsMetrics {
  readonly registry: Registry;
  /** The exposition text (what `/metrics` serves). */
  metrics(): Promise<string>;
  /** Stops observing the runtime and removes these metrics from the registry. */
  stop(): void;
}

interface Tracked {
  machineId: string;
  state: string;
  /** When this process saw the actor enter `state`; undefined when it never did. */
  since: number | undefined;
  /** Set while paused, waiting or retrying: since when and from which state it was disrupted. */
  disruptedSince?: number | undefined;
  disruptedFrom?: string | undefined;
}

/**
 * Registers the metrics and observes `runtime`. Observing costs one map update
 * and a few label lookups per transition; gauges are computed on scrape.
 *
 * @example
 * const metrics = createMetrics(getRuntime(store));
 * http.createServer(async (_req, res) => res.end(await metrics.metrics())).listen(9464);
 */
export function createMetrics(
  runtime: DurableRuntime,
  options: MetricsOptions = {},
): AgentchartsMetrics {
  requireArg('createMetrics', 'runtime', isRuntime(runtime), EXPECTED.runtime);
  requireOptions('createMetrics', options);
  const registry = options.registry ?? new Registry();
  const prefix = options.prefix ?? 'agentcharts_';
  const buckets = [...(options.buckets ?? DEFAULT_DURATION_BUCKETS)];
  const store = options.store === undefined ? runtime.store : options.store;
  const maxActorSeries = options.maxActorSeries ?? 1000;
  const registers = [registry];
  const tracked = new Map<string, Tracked>();
  /** Per machine: committed transitions (creations excluded) and retries, for the ratio. */
  const perMachine = new Map<string, { transitions: number; retries: number }>();

  /** Names of the metrics registered here, removed again by `stop()`. */
  const names: string[] = [];
  /** A metric's prefixed name and help, remembered for `stop()`. */
  const described = (metric: MetricName) => {
    names.push(prefix + metric);
    return { name: prefix + metric, help: HELP[metric], registers };
  };
  const counter = <L extends string>(metric: MetricName, labelNames: readonly L[]) =>
    new Counter({ ...described(metric), labelNames });
  const histogram = <L extends string>(metric: MetricName, labelNames: readonly L[]) =>
    new Histogram({ ...described(metric), labelNames, buckets });
  /** A gauge computed on scrape by `collect`. */
  const gauge = <L extends string>(
    metric: MetricName,
    labelNames: readonly L[],
    collect: (this: Gauge<L>) => void | Promise<void>,
  ) => new Gauge({ ...described(metric), labelNames, collect });

  const transitions = counter('transitions_total', ['machine', 'event', 'target']);
  const stateDuration = histogram('state_duration_seconds', ['machine', 'state']);
  gauge('time_in_state_seconds', ['machine', 'state', 'actor_id'], function () {
    this.reset();
    const now = runtime.clock.now();
    const live = [...tracked.entries()]
      .filter((e): e is [string, Tracked & { since: number }] => e[1].since !== undefined)
      .sort((a, b) => a[1].since - b[1].since)
      .slice(0, maxActorSeries);
    for (const [actorId, t] of live) {
      this.set(
        { machine: t.machineId, state: t.state, actor_id: actorId },
        Math.max(0, now - t.since) / 1000,
      );
    }
  });
  const retries = counter('retries_total', ['machine']);
  gauge('retry_ratio', ['machine'], function () {
    this.reset();
    for (const [machine, c] of perMachine) {
      if (c.transitions > 0) this.set({ machine }, c.retries / c.transitions);
    }
  });
  const recovery = histogram('recovery_duration_seconds', ['machine', 'from']);
  const invalidTransitions = counter('invalid_transitions_total', ['machine', 'state', 'event']);
  const invalidEvents = counter('invalid_events_total', ['machine', 'reason']);
  const writeErrors = counter('write_errors_total', ['error', 'kind']);
  // Registered where the runtime's store can run a statement again (PostgreSQL),
  // whatever `store` says: the runs again are its commits', where `store` only picks
  // what the state distribution counts.
  let unlistenRetries: (() => void) | undefined;
  if (runtime.store.onRetry !== undefined) {
    const rollbackRetries = counter('store_rollback_retries_total', ['code']);
    unlistenRetries = runtime.store.onRetry((retry) => rollbackRetries.inc({ code: retry.code }));
  }
  if (store !== false) {
    gauge('actors', ['machine', 'state'], async function () {
      try {
        const counts = await store.countActors();
        this.reset();
        const sums = new Map<string, number>();
        for (const c of counts) {
          const key = JSON.stringify([c.machineId, c.state]);
          sums.set(key, (sums.get(key) ?? 0) + c.count);
        }
        for (const [key, count] of sums) {
          const [machine, state] = JSON.parse(key) as [string, string];
          this.set({ machine, state }, count);
        }
      } catch (error) {
        // A failed count keeps the last values: a scrape never fails for it.
        runtime.logger.error({ err: error }, 'state distribution query failed');
      }
    });
  }

  const onTransition = (n: TransitionNotice): void => {
    const machine = n.machineId;
    // Labels use the chart's names: `executing`, not `active.executing`; `RETRY`, not `xstate.after.*`.
    transitions.inc({ machine, event: n.eventType, target: stateName(machine, n.to) });
    const toClass = classifyState(machine, n.to, n.status);
    if (n.from !== null) {
      const c = perMachine.get(machine) ?? { transitions: 0, retries: 0 };
      c.transitions++;
      if (toClass === 'retrying' && n.from !== n.to) c.retries++;
      perMachine.set(machine, c);
    }
    if (toClass === 'retrying' && n.from !== n.to) retries.inc({ machine });

    const known = tracked.get(n.actorId);
    if (n.from !== n.to && known?.state === n.from && known.since !== undefined) {
      stateDuration.observe(
        { machine, state: stateName(machine, known.state) },
        (n.at - known.since) / 1000,
      );
    }
    if (isFinished(toClass)) {
      tracked.delete(n.actorId);
      return;
    }
    if (known !== undefined && n.from === n.to) return;
    // An actor first seen staying in its state (loaded, not created here): its entry time is unknown.
    const next: Tracked = {
      machineId: machine,
      state: n.to,
      since: n.from !== n.to ? n.at : undefined,
    };
    const fromClass = n.from === null ? undefined : classifyState(machine, n.from);
    if (isDisrupted(toClass)) {
      if (known?.disruptedSince !== undefined) {
        next.disruptedSince = known.disruptedSince;
        next.disruptedFrom = known.disruptedFrom;
      } else if (fromClass === 'working') {
        next.disruptedSince = n.at;
        next.disruptedFrom = n.to;
      }
    } else if (toClass === 'working' && known?.disruptedSince !== undefined) {
      recovery.observe(
        { machine, from: stateName(machine, known.disruptedFrom ?? known.state) },
        (n.at - known.disruptedSince) / 1000,
      );
    }
    tracked.set(n.actorId, next);
  };

  const unobserve = runtime.observe({
    onTransition,
    onRejection: (n) => {
      if (n.error instanceof InvalidTransitionError) {
        invalidTransitions.inc({ machine: n.machineId, state: n.state, event: n.eventType ?? '' });
      } else {
        invalidEvents.inc({ machine: n.machineId, reason: n.error.reason });
      }
    },
    onWriteError: (n) => {
      writeErrors.inc({
        error: n.error.name,
        kind: n.error instanceof StoreError ? n.error.kind : 'none',
      });
    },
  });

  return {
    registry,
    metrics: () => registry.metrics(),
    stop: () => {
      unobserve();
      unlistenRetries?.();
      for (const name of names) registry.removeSingleMetric(name);
      tracked.clear();
    },
  };
}
