/**
 * A chart's Mermaid source drawn as a standalone SVG, laid out by mermaid's ELK
 * layout (`@mermaid-js/layout-elk`) so that edge labels do not overlap: what the
 * dashboard draws, for `agentcharts diagram --svg`.
 *
 * Mermaid needs a DOM that measures text, so it runs in headless Chromium driven
 * by `playwright-core`. Everything runs offline: the page, mermaid's browser
 * bundle and the ELK modules are answered from `node_modules` by a request
 * handler, and every other request is aborted.
 */
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import type { Browser, Route } from 'playwright-core';
import { AgentchartsError } from '../core/errors.ts';
import { importOptional, MissingDependencyError } from '../core/optional.ts';

/** Chromium flags for a headless run that never reaches the network on its own. */
export const OFFLINE_CHROMIUM_ARGS: readonly string[] = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** The optional packages an SVG needs. */
export const SVG_PACKAGES = ['playwright-core', 'mermaid', '@mermaid-js/layout-elk'] as const;

/** Debian's and Ubuntu's Chromium, used when nothing else names a browser. */
export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/** The browser could not be found or started; the message says which and from where. */
export class BrowserError extends AgentchartsError {
  override name = 'BrowserError';
  /** The executable tried, when there was one. */
  readonly executable: string | undefined;
  constructor(message: string, executable?: string, options?: { cause?: unknown }) {
    super('BROWSER', message, options);
    this.executable = executable;
  }
}

/** Mermaid could not be loaded in the page or could not draw the diagram. */
export class SvgRenderError extends AgentchartsError {
  override name = 'SvgRenderError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SVG_RENDER', message, options);
  }
}

export interface RenderSvgOptions {
  /** The Chromium executable; else `CHROMIUM_PATH`, `PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH`, /usr/bin/chromium, playwright's own. */
  browser?: string | undefined;
  /** Where the two variables are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** What asked, for MissingDependencyError (default `agentcharts diagram --svg`). */
  feature?: string;
  /** Milliseconds for starting the browser and for drawing (default 60 000). */
  timeoutMs?: number;
}

/** Which Chromium to run and what named it (for the error when it is not there). */
export function chooseBrowser(
  option: string | undefined,
  env: NodeJS.ProcessEnv,
  playwrightOwn: () => string | undefined,
): { path: string; from: string } {
  if (option !== undefined && option !== '') return { path: option, from: '--browser' };
  for (const name of ['CHROMIUM_PATH', 'PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH']) {
    const value = env[name];
    if (value !== undefined && value !== '') return { path: value, from: name };
  }
  if (existsSync(SYSTEM_CHROMIUM)) return { path: SYSTEM_CHROMIUM, from: 'the system' };
  let own: string | undefined;
  try {
    own = playwrightOwn();
  } catch {
    own = undefined;
  }
  if (own !== undefined && own !== '' && existsSync(own)) return { path: own, from: 'playwright' };
  throw new BrowserError(
    `no Chromium found: pass --browser <path>, set CHROMIUM_PATH, or install one (apt-get install chromium, or npx playwright install chromium)`,
  );
}

interface Assets {
  mermaid: string;
  elkDir: string;
}

function findAssets(feature: string): Assets {
  const require = createRequire(import.meta.url);
  try {
    const mermaid = require.resolve('mermaid/dist/mermaid.min.js');
    const elkDir = join(dirname(require.resolve('@mermaid-js/layout-elk/package.json')), 'dist');
    return { mermaid, elkDir };
  } catch (error) {
    throw new MissingDependencyError(feature, SVG_PACKAGES, { cause: error });
  }
}

/** Where the page lives; nothing is fetched from it, every request is answered here. */
const ORIGIN = 'http://agentcharts.invalid';
const ELK_ENTRY = 'mermaid-layout-elk.esm.min.mjs';
/** The ELK files the page may load: the entry and its chunks. */
const ELK_FILE =
  /^(mermaid-layout-elk\.esm\.min\.mjs|chunks\/mermaid-layout-elk\.esm\.min\/[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.mjs)$/;

/**
 * The page's script: `window.agentchartsRender(source)` draws the diagram with
 * the ELK layout and returns it serialized as XML (so that the labels' XHTML
 * carries its namespace and the file stands alone), sized by its viewBox.
 */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>agentcharts diagram</title>
<script src="/mermaid.min.js"></script>
<script type="module">
const mermaid = window.mermaid;
try {
  if (!mermaid) throw new Error('mermaid did not load');
  mermaid.registerLayoutLoaders((await import('/layout-elk/${ELK_ENTRY}')).default);
} catch (error) {
  window.agentchartsReady = String(error && error.message ? error.message : error);
  throw error;
}
mermaid.initialize({
  startOnLoad: false,
  securityLevel: 'strict',
  theme: 'default',
  layout: 'elk',
  elk: { mergeEdges: false, nodePlacementStrategy: 'NETWORK_SIMPLEX' },
});
window.agentchartsRender = async (source) => {
  const { svg } = await mermaid.render('agentcharts-diagram', source);
  const holder = document.createElement('div');
  holder.innerHTML = svg;
  document.body.append(holder);
  const root = holder.querySelector('svg');
  const box = root.viewBox.baseVal;
  if (box && box.width > 0 && box.height > 0) {
    root.setAttribute('width', String(Math.ceil(box.width)));
    root.setAttribute('height', String(Math.ceil(box.height)));
    root.style.removeProperty('max-width');
  }
  root.style.setProperty('background-color', 'white');
  return new XMLSerializer().serializeToString(root);
};
window.agentchartsReady = true;
</script></head><body></body></html>`;

/** The first line of a browser error, without playwright's call log. */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split('\n').find((l) => l.trim() !== '') ?? 'failed';
  return line.replace(/^[A-Za-z]+\.[A-Za-z]+:\s*/, '').trim();
}

/** A page error on one line: its lines joined, without playwright's call log. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split('\n');
  // Up to playwright's call log or the page's stack trace.
  const log = lines.findIndex((l) => /^\s*(Call log:|at )/.test(l));
  return (log >= 0 ? lines.slice(0, log) : lines)
    .join(' ')
    .replace(/^[A-Za-z]+\.[A-Za-z]+:\s*/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Draws `source` (Mermaid, e.g. from toMermaid) to a standalone SVG document
 * (with an XML declaration) in headless Chromium, offline, laid out by ELK.
 * Throws MissingDependencyError when playwright-core, mermaid or
 * @mermaid-js/layout-elk is not installed, BrowserError when no browser starts,
 * SvgRenderError when mermaid cannot draw `source`.
 */
export async function renderMermaidSvg(
  source: string,
  options: RenderSvgOptions = {},
): Promise<string> {
  const feature = options.feature ?? 'agentcharts diagram --svg';
  const timeout = options.timeoutMs ?? 60_000;
  const assets = findAssets(feature);
  const { chromium } = await importOptional(() => import('playwright-core'), feature, [
    ...SVG_PACKAGES,
  ]);
  const { path: executable, from } = chooseBrowser(
    options.browser,
    options.env ?? process.env,
    () => chromium.executablePath(),
  );
  if (!existsSync(executable) || !statSync(executable).isFile()) {
    throw new BrowserError(`Chromium not found at ${executable} (from ${from})`, executable);
  }
  let browser: Browser;
  try {
    browser = await chromium.launch({
      executablePath: executable,
      headless: true,
      timeout,
      args: [...OFFLINE_CHROMIUM_ARGS],
    });
  } catch (error) {
    throw new BrowserError(
      `Chromium at ${executable} (from ${from}) did not start: ${firstLine(error)}`,
      executable,
      { cause: error },
    );
  }
  try {
    const context = await browser.newContext({ serviceWorkers: 'block' });
    const page = await context.newPage();
    page.setDefaultTimeout(timeout);
    await page.route('**', (route) => answer(route, assets));
    await page.goto(`${ORIGIN}/`, { waitUntil: 'load' });
    await page.waitForFunction('window.agentchartsReady !== undefined');
    const ready = await page.evaluate<unknown>('window.agentchartsReady');
    if (ready !== true) throw new SvgRenderError(`mermaid could not load: ${String(ready)}`);
    let svg: string;
    try {
      svg = await page.evaluate<string>(`window.agentchartsRender(${JSON.stringify(source)})`);
    } catch (error) {
      throw new SvgRenderError(`mermaid could not draw the diagram: ${oneLine(error)}`, {
        cause: error,
      });
    }
    return `<?xml version="1.0" encoding="UTF-8"?>\n${svg}\n`;
  } finally {
    await browser.close();
  }
}

/** Answers the page's requests from disk; aborts anything else (no network). */
async function answer(route: Route, assets: Assets): Promise<void> {
  const url = new URL(route.request().url());
  if (url.origin === ORIGIN) {
    if (url.pathname === '/') {
      await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: PAGE });
      return;
    }
    if (url.pathname === '/mermaid.min.js') {
      await route.fulfill({ status: 200, contentType: 'text/javascript', path: assets.mermaid });
      return;
    }
    const file = url.pathname.startsWith('/layout-elk/')
      ? url.pathname.slice('/layout-elk/'.length)
      : undefined;
    if (file !== undefined && ELK_FILE.test(file)) {
      const path = join(assets.elkDir, ...file.split('/'));
      if (!relative(assets.elkDir, path).startsWith(`..${sep}`) && existsSync(path)) {
        await route.fulfill({ status: 200, contentType: 'text/javascript', path });
        return;
      }
    }
  }
  await route.abort('blockedbyclient');
}
