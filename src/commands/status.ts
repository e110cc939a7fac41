import type { Command } from 'commander';
import { knowingCharts } from './charts-option.ts';
import { labelsFor, stateName } from '../core/meanings.ts';
import { knownChartMeta, knownChartMetas } from '../core/meta.ts';
import { table } from './format.ts';
import { progressLine } from '../observe/progress.ts';
import {
  activeAgentsForUser,
  collectionStatistics,
  toSeedStatistics,
  type CollectionStatistics,
} from '../observe/stats.ts';
import type { ActorDwell } from '../store/types.ts';
import { CliOptionError } from './paths.ts';
import { openExistingStore, storeCommand, type StoreOptions } from './store-option.ts';

interface StatusOptions extends StoreOptions {
  state?: string;
  machine?: string;
  user?: string;
  limit: string;
  json?: boolean;
}

/** `12.3 s`, `4.0 min`, `2.5 h`, `1.2 d`. */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${(s / 60).toFixed(1)} min`;
  if (s < 86_400) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}

function parseLimit(text: string): number {
  if (!/^\d{1,6}$/.test(text) || Number(text) < 1) {
    throw new CliOptionError('--limit', 'must be a whole number from 1 to 999999');
  }
  return Number(text);
}

function statisticsJson(stats: CollectionStatistics) {
  return {
    ...toSeedStatistics(stats),
    total: stats.total,
    total_terminated: stats.totalTerminated,
    class_counts: stats.classCounts,
    groups: stats.groups.map((g) => ({
      machine_id: g.machineId,
      state: stateName(g.machineId, g.state),
      state_path: g.state,
      status: g.status,
      class: g.class,
      count: g.count,
    })),
  };
}

function actorJson(d: ActorDwell, now: number) {
  return {
    agent_id: d.actorId,
    machine_id: d.machineId,
    state: stateName(d.machineId, d.state),
    state_path: d.state,
    status: d.status,
    state_since: new Date(d.stateSince).toISOString(),
    time_in_state_ms: Math.max(0, now - d.stateSince),
    updated_at: new Date(d.updatedAt).toISOString(),
    user_id: d.userId,
  };
}

/**
 * The stored labels `--state` names (a document name, a path or a compound
 * state), in the charts this command knows; a name no chart has is an error
 * listing the states there are.
 */
export function stateLabels(state: string, machineId: string | undefined): string[] {
  const metas =
    machineId === undefined
      ? knownChartMetas()
      : [knownChartMeta(machineId)].filter((m) => m !== undefined);
  const labels = metas.flatMap((meta) => meta.labelsFor(state));
  if (labels.length > 0 || metas.length === 0) return labelsFor(machineId, state);
  const known = metas
    .map((meta) => `${meta.machineId}: ${[...new Set(meta.states.map((s) => s.name))].join(', ')}`)
    .join('; ');
  throw new CliOptionError('--state', `no chart has a state "${state}"; states: ${known}`);
}

/**
 * `agentcharts status`: the collection statistics of “Agent Status Models” (counts per state,
 * active, completed, failed, average execution time), and the actors in a state
 * or the active agents of a user (“Agent State Machine”), longest in their state first.
 */
export function registerStatus(program: Command): void {
  knowingCharts(storeCommand(program, 'status'))
    .description(
      'Counts per machine and state, active/completed/failed and average execution time; with --state or --user, the actors themselves',
    )
    .option(
      '--state <state>',
      'list the actors in this state: its name in the document (executing) or its path (active.executing)',
    )
    .option('--machine <id>', 'only actors of this machine id (e.g. task-lifecycle)')
    .option('--user <id>', "only this user's actors; without --state, its active agents")
    .option('--limit <n>', 'largest number of actors listed', '50')
    .option('--json', 'print JSON (the statistics field names of “Agent Status Models”)')
    .action(async (opts: StatusOptions): Promise<void> => {
      const limit = parseLimit(opts.limit);
      const states = opts.state === undefined ? undefined : stateLabels(opts.state, opts.machine);
      const { store, where } = openExistingStore(opts);
      const progress = progressLine();
      try {
        const now = Date.now();
        progress.update('counting actors…');
        const stats = await collectionStatistics(store, {
          machineId: opts.machine,
          userId: opts.user,
        });
        let actors: ActorDwell[] | undefined;
        let listing: string | undefined;
        if (opts.state !== undefined) {
          progress.update(`listing actors in ${opts.state}…`);
          actors = await store.actorsInStates({
            // A document name (`executing`), a path (`active.executing`) or a compound state.
            states: states ?? [],
            machineId: opts.machine,
            userId: opts.user,
            limit,
          });
          listing = `Actors in ${opts.state}`;
        } else if (opts.user !== undefined) {
          progress.update(`listing active agents of ${opts.user}…`);
          actors = await activeAgentsForUser(store, opts.user, { machineId: opts.machine, limit });
          listing = `Active agents of user ${opts.user}`;
        }
        progress.done();

        if (opts.json) {
          const out = {
            store: where,
            at: new Date(now).toISOString(),
            filter: {
              machine_id: opts.machine ?? null,
              state: opts.state ?? null,
              user_id: opts.user ?? null,
            },
            statistics: statisticsJson(stats),
            ...(actors !== undefined ? { actors: actors.map((a) => actorJson(a, now)) } : {}),
          };
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }

        const scope = [
          opts.machine !== undefined ? `machine ${opts.machine}` : undefined,
          opts.user !== undefined ? `user ${opts.user}` : undefined,
        ].filter((s) => s !== undefined);
        const lines = [`status ${where}${scope.length > 0 ? ` (${scope.join(', ')})` : ''}`];
        const avg =
          stats.avgExecutionTimeMs === null ? '-' : formatDuration(stats.avgExecutionTimeMs);
        lines.push(
          `  total ${stats.total}   active ${stats.totalActive}   completed ${stats.totalCompleted}   failed ${stats.totalFailed}   terminated ${stats.totalTerminated}   avg execution ${avg}`,
        );
        if (stats.groups.length === 0) {
          lines.push('  no actors');
        } else {
          lines.push('');
          lines.push(
            table(
              ['machine', 'state', 'status', 'class', 'count'],
              stats.groups.map((g) => [
                g.machineId,
                stateName(g.machineId, g.state),
                g.status,
                g.class,
                String(g.count),
              ]),
              { right: [4] },
            ),
          );
        }
        if (actors !== undefined && listing !== undefined) {
          lines.push('');
          const more = actors.length === limit ? ` (first ${limit}; raise --limit for more)` : '';
          lines.push(`${listing}, longest in state first${more}:`);
          if (actors.length === 0) lines.push('  none');
          else {
            lines.push(
              table(
                ['actor', 'machine', 'state', 'in state', 'last transition', 'user'],
                actors.map((a) => [
                  a.actorId,
                  a.machineId,
                  stateName(a.machineId, a.state),
                  formatDuration(Math.max(0, now - a.stateSince)),
                  new Date(a.updatedAt).toISOString(),
                  a.userId ?? '-',
                ]),
              ),
            );
          }
        }
        process.stdout.write(`${lines.join('\n')}\n`);
      } finally {
        progress.done();
        await store.close();
      }
    });
}
