/** Actors: the list, counts per state, one actor with its trail page, trail pages. */
import type { Hono } from 'hono';
import type { EventObject } from 'xstate';
import { labelsFor } from '../../core/meanings.ts';
import { listInScope } from '../../core/scope.ts';
import { decodeActorRow } from '../../durable/codec.ts';
import type { ActorCount, ActorQuery, Store } from '../../store/types.ts';
import { CATEGORIES, badge, type StateCategory } from '../badges.ts';
import { highlightedDiagram } from '../diagram.ts';
import { trailStep, TrailStepError } from '../../inspect/time-travel.ts';
import {
  TRAIL_LIMIT,
  historyQuerySchema,
  listQuerySchema,
  summary,
  trailEntry,
  zodField,
} from '../http.ts';
import type { ServerKit } from '../kit.ts';
import { inScope, scopeOf, sessionApprover, type ServerEnv } from '../middleware/auth.ts';
import { agentsStatusRoute } from './agents-status.ts';

/** Actors a scoped count reads at most (then it says `partial`). */
const SCOPED_COUNT_LIMIT = 10_000;

/**
 * Counts per (machine, state, status) of the actors `patterns` cover, read
 * through the scoped walk: nothing outside the scope is counted or read past.
 */
async function countInScope(
  store: Store,
  machineId: string | undefined,
  patterns: readonly string[],
): Promise<{ groups: ActorCount[]; partial: boolean }> {
  const groups = new Map<string, ActorCount>();
  let after: string | undefined;
  let seen = 0;
  do {
    const page = await listInScope(
      (afterId, limit) => store.listActors({ machineId, afterId, limit }),
      patterns,
      { after, limit: 500 },
    );
    for (const row of page.rows) {
      const key = `${row.machineId}\u0000${row.state}\u0000${row.status}`;
      const group = groups.get(key);
      if (group) group.count++;
      else
        groups.set(key, {
          machineId: row.machineId,
          state: row.state,
          status: row.status,
          count: 1,
          totalAgeMs: 0,
        });
    }
    seen += page.rows.length;
    after = page.next;
  } while (after !== undefined && seen < SCOPED_COUNT_LIMIT);
  return { groups: [...groups.values()], partial: after !== undefined };
}

export function registerActorRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { options, runtime, dashboardApprovals, fail, auth } = kit;
  app.get('/api/actors', auth.reader, async (c) => {
    const query = listQuerySchema.safeParse(c.req.query());
    if (!query.success) {
      return fail(c, 400, { error: 'invalid_query', ...zodField(query.error) });
    }
    const pageSize = query.data.limit ?? 50;
    const filters: ActorQuery = {
      machineId: query.data.machine,
      // A document name (`executing`), a path (`active.executing`) or a compound state.
      states:
        query.data.state === undefined
          ? undefined
          : labelsFor(query.data.machine, query.data.state),
      userId: query.data.userId,
      status: query.data.status,
    };
    const scope = scopeOf(c.var.principal);
    if (scope) {
      // Walked within the scope: its cursor never names an actor outside it.
      const page = await listInScope(
        (afterId, limit) => options.store.listActors({ ...filters, afterId, limit }),
        scope.actors,
        { after: query.data.cursor, limit: pageSize },
      );
      return c.json({ actors: page.rows.map(summary), nextCursor: page.next ?? null });
    }
    const rows = await options.store.listActors({
      ...filters,
      afterId: query.data.cursor,
      limit: pageSize + 1,
    });
    const page = rows.slice(0, pageSize);
    return c.json({
      actors: page.map(summary),
      nextCursor: rows.length > pageSize ? (page[page.length - 1]?.id ?? null) : null,
    });
  });

  agentsStatusRoute(app, { store: options.store, runtime, guard: auth.wholeStore, fail });

  app.get('/api/counts', auth.reader, async (c) => {
    const machine = c.req.query('machine') || undefined;
    const scope = scopeOf(c.var.principal);
    // A scoped principal counts its own actors only (read through its scope).
    const { groups, partial } = scope
      ? await countInScope(options.store, machine, scope.actors)
      : { groups: await options.store.countActors({ machineId: machine }), partial: false };
    // Per label; its badge is read from the chart of the first machine seen with it.
    const byState = new Map<string, { count: number; machineId: string }>();
    const byCategory = Object.fromEntries(CATEGORIES.map((k) => [k, 0])) as Record<
      StateCategory,
      number
    >;
    let total = 0;
    for (const g of groups) {
      total += g.count;
      const seen = byState.get(g.state);
      if (seen) seen.count += g.count;
      else byState.set(g.state, { count: g.count, machineId: g.machineId });
      byCategory[badge(g.machineId, g.state, g.status).category] += g.count;
    }
    return c.json({
      total,
      ...(partial ? { partial: true } : {}),
      categories: byCategory,
      states: [...byState.entries()]
        .sort((a, b) => b[1].count - a[1].count || a[0].localeCompare(b[0]))
        .map(([state, { count, machineId }]) => {
          const { name, category, color } = badge(machineId, state);
          return { state, name, count, category, color };
        }),
    });
  });

  /** One page of an actor's trail, oldest first: `?after=<seq>&limit=<n>` (at most 500). */
  app.get('/api/actors/:id/history', auth.reader, async (c) => {
    const id = c.req.param('id');
    const outOfScope = auth.actorOutOfScope(c, id);
    if (outOfScope) return outOfScope;
    const query = historyQuerySchema.safeParse(c.req.query());
    if (!query.success) return fail(c, 400, { error: 'invalid_query', ...zodField(query.error) });
    const row = await options.store.loadActor(id);
    if (!row) return fail(c, 404, { error: 'actor_not_found', actorId: id });
    const limit = query.data.limit ?? 100;
    const rows = await options.store.history(id, { afterSeq: query.data.after ?? 0, limit });
    return c.json({
      trail: rows.map((r) => trailEntry(row.machineId, r)),
      next: rows.length === limit ? (rows.at(-1)?.seq ?? null) : null,
      total: row.version,
    });
  });

  /**
   * Time travel: step `seq` of the trail replayed from the log (snapshot, context,
   * the diff to the step before, the path so far on the chart), checked against
   * the snapshot hash the row recorded and the hash chain.
   */
  app.get('/api/actors/:id/steps/:seq', auth.reader, async (c) => {
    const id = c.req.param('id');
    const outOfScope = auth.actorOutOfScope(c, id);
    if (outOfScope) return outOfScope;
    const seqText = c.req.param('seq');
    const seq = /^\d{1,9}$/.test(seqText) ? Number(seqText) : NaN;
    if (!Number.isInteger(seq)) {
      return fail(c, 400, { error: 'invalid_query', field: 'seq', reason: 'not_a_step' });
    }
    const row = await options.store.loadActor(id);
    if (!row) return fail(c, 404, { error: 'actor_not_found', actorId: id });
    const chart = runtime.chartFor(row.machineId);
    if (!chart) return fail(c, 404, { error: 'chart_not_registered', machineId: row.machineId });
    try {
      const step = await trailStep(options.store, chart, row, seq);
      const color = badge(row.machineId, step.to).color;
      return c.json({
        ...step,
        toName: badge(row.machineId, step.to).name,
        color,
        diagram: highlightedDiagram(
          chart.machine,
          step.value ?? step.to,
          color,
          step.path.slice(0, -1).map((p) => p.value ?? p.state),
        ),
      });
    } catch (error) {
      if (error instanceof TrailStepError) {
        return fail(c, error.reason === 'too_long' ? 422 : 404, {
          error: error.reason === 'too_long' ? 'replay_too_long' : 'step_not_found',
          actorId: id,
          seq,
        });
      }
      throw error;
    }
  });

  app.get('/api/actors/:id', auth.reader, async (c) => {
    const id = c.req.param('id');
    const outOfScope = auth.actorOutOfScope(c, id);
    if (outOfScope) return outOfScope;
    const row = await options.store.loadActor(id);
    if (!row) return fail(c, 404, { error: 'actor_not_found', actorId: id });
    const chart = runtime.chartFor(row.machineId);
    // The last page of the trail only (one indexed range read, however long the
    // history); older rows come from /api/actors/:id/history.
    const history = await options.store.history(id, {
      afterSeq: Math.max(0, row.version - TRAIL_LIMIT),
      limit: TRAIL_LIMIT,
    });
    const trail = history.map((r) => trailEntry(row.machineId, r));
    // The actors it spawned or invokes (team-workflow: one per task), each a durable actor.
    const children = (await options.store.childrenOf(id))
      .filter((child) => inScope(c.var.principal, child.id))
      .map(summary);
    const base = {
      actor: summary(row),
      trail,
      trailTotal: row.version,
      children,
    };
    if (!chart) return c.json({ ...base, context: null, diagram: null, accepts: [] });
    const snapshot = decodeActorRow(
      chart.machine,
      { version: chart.version, migrations: chart.migrations },
      row,
    );
    const accepts =
      snapshot.status !== 'active'
        ? []
        : Object.entries(chart.eventSamples ?? {})
            .filter(([, samples]) =>
              (samples as readonly EventObject[]).some((sample) => snapshot.can(sample)),
            )
            .map(([type]) => type)
            .sort();
    return c.json({
      ...base,
      context: snapshot.context as unknown,
      diagram: highlightedDiagram(chart.machine, snapshot.value, summary(row).color),
      accepts,
      awaitingApproval: accepts.includes('APPROVAL_GRANTED') && accepts.includes('APPROVAL_DENIED'),
      approvalsEnabled: dashboardApprovals,
      signedInApprover: sessionApprover(c.var.principal) ?? null,
    });
  });
}
