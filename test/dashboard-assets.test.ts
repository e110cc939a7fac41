import { afterAll, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { createServer } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';

const store = openStore('memory:');
const server = createServer({
  store,
  charts,
  keys: [],
  accessToken: 'assets-token-0123456789',
  pollMs: 0,
  requestLogs: false,
});
const get = (path: string) => server.app.request(`http://127.0.0.1${path}`);

afterAll(async () => {
  await server.close();
  await store.close();
});

test("mermaid's ELK layout is served from the package: its entry and chunks, nothing else", async () => {
  expect(((await (await get('/api/session')).json()) as { elk: boolean }).elk).toBe(true);
  const entry = await get('/assets/layout-elk/mermaid-layout-elk.esm.min.mjs');
  expect(entry.status).toBe(200);
  expect(entry.headers.get('content-type')).toContain('text/javascript');
  const chunk = /"\.\/chunks\/mermaid-layout-elk\.esm\.min\/([\w-]+\.mjs)"/.exec(
    await entry.text(),
  )?.[1];
  expect((await get(`/assets/layout-elk/chunks/mermaid-layout-elk.esm.min/${chunk}`)).status).toBe(
    200,
  );
  for (const path of [
    '/assets/layout-elk/%2e%2e/package.json',
    '/assets/layout-elk/..%2f..%2fpackage.json',
    '/assets/layout-elk/mermaid-layout-elk.esm.min.mjs.map',
    '/assets/layout-elk/mermaid-layout-elk.core.mjs',
    '/assets/layout-elk/chunks/mermaid-layout-elk.core/chunk.mjs',
  ]) {
    expect((await get(path)).status, path).toBe(404);
  }
});
