import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catalog, charts } from '../machines/index.ts';
import { editState, mutant, withEdge } from './support/mutate.ts';
import { readOnlyServer } from './support/server.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { listen, type ListeningServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';
import type { ChartCheckJson } from '../src/check/format.ts';
import { OFFLINE_CHROMIUM_ARGS } from '../src/inspect/render-svg.ts';
import { CHROMIUM, chromiumAvailable } from './support/browser.ts';

const TOKEN = 'properties-token-0123456789abcdef';
const task = catalog['task-lifecycle'];
/** task-lifecycle with the approval bypassed: paused → running on DEPENDENCY_RESOLVED. */
const bypassed = mutant(
  task,
  editState(task.machine, 'paused', withEdge('DEPENDENCY_RESOLVED', 'running')),
);

describe('GET /api/machines/:machineId/properties', () => {
  const store = openStore('memory:');
  const server = readOnlyServer(store, TOKEN);
  const get = (path: string, token = TOKEN) =>
    server.app.request(path, token ? { headers: { authorization: `Bearer ${token}` } } : {});

  afterAll(async () => {
    await getRuntime(store).close();
    await store.close();
  });

  test('answers each property of the chart and its status, children included', async () => {
    const response = await get('/api/machines/team-workflow/properties');
    expect(response.status).toBe(200);
    const check = (await response.json()) as ChartCheckJson;
    expect(check.complete).toBe(true);
    expect(check.properties.map((p) => p.status)).toEqual(check.properties.map(() => 'proven'));
    expect(check.properties[0]?.description).toContain('“Agent Workflow State Machine”');
    expect(check.children.map((c) => c.chart)).toEqual(['team-task']);
  });

  test('needs a read credential, and names a machine it does not know', async () => {
    expect((await get('/api/machines/task-lifecycle/properties', '')).status).toBe(401);
    expect((await get('/api/machines/task-lifecycle/properties')).status).toBe(200);
    const missing = await get('/api/machines/nope/properties');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'machine_not_found', machineId: 'nope' });
  });
});

const available = chromiumAvailable('dashboard properties browser test');

describe.skipIf(!available)(
  'the dashboard’s chart view shows the properties and their status',
  () => {
    let dir: string;
    let http: ListeningServer;
    let context: BrowserContext;
    let page: Page;
    const store = openStore('memory:');
    const errors: string[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'agentcharts-properties-'));
      const actor = await createDurableActor(bypassed.machine, {
        id: 'refund-1',
        store,
        input: { taskId: 'refund-1' },
        schemas: task.events,
      });
      await actor.send({ type: 'START' });
      const others = charts.filter((c) => c.machine.id !== task.machine.id);
      http = await listen(readOnlyServer(store, TOKEN, { charts: [bypassed, ...others] }));
      context = await chromium.launchPersistentContext(mkdtempSync(join(dir, 'profile-')), {
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', ...OFFLINE_CHROMIUM_ARGS],
      });
      page = context.pages()[0] ?? (await context.newPage());
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
    });

    afterAll(async () => {
      await context?.close();
      await http?.close();
      await getRuntime(store).close();
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('a refuted property shows as refuted, with its counterexample', async () => {
      await page.goto(`${http.url}/?token=${TOKEN}`);
      await page.goto(`${http.url}/actors/refund-1`);
      const items = page.locator('[data-testid="properties"] [data-testid="property"]');
      await expect.poll(() => items.count()).toBe(8);
      const statuses = await items.evaluateAll((li) =>
        li.map((i) => i.getAttribute('data-status')),
      );
      expect(statuses.filter((s) => s === 'refuted')).toHaveLength(2);
      expect(statuses.filter((s) => s === 'proven')).toHaveLength(6);
      const refuted = page.locator('[data-testid="property"][data-status="refuted"]').first();
      expect(await refuted.textContent()).toContain('only(paused → running via APPROVAL_GRANTED)');
      expect(await refuted.locator('[data-testid="counterexample"]').textContent()).toBe(
        'Counterexample: START → PAUSE_FOR_APPROVAL → DEPENDENCY_RESOLVED',
      );
      expect(errors).toEqual([]);
    });
  },
);
