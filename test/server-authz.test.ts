/**
 * The authorisation matrix, generated from the charts' event metadata: for every
 * chart, every event it declares or handles, and every kind of principal, what
 * `POST /api/events` must answer, over real HTTP on SQLite and on PostgreSQL.
 *
 * - the read token (no signature): 401 — reading never sends anything;
 * - a timer-only or internal event: 403 `event_not_sendable` for every key;
 * - a key whose role is not among the event's roles: 403;
 * - a key whose role is: never 401/403 (the event may still be 400, 409 or 200,
 *   which is the chart's business, not authorisation's).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { chartMeta } from '../src/core/meta.ts';
import { getRuntime } from '../src/index.ts';
import { createServer, listen, type ListeningServer } from '../src/server/app.ts';
import { signRequest, type ApiKey, type KeyRole } from '../src/server/auth.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { oneActorPerChart } from './support/actors.ts';
import { usePostgres } from './support/postgres.ts';

const TOKEN = 'read-token-0123456789abcdef';
const ROLES: readonly KeyRole[] = ['agent', 'approver', 'leader', 'operator'];
const KEYS: ApiKey[] = ROLES.map((role) => ({
  id: `${role}-key`,
  secret: `${role}-secret-0123456789abcdef`,
  role,
}));

interface Case {
  chart: string;
  event: string;
  principal: 'token' | KeyRole;
  expect: 'unauthenticated' | 'forbidden' | 'allowed';
  reason?: string;
}

/** Every (chart, event, principal) with its expected outcome, from the metadata alone. */
function matrix(): Case[] {
  const cases: Case[] = [];
  for (const chart of charts) {
    const meta = chartMeta(chart.machine);
    for (const info of meta.events) {
      cases.push({
        chart: chart.name,
        event: info.type,
        principal: 'token',
        expect: 'unauthenticated',
      });
      for (const role of ROLES) {
        const sendable = info.kind !== 'timer-only' && info.kind !== 'internal';
        cases.push({
          chart: chart.name,
          event: info.type,
          principal: role,
          expect: sendable && info.roles.includes(role) ? 'allowed' : 'forbidden',
          ...(sendable ? {} : { reason: 'event_not_sendable' }),
        });
      }
    }
  }
  return cases;
}

/** A sample of the event, without the field naming its sender (the server fills it). */
function sample(chartName: string, type: string): Record<string, unknown> {
  const chart = charts.find((c) => c.name === chartName);
  const samples = (chart?.eventSamples as Record<string, readonly Record<string, unknown>[]>)[type];
  const event = { ...(samples?.[0] ?? { type }) };
  const signer = chart ? chartMeta(chart.machine).event(type).signer : undefined;
  if (signer !== undefined) delete event[signer];
  return event;
}

const CASES = matrix();

function authzSuite(
  name: string,
  open: () => Promise<{ store: Store; cleanup: () => Promise<void> }>,
) {
  describe(`the authorisation matrix (${name})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let http: ListeningServer;
    let second = 0;

    beforeAll(async () => {
      ({ store, cleanup } = await open());
      await oneActorPerChart(store, 'authz');
      const server = createServer({ store, charts, keys: KEYS, accessToken: TOKEN, pollMs: 0 });
      http = await listen(server);
    }, 60_000);

    afterAll(async () => {
      await http.close();
      await getRuntime(store).close();
      await store.close();
      await cleanup();
    });

    test(`${CASES.length} cases: every (chart, event, principal) answers as its metadata says`, async () => {
      const wrong: string[] = [];
      for (const c of CASES) {
        const body = JSON.stringify({
          actorId: `authz-${c.chart}`,
          event: sample(c.chart, c.event),
        });
        const key = KEYS.find((k) => k.role === c.principal);
        const headers: Record<string, string> = key
          ? signRequest(
              key,
              { method: 'POST', path: '/api/events', body },
              Math.floor(Date.now() / 1000) - (++second % 200),
            )
          : { authorization: `Bearer ${TOKEN}` };
        const response = await fetch(`${http.url}/api/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
        const answer = (await response.json()) as { reason?: string };
        const got =
          response.status === 401
            ? 'unauthenticated'
            : response.status === 403
              ? 'forbidden'
              : 'allowed';
        const reasonOk = c.reason === undefined || answer.reason === c.reason;
        if (got !== c.expect || !reasonOk || response.status >= 500) {
          wrong.push(
            `${c.chart} ${c.event} as ${c.principal}: ${response.status} ${JSON.stringify(answer)}, expected ${c.expect}${c.reason ? ` (${c.reason})` : ''}`,
          );
        }
      }
      expect(wrong).toEqual([]);
      // The matrix covers what matters: approvals, timer-only events and commands.
      expect(
        CASES.some(
          (c) =>
            c.event === 'APPROVAL_GRANTED' && c.principal === 'agent' && c.expect === 'forbidden',
        ),
      ).toBe(true);
      expect(CASES.some((c) => c.event === 'TIMEOUT' && c.reason === 'event_not_sendable')).toBe(
        true,
      );
    }, 120_000);
  });
}

authzSuite('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentcharts-authz-'));
  return Promise.resolve({
    store: openStore(`sqlite:${join(dir, 'authz.db')}`),
    cleanup: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  });
});

describe('on PostgreSQL', () => {
  const postgres = usePostgres();
  test('a PostgreSQL server is available (CI installs one)', (context) => {
    if (!postgres()) context.skip();
  });
  authzSuite('PostgreSQL', () => {
    const server = postgres();
    if (!server) throw new Error('no PostgreSQL server');
    return Promise.resolve({
      store: openStore(server.freshUrl()),
      cleanup: () => Promise.resolve(),
    });
  });
});
