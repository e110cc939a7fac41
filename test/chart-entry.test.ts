/**
 * `agentcharts/chart` is browser-safe: a chart built on it bundles with esbuild
 * `--platform=browser` with no error and nothing of Node, small enough to ship
 * (the consumer suite measures the same from the packed package).
 */
import { build, type Metafile } from 'esbuild';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');

async function bundle(contents: string) {
  const out = await build({
    stdin: { contents, resolveDir: root },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Custom conditions replace esbuild's default `module`, which a user's bundle
    // keeps (without it xstate resolves to its CommonJS build, 3 kB more gzip).
    conditions: ['agentcharts-source', 'module'],
  });
  const bytes = out.outputFiles[0]?.contents ?? new Uint8Array();
  return { out, gzip: gzipSync(bytes).byteLength, inputs: Object.keys(out.metafile.inputs) };
}

/** The package's own modules a bundle took in. */
const ours = (meta: Metafile) => Object.keys(meta.inputs).filter((f) => f.startsWith('src/'));

describe('agentcharts/chart in the browser', () => {
  test('every export bundles for the browser with no error, from src/core and src/strict only', async () => {
    const { out } = await bundle("export * from 'agentcharts/chart';");
    expect(out.errors).toEqual([]);
    expect(ours(out.metafile).every((f) => /^src\/(core|strict)\/|^src\/chart\.ts$/.test(f))).toBe(
      true,
    );
    expect(ours(out.metafile)).not.toContain('src/core/optional.ts');
  });

  test('a chart that declares its properties bundles for the browser too', async () => {
    const { out } = await bundle(`
      import { createMachine } from 'xstate';
      import { defineChart, only, reachable } from 'agentcharts/chart';
      const machine = createMachine({ id: 'p', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } });
      export const chart = defineChart(machine, {
        properties: [reachable('b'), only('a', 'b', { via: ['GO'] })],
      });
    `);
    expect(out.errors).toEqual([]);
    expect(ours(out.metafile).every((f) => /^src\/(core|strict)\/|^src\/chart\.ts$/.test(f))).toBe(
      true,
    );
  });

  test('the walkthrough chart bundles within 45 kB gzip with xstate and zod', async () => {
    const { out, gzip } = await bundle(
      "export { chart } from './examples/your-own-chart/doc-review.ts';",
    );
    expect(out.errors).toEqual([]);
    console.info(`doc-review for the browser: ${(gzip / 1024).toFixed(1)} kB gzip (${gzip} bytes)`);
    expect(gzip).toBeLessThanOrEqual(45 * 1024);
  });
});
