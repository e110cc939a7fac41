import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { catalog } from '../machines/index.ts';
import { CHROMIUM, chromiumAvailable, edgeLabelOverlaps } from './support/browser.ts';
import { expectCleanFailure, runCli, type CliResult } from './support/cli.ts';

const available = chromiumAvailable('agentcharts diagram --svg tests');

const states = Object.keys(catalog['task-lifecycle'].machine.root.states);

let dir: string;
let printed: CliResult;
let written: CliResult;
let browser: Browser;
let page: Page;

describe.skipIf(!available)('agentcharts diagram --svg (mermaid ELK layout in Chromium)', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentcharts-svg-'));
    // Once from the default browser (no --browser), once from --browser with --out.
    printed = await runCli(['diagram', 'task-lifecycle', '--svg']);
    written = await runCli([
      'diagram',
      'task-lifecycle',
      '--svg',
      '--browser',
      CHROMIUM,
      '--out',
      join(dir, 'task.svg'),
    ]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('prints a standalone SVG naming every state and the timer event', () => {
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    const svg = printed.stdout;
    expect(svg.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<svg ')).toBe(true);
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg).toContain('aria-roledescription="stateDiagram"');
    expect(states.length).toBeGreaterThan(5);
    for (const state of states) expect(svg).toContain(`>${state}<`);
    expect(svg).toContain('RETRY (after retryBackoff)');
    // Sized by its viewBox, not by the page that drew it.
    const root = /<svg [^>]*>/.exec(svg)?.[0] ?? '';
    expect(root).toMatch(/ width="\d+"/);
    expect(root).toMatch(/ height="\d+"/);
    expect(root).not.toContain('max-width');
  });

  test('--out writes the same SVG to the file and prints nothing', () => {
    expect(written.stderr).toBe('');
    expect(written.code).toBe(0);
    expect(written.stdout).toBe('');
    expect(readFileSync(join(dir, 'task.svg'), 'utf8')).toBe(printed.stdout);
  });

  test('opened on its own, it is well-formed SVG and no two edge labels overlap', async () => {
    const file = join(dir, 'printed.svg');
    writeFileSync(file, printed.stdout);
    // Loaded as an SVG document: the XML parser would show a parsererror if it were not well-formed.
    await page.goto(pathToFileURL(file).href);
    expect(await page.evaluate(() => document.documentElement.localName)).toBe('svg');
    expect(await page.locator('parsererror').count()).toBe(0);
    const nodes = await page
      .locator('.node')
      .evaluateAll((elements) => elements.map((e) => e.textContent?.trim() ?? ''));
    for (const state of states) expect(nodes).toContain(state);
    const { texts, overlaps } = await edgeLabelOverlaps(page.locator('.edgeLabel'));
    expect(texts.length).toBeGreaterThan(10);
    expect(overlaps).toEqual([]);
    expect(texts).toContain('RETRY (after retryBackoff) [canRetry]');
  });

  test('a browser that is not there: one clear line and exit 1', async () => {
    const result = await runCli(['diagram', 'task-lifecycle', '--svg', '--browser', '/nope']);
    expectCleanFailure(
      result,
      /^agentcharts: BrowserError: Chromium not found at \/nope \(from --browser\)\n$/,
    );
    expect(result.code).toBe(1);
  });
});

test('--out and --browser belong to --svg', async () => {
  const out = join(tmpdir(), `agentcharts-svg-${process.pid}-x.svg`);
  expectCleanFailure(
    await runCli(['diagram', 'task-lifecycle', '--out', out]),
    /Option --out: only with --svg/,
  );
  expect(existsSync(out)).toBe(false);
  expectCleanFailure(
    await runCli(['diagram', 'task-lifecycle', '--browser', CHROMIUM]),
    /Option --browser: only with --svg/,
  );
});
