import { createWebSocketInspector } from '@statelyai/inspect';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { assign, createActor, createMachine } from 'xstate';
import { catalog, charts } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { signRequest, type ApiKey } from '../src/server/auth.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { CHROMIUM, chromiumAvailable, edgeLabelOverlaps } from './support/browser.ts';
import { OFFLINE_CHROMIUM_ARGS } from '../src/inspect/render-svg.ts';

const available = chromiumAvailable('dashboard browser tests');

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const task = catalog['task-lifecycle'];
const status = catalog['agent-status'];
const TOKEN = 'browser-token-0123456789abcdef';
const AGENT: ApiKey = { id: 'worker', secret: 'worker-secret-0123456789ab', role: 'agent' };
const DASHBOARD: ApiKey = { id: 'dash', secret: 'dashboard-secret-012345678', role: 'approver' };

let dir: string;
let store: Store;
let http: ListeningServer;
let context: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];

async function makeTask(id: string, path: readonly Record<string, unknown>[]): Promise<void> {
  const actor = await createDurableActor(task.machine, {
    id,
    store,
    input: { taskId: id },
    schemas: task.events,
  });
  for (const event of path) await actor.send(event as never);
}

async function sendSigned(actorId: string, event: Record<string, unknown>): Promise<number> {
  const body = JSON.stringify({ actorId, event });
  const response = await fetch(`${http.url}/api/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signRequest(AGENT, { method: 'POST', path: '/api/events', body }),
    },
    body,
  });
  return response.status;
}

const shot = (name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** axe-core's serious and critical violations on the page now (rule id and where). */
async function seriousViolations(): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP allows no injected script tag.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: AxeLike }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 3),
    }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.join(' | ')}`);
}

interface AxeLike {
  run(
    context: Document,
    options: { resultTypes: string[] },
  ): Promise<{
    violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }>;
  }>;
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);

describe.skipIf(!available)('the dashboard in headless Chromium', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'agentcharts-browser-'));
    store = openStore(`sqlite:${join(dir, 'dash.db')}`);
    const requestedAt = Date.now();
    await makeTask('refund-paused', [
      { type: 'START' },
      { type: 'PAUSE_FOR_APPROVAL', reason: 'refund_approval', requestedAt },
    ]);
    await makeTask('refund-running', [{ type: 'START' }]);
    await makeTask('refund-blocked', [
      { type: 'START' },
      { type: 'BLOCK_ON_DEPENDENCY', dependency: 'payment-gateway' },
    ]);
    await makeTask('refund-done', [{ type: 'START' }, { type: 'COMPLETE' }]);
    await createDurableActor(status.machine, {
      id: 'agent-1',
      store,
      input: {
        agentId: 'agent-1',
        name: 'analyst',
        task: 'summarise',
        modelBackend: 'x',
        createdAt: 0,
      },
      schemas: status.events,
    });
    const server = createServer({
      store,
      charts,
      keys: [AGENT, DASHBOARD],
      accessToken: TOKEN,
      dashboard: { approvals: true },
      pollMs: 100,
    });
    http = await listen(server);
    context = await chromium.launchPersistentContext(mkdtempSync(join(dir, 'profile-')), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', ...OFFLINE_CHROMIUM_ARGS],
      viewport: { width: 1280, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
  });

  afterAll(async () => {
    await context?.close();
    await http?.close();
    if (store) {
      await getRuntime(store).close();
      await store.close();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('loads with no console errors and lists the actors with seed 000 badge colours', async () => {
    await page.goto(`${http.url}/?token=${TOKEN}`);
    await expect.poll(() => page.locator('[data-testid="actor-row"]').count()).toBe(5);
    await expect.poll(() => page.getAttribute('[data-testid="live"]', 'data-state')).toBe('open');
    const paused = page.locator('[data-actor-id="refund-paused"] [data-testid="state-badge"]');
    expect(await paused.textContent()).toBe('paused');
    expect(await paused.evaluate((e) => getComputedStyle(e).backgroundColor)).toBe(
      'rgb(156, 163, 175)', // bg-gray-400
    );
    // Paused and blocked are counted apart.
    expect(await page.textContent('[data-testid="count-paused"] .n')).toBe('1');
    expect(await page.textContent('[data-testid="count-blocked"] .n')).toBe('1');
    expect(page.url()).toBe(`${http.url}/`); // the token left the address bar
    await shot('01-actors');
    expect(consoleErrors).toEqual([]);
  });

  test('updates live when an event is sent, without a reload', async () => {
    const row = page.locator('[data-actor-id="refund-running"]');
    expect(await row.getAttribute('data-state')).toBe('running');
    expect(
      await sendSigned('refund-running', { type: 'BLOCK_ON_DEPENDENCY', dependency: 'crm' }),
    ).toBe(200);
    await expect
      .poll(() => page.getAttribute('[data-actor-id="refund-running"]', 'data-state'))
      .toBe('blocked');
    expect(await page.textContent('[data-testid="count-blocked"] .n')).toBe('2');
    await shot('02-live-update');
    expect(consoleErrors).toEqual([]);
  });

  test('filters by machine and state', async () => {
    await page.selectOption('[data-testid="filter-machine"]', 'task-lifecycle');
    await expect.poll(() => page.locator('[data-testid="actor-row"]').count()).toBe(4);
    await page.selectOption('[data-testid="filter-state"]', 'blocked');
    await expect
      .poll(async () =>
        (
          await page
            .locator('[data-testid="actor-row"]')
            .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-actor-id')))
        ).sort(),
      )
      .toEqual(['refund-blocked', 'refund-running']);
    expect(page.url()).toContain('state=blocked');
    await shot('03-filtered');
  });

  test('the actor page shows the timeline and the chart with the current state highlighted', async () => {
    await page.goto(`${http.url}/actors/refund-paused`);
    await page.waitForSelector('[data-testid="diagram"] svg');
    const current = page.locator('[data-testid="diagram"] svg g.current');
    await expect.poll(() => current.count()).toBe(1);
    expect((await current.textContent())?.trim()).toBe('paused');
    expect(
      await page
        .locator('[data-testid="timeline-entry"]')
        .evaluateAll((items) => items.map((i) => i.getAttribute('data-event'))),
    ).toEqual(['PAUSE_FOR_APPROVAL', 'START', 'xstate.init']);
    // The read token's session shows the approval, and asks the approver to sign in.
    expect(await page.isVisible('[data-testid="approve"]')).toBe(false);
    expect(await page.isVisible('[data-testid="sign-in"]')).toBe(true);
    await shot('04-actor-paused');
    expect(consoleErrors).toEqual([]);
  });

  test('Approve moves the paused task to running through the authorized path', async () => {
    await page.fill('[data-testid="sign-in-key"]', DASHBOARD.id);
    await page.fill('[data-testid="sign-in-secret"]', DASHBOARD.secret);
    await page.click('[data-testid="sign-in-submit"]');
    await page.waitForSelector('[data-testid="approve"]');
    expect(await page.textContent('[data-testid="signed-in-as"]')).toContain(DASHBOARD.id);
    await page.fill('[data-testid="approval-comment"]', 'within policy');
    await page.click('[data-testid="approve"]');
    await expect
      .poll(() => page.getAttribute('[data-testid="actor-header"]', 'data-state'))
      .toBe('running');
    expect(await page.textContent('[data-testid="decision-result"]')).toContain('Approved');
    await page.waitForSelector('[data-testid="diagram"] svg g.current');
    expect(
      (await page.locator('[data-testid="diagram"] svg g.current').textContent())?.trim(),
    ).toBe('running');
    expect(await page.isVisible('[data-testid="approve"]')).toBe(false);
    const last = (await store.history('refund-paused')).at(-1);
    expect(last?.eventType).toBe('APPROVAL_GRANTED');
    expect(JSON.parse(last?.metadata ?? '{}')).toMatchObject({
      keyId: 'dash',
      route: 'approval-callback',
    });
    expect(JSON.parse(last?.event ?? '{}')).toMatchObject({
      approver: 'dash',
      comment: 'within policy',
    });
    await shot('05-approved');
    expect(consoleErrors).toEqual([]);
  });

  test('time travel: choosing a step shows it replayed and checked, with a link and ←/→', async () => {
    await page.goto(`${http.url}/actors/refund-paused`);
    await page.waitForSelector('[data-testid="diagram"] svg');
    await page.click('[data-testid="timeline-entry"][data-seq="2"] [data-testid="timeline-step"]');
    const card = page.locator('[data-testid="time-travel"]');
    await expect.poll(() => card.getAttribute('data-seq')).toBe('2');
    expect(await card.getAttribute('data-state')).toBe('running');
    expect(await page.getAttribute('[data-testid="snapshot-check"]', 'data-check')).toBe('match');
    expect(page.url()).toBe(`${http.url}/actors/refund-paused?step=2`);
    await expect
      .poll(async () =>
        (await page.locator('[data-testid="diagram"] svg g.current').textContent())?.trim(),
      )
      .toBe('running');
    expect(await page.getAttribute('[data-testid="diagram"]', 'data-visited')).toBe('planned');
    await shot('06-time-travel-step-2');

    await page.keyboard.press('ArrowRight');
    await expect.poll(() => card.getAttribute('data-seq')).toBe('3');
    expect(await card.getAttribute('data-state')).toBe('paused');
    // The approval request appears in the context diff of step 3.
    expect(
      await page
        .locator('[data-testid="step-diff"] li[data-path="approval"]')
        .getAttribute('data-kind'),
    ).toBe('changed');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => card.getAttribute('data-seq')).toBe('1');
    expect(await card.getAttribute('data-state')).toBe('planned');
    expect(await page.isDisabled('[data-testid="step-prev"]')).toBe(true);

    // The link to a step opens that step.
    await page.goto(`${http.url}/actors/refund-paused?step=3`);
    await expect.poll(() => page.getAttribute('[data-testid="time-travel"]', 'data-seq')).toBe('3');
    expect(await page.getAttribute('[data-testid="snapshot-check"]', 'data-check')).toBe('match');
    await shot('07-time-travel-shared-link');
    expect(await seriousViolations()).toEqual([]);
    await page.click('[data-testid="step-now"]');
    await expect.poll(() => page.locator('[data-testid="time-travel"]').count()).toBe(0);
    expect(page.url()).toBe(`${http.url}/actors/refund-paused`);
    expect(consoleErrors).toEqual([]);
  });

  test('a plain XState app sends inspection events: its actors, chart and state appear', async () => {
    const inspectUrl = http.inspectUrl;
    if (inspectUrl === undefined) throw new Error('no inspection socket');
    const inspector = createWebSocketInspector({ url: inspectUrl });
    const lightChild = createMachine({
      id: 'pedestrian',
      initial: 'wait',
      states: { wait: { on: { WALK: 'walk' } }, walk: {} },
    });
    const light = createMachine({
      id: 'traffic-light',
      initial: 'green',
      context: { cycles: 0 },
      states: {
        green: { on: { NEXT: 'yellow' } },
        yellow: { on: { NEXT: 'red' } },
        red: {
          invoke: { id: 'crossing', src: lightChild },
          on: {
            NEXT: {
              target: 'green',
              actions: assign({ cycles: ({ context }) => context.cycles + 1 }),
            },
          },
        },
      },
    });
    const actor = createActor(light, { inspect: inspector.inspect }).start();
    actor.send({ type: 'NEXT' });
    actor.send({ type: 'NEXT' });

    await page.goto(`${http.url}/inspector`);
    const row = page.locator('[data-testid="inspected-row"][data-name="traffic-light"]');
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 20_000 }).toBe('red');
    await expect
      .poll(() => page.locator('[data-testid="inspected-row"][data-name="crossing"]').count())
      .toBe(1);
    await shot('08-inspector-list');
    expect(await seriousViolations()).toEqual([]);

    await row.locator('a').click();
    await page.waitForSelector('[data-testid="inspected-diagram"] svg');
    await expect
      .poll(async () =>
        (
          await page.locator('[data-testid="inspected-diagram"] svg g.current').textContent()
        )?.trim(),
      )
      .toBe('red');
    expect(
      await page
        .locator('[data-testid="inspected-entry"][data-kind="event"]')
        .evaluateAll((items) => items.map((i) => i.getAttribute('data-event'))),
    ).toEqual(['NEXT', 'NEXT', 'xstate.init']);
    // The invoked child is listed under its invoke id, and linked from its parent.
    expect(await page.textContent('[data-testid="inspected-child"]')).toContain('crossing');

    // Live: the next event moves the lit state without a reload.
    actor.send({ type: 'NEXT' });
    await expect
      .poll(() => page.getAttribute('[data-testid="inspected-header"]', 'data-state'))
      .toBe('green');
    await expect
      .poll(async () =>
        (
          await page.locator('[data-testid="inspected-diagram"] svg g.current').textContent()
        )?.trim(),
      )
      .toBe('green');
    expect(await page.textContent('[data-testid="inspected-context"]')).toContain('"cycles": 1');
    await shot('09-inspector-actor');
    expect(await seriousViolations()).toEqual([]);
    inspector.stop();
    expect(consoleErrors).toEqual([]);
  });

  test('charts are laid out by ELK: no two edge labels overlap, timer edges carry event names', async () => {
    await page.goto(`${http.url}/actors/refund-paused`);
    await page.waitForSelector('[data-testid="diagram"] svg');
    expect(await page.evaluate(() => document.documentElement.dataset['layout'])).toBe('elk');
    const { texts, overlaps } = await edgeLabelOverlaps(
      page.locator('[data-testid="diagram"] svg .edgeLabel'),
    );
    expect(texts.length).toBeGreaterThan(10);
    expect(overlaps).toEqual([]);
    expect(texts).toContain('RETRY (after retryBackoff) [canRetry]');
    await shot('10-chart-elk');
    expect(consoleErrors).toEqual([]);
  });

  test('the actors list has no serious accessibility violations', async () => {
    await page.goto(`${http.url}/`);
    await expect.poll(() => page.locator('[data-testid="actor-row"]').count()).toBe(5);
    expect(await seriousViolations()).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
