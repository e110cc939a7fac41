/** What the real-browser tests share: Debian's Chromium, and edge-label overlap in a drawn chart. */
import { existsSync } from 'node:fs';
import type { Locator } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Whether Chromium is installed; where it is not, a loud warning (the suite
 * skips) — or, in CI, an error: CI installs it and never skips.
 */
export function chromiumAvailable(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env['CI']) {
    throw new Error(`${CHROMIUM} is missing: CI must install Debian's chromium (.ci/run does)`);
  }
  console.warn(
    `\n${'!'.repeat(78)}\n!! SKIPPED: ${what} — ${CHROMIUM} is not installed.\n!! Install it (apt-get install chromium) to run them; CI never skips them.\n${'!'.repeat(78)}\n`,
  );
  return false;
}

/** The visible edge labels of a Mermaid diagram (`labels`: its `.edgeLabel` elements) and the pairs that overlap. */
export async function edgeLabelOverlaps(
  labels: Locator,
): Promise<{ texts: string[]; overlaps: string[] }> {
  const boxes = await labels.evaluateAll((elements) =>
    elements
      // The outermost element of each label (mermaid nests one inside another).
      .filter((l) => l.parentElement?.closest('.edgeLabel') === null)
      .map((l) => {
        const r = l.getBoundingClientRect();
        return { text: l.textContent?.trim() ?? '', x: r.x, y: r.y, w: r.width, h: r.height };
      })
      .filter((b) => b.w > 0 && b.h > 0 && b.text !== ''),
  );
  const overlaps: string[] = [];
  for (const [i, a] of boxes.entries()) {
    for (const b of boxes.slice(i + 1)) {
      const x = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
      const y = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
      if (x > 1 && y > 1) overlaps.push(`${a.text} / ${b.text}`);
    }
  }
  return { texts: boxes.map((b) => b.text), overlaps };
}
