/**
 * The status API of “Agent State Machine” (v1.0), as the document writes it:
 * `GET /api/agents/status?userId=…` → `{ agents: [{ name, state, task, metadata }] }`,
 * the user's agents in one of the seven active states (initializing, planning,
 * executing, evaluating, adapting, waiting_input, waiting_agent).
 *
 * Which states are active comes from the agent-lifecycle chart's metadata (class
 * working or waiting), and `state` is the document's flat name (`executing`, not
 * the stored path `active.executing`).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import * as z from 'zod';
import { isActiveClass, knownChartMeta } from '../../core/meta.ts';
import { decodeActorRow } from '../../durable/codec.ts';
import type { DurableRuntime } from '../../durable/runtime.ts';
import type { Store } from '../../store/types.ts';
import type { ServerEnv } from '../middleware/auth.ts';

/** The chart the document's API reads. */
export const AGENT_LIFECYCLE = 'agent-lifecycle';

const querySchema = z.strictObject({
  userId: z.string().min(1).max(255),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

/** The document's `StateMetadata`: the context fields it lists, absent when null. */
const METADATA_FIELDS = [
  'task_id',
  'plan_id',
  'current_step_id',
  'iteration',
  'confidence',
  'error',
  'waiting_for',
  'paused_from_state',
  'extra',
] as const;

function metadataOf(context: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of METADATA_FIELDS) {
    const value = context[field];
    if (value !== null && value !== undefined) out[field] = value;
  }
  return out;
}

export interface AgentsStatusDeps {
  store: Store;
  runtime: DurableRuntime;
  /** The middleware that admits a read over every actor. */
  guard: MiddlewareHandler<ServerEnv>;
  fail: (c: Context, status: 400, body: { error: string } & Record<string, unknown>) => Response;
}

export function agentsStatusRoute(app: Hono<ServerEnv>, deps: AgentsStatusDeps): void {
  app.get('/api/agents/status', deps.guard, async (c) => {
    const query = querySchema.safeParse(c.req.query());
    if (!query.success) {
      const issue = query.error.issues[0];
      return deps.fail(c, 400, {
        error: 'invalid_query',
        field: issue?.path.map(String).join('.') ?? '',
        reason: issue?.code ?? 'invalid',
      });
    }
    const meta = knownChartMeta(AGENT_LIFECYCLE);
    const chart = deps.runtime.chartFor(AGENT_LIFECYCLE);
    if (!meta || !chart) return c.json({ agents: [] });
    const active = meta.states.filter((s) => s.leaf && isActiveClass(s.class)).map((s) => s.path);
    // The user's actors in those states, through the read model's (user, state) index.
    const found = await deps.store.actorsInStates({
      states: active,
      machineId: AGENT_LIFECYCLE,
      userId: query.data.userId,
      limit: query.data.limit ?? 100,
    });
    const loaded = await Promise.all(found.map((d) => deps.store.loadActor(d.actorId)));
    const rows = loaded.filter(
      (row): row is NonNullable<typeof row> => row !== undefined && row.status === 'active',
    );
    const versioning = { version: chart.version, migrations: chart.migrations };
    return c.json({
      agents: rows.map((row) => {
        const context = decodeActorRow(chart.machine, versioning, row).context as Record<
          string,
          unknown
        >;
        return {
          name: context['agent_name'] ?? null,
          state: meta.stateName(row.state),
          task: context['task_id'] ?? null,
          metadata: metadataOf(context),
        };
      }),
    });
  });
}
