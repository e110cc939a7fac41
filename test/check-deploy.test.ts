/**
 * `checkDeploy` / `agentcharts check-deploy`: a dry run of a new chart version
 * against every stored actor, on SQLite and real PostgreSQL with 10,000 actors
 * stored at two versions. Nothing is written.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup } from 'xstate';
import {
  ManualClock,
  checkDeploy,
  createDurableActor,
  defineChart,
  getRuntime,
  openDurableActor,
  openStore,
  type Store,
} from '../src/index.ts';
import { runCli } from './support/cli.ts';
import { usePostgres } from './support/postgres.ts';
import { v1, v2, v2Breaking } from './fixtures/doc-versions.ts';

const MOVES = [[], [{ type: 'NEXT' }], [{ type: 'WAIT' }], [{ type: 'PARK' }]] as const;

/** `count` actors: 90% at version 1 spread over a, b, t and x; 10% created at version 2. */
async function fill(store: Store, count: number): Promise<void> {
  const old = Math.floor(count * 0.9);
  for (let start = 0; start < count; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - start) }, async (_, k) => {
        const i = start + k;
        const chart = i < old ? v1 : v2;
        const actor = await createDurableActor(chart.machine, {
          id: `doc-${String(i).padStart(5, '0')}`,
          store,
          version: chart.version,
          migrations: chart.migrations,
        });
        for (const event of MOVES[i % MOVES.length] ?? []) await actor.send(event);
      }),
    );
  }
  await getRuntime(store).close();
}

async function snapshotOf(store: Store) {
  const rows = await store.listActors({ limit: 100_000 });
  return rows.map((r) => [r.id, r.version, r.chartVersion, r.state].join(':')).join('\n');
}

function suite(name: string, url: () => string | undefined) {
  describe(name, () => {
    test('10,000 actors at two versions: the good version strands none, the breaking one names each, nothing is written', async () => {
      const at = url();
      if (at === undefined) return;
      const store = openStore(at);
      await fill(store, 10_000);
      const before = await snapshotOf(store);
      let pages = 0;
      const good = await checkDeploy(store, {
        charts: [v2],
        current: [v1, v2],
        onProgress: () => pages++,
      });
      expect(good).toEqual({ ok: true, checked: 10_000, migrating: 9_000, stranded: [] });
      expect(pages).toBe(20);

      const bad = await checkDeploy(store, { charts: [v2Breaking], current: [v1, v2] });
      expect(bad.ok).toBe(false);
      const byKind = new Map<string, number>();
      for (const s of bad.stranded) byKind.set(s.kind, (byKind.get(s.kind) ?? 0) + 1);
      // Of the 9,000 at version 1, a quarter each stand in a, b, t and x.
      // A quarter of each version's actors stand in each of a, b (c), t and x.
      expect(Object.fromEntries(byKind)).toEqual({
        events_lost: 2 * (2_250 + 250), // a loses PARK, b/c loses APPROVE
        timer_lost: 2_250 + 250, // t's 60 s delay is gone
        unrestorable: 2_250 + 250, // x is gone, at either version
      });
      expect(bad.stranded).toContainEqual({
        actorId: 'doc-00001',
        machineId: 'doc',
        state: 'b',
        storedVersion: 1,
        version: 2,
        kind: 'events_lost',
        detail: '"c" no longer accepts APPROVE',
      });
      expect(await snapshotOf(store)).toBe(before);
      await store.close();
    }, 300_000);
  });
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentcharts-deploy-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

suite('SQLite', () => `sqlite:${join(dir, 'doc.db')}`);

describe('PostgreSQL', () => {
  const server = usePostgres();
  suite('real server', () => server()?.freshUrl());
});

describe('agentcharts check-deploy', () => {
  test('prints a table or JSON and exits 1 when any actor would be stranded', async () => {
    const file = join(dir, 'doc.db');
    const store = openStore(`sqlite:${file}`);
    await fill(store, 8);
    await store.close();
    const fixtures = join(import.meta.dirname, 'fixtures', 'doc-versions.ts');
    const module = join(dir, 'next.ts');
    const breaking = join(dir, 'breaking.ts');
    const { writeFileSync } = await import('node:fs');
    // What runs now: version 1, from the project's config.
    writeFileSync(
      join(dir, 'agentcharts.config.ts'),
      `import { v1 } from ${JSON.stringify(fixtures)};\nexport default { charts: [v1] };\n`,
    );
    writeFileSync(module, `export { v2 as chart } from ${JSON.stringify(fixtures)};\n`);
    writeFileSync(breaking, `export { v2Breaking as chart } from ${JSON.stringify(fixtures)};\n`);

    const ok = await runCli(['check-deploy', '--db', file, '--charts', module], dir);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('ok: no stored actor would be stranded');
    expect(ok.stdout).toMatch(/actors {5}8\n {2}migrating {2}7/);

    const bad = await runCli(['check-deploy', '--db', file, '--charts', breaking], dir);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(
      /doc-00001 +doc +b +1 → 2 +events_lost +"c" no longer accepts APPROVE/,
    );
    const json = await runCli(['check-deploy', '--db', file, '--charts', breaking, '--json'], dir);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { ok: boolean; checked: number };
    expect(report).toMatchObject({ ok: false, checked: 8 });
  });
});

// docs/versions.md: a state renamed in a new version keeps its pending `after`
// timers when it keeps its old id; renamed without it, they are lost.
describe('a renamed state and its pending timer', () => {
  const v1Timer = setup({ delays: { deadline: 1_000 } }).createMachine({
    id: 'exp',
    initial: 'draft',
    states: {
      draft: { on: { SUBMIT: 'approval' } },
      approval: { after: { deadline: 'expired' }, on: { OK: 'paid' } },
      expired: {},
      paid: {},
    },
  });
  const renamed = (keepId: boolean) =>
    defineChart(
      setup({ delays: { deadline: 1_000 } }).createMachine({
        id: 'exp',
        initial: 'draft',
        states: {
          draft: { on: { SUBMIT: 'signoff' } },
          signoff: {
            ...(keepId ? { id: 'exp.approval' } : {}),
            after: { deadline: 'expired' },
            on: { OK: 'paid' },
          },
          expired: {},
          paid: {},
        },
      }),
      {
        version: 2,
        migrations: {
          1: (s) => ({ ...s, value: s.value === 'approval' ? 'signoff' : s.value }),
        },
      },
    );

  test.each([
    [true, [], 'expired'],
    [false, ['timer_lost'], 'signoff'],
  ])(
    'keeping its old id: %s — stranded %j, after the deadline in %s',
    async (keepId, stranded, after) => {
      const file = join(dir, `renamed-${String(keepId)}.db`);
      const clock = new ManualClock(1_000_000);
      let store = openStore(`sqlite:${file}`);
      getRuntime(store, { clock });
      const actor = await createDurableActor(defineChart(v1Timer), { id: 'e1', store });
      await actor.send({ type: 'SUBMIT' });
      await getRuntime(store).close();
      await store.close();

      const next = renamed(keepId);
      store = openStore(`sqlite:${file}`);
      try {
        const report = await checkDeploy(store, {
          charts: [next],
          current: [defineChart(v1Timer)],
        });
        expect(report.stranded.map((s) => s.kind)).toEqual(stranded);
        getRuntime(store, { clock, charts: [next] });
        const migrated = await openDurableActor(store, 'e1');
        clock.advance(2_000);
        await getRuntime(store).drain();
        expect(migrated.getSnapshot().value).toBe(after);
      } finally {
        await getRuntime(store).close();
        await store.close();
      }
    },
  );
});
