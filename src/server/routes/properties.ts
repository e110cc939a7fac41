/**
 * The properties of a chart and whether they hold (`agentcharts check`), for the
 * dashboard's chart view: `GET /api/machines/:machineId/properties`. The check
 * explores the chart's whole state space, so it runs once per chart and process
 * (on first request) and its answer is kept.
 */
import type { Hono } from 'hono';
import type { ChartDefinition } from '../../core/chart.ts';
import { checkChart } from '../../check/check-chart.ts';
import { checkToJson, type ChartCheckJson } from '../../check/format.ts';
import type { ServerKit } from '../kit.ts';
import type { ServerEnv } from '../middleware/auth.ts';

/** The bound of the dashboard's check: a larger space is reported unproven, never passed. */
const DASHBOARD_CHECK_LIMIT = 20_000;

export function registerPropertyRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { chartList, fail, auth } = kit;
  const checked = new WeakMap<ChartDefinition, ChartCheckJson>();
  app.get('/api/machines/:machineId/properties', auth.reader, (c) => {
    const machineId = c.req.param('machineId');
    const chart = chartList.find((ch) => ch.machine.id === machineId);
    if (!chart) return fail(c, 404, { error: 'machine_not_found', machineId });
    let check = checked.get(chart);
    if (!check) {
      check = checkToJson(checkChart(chart, { limit: DASHBOARD_CHECK_LIMIT }));
      checked.set(chart, check);
    }
    return c.json(check);
  });
}
