/** Health, metrics and the list of charts. */
import type { Hono } from 'hono';
import type { ServerKit } from '../kit.ts';
import type { ServerEnv } from '../middleware/auth.ts';

export function registerOpsRoutes(app: Hono<ServerEnv>, kit: ServerKit): void {
  const { chartList, options, hub, metrics, fail, auth } = kit;
  app.get('/healthz', async (c) => {
    try {
      await options.store.listActors({ limit: 1 });
      return c.json({ ok: true, store: options.store.kind, sseClients: hub.size });
    } catch {
      return fail(c, 503, { error: 'store_unavailable' });
    }
  });

  app.get('/metrics', auth.wholeStore, async (c) => {
    const text = await metrics.metrics();
    return c.body(text, 200, { 'content-type': metrics.registry.contentType });
  });

  app.get('/api/machines', auth.reader, (c) => {
    return c.json({
      machines: chartList.map((chart) => ({
        id: chart.machine.id,
        name: chart.name,
        description: chart.description,
      })),
    });
  });
}
