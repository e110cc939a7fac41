/**
 * The server under attack, in a process of its own (test/fixtures/soak-server.ts)
 * whose memory is read from /proc:
 *
 * 1. One read credential does its worst at once — thousands of sessions,
 *    streams resuming from 0 up to its cap, inspection sockets sending the
 *    largest messages they may (and ones that cost twenty times their size, and
 *    ones nested 20,000 deep), change streams, tickets — and the server's peak
 *    RSS rises by at most 256 MiB; an approver signed in before it stays signed
 *    in and decides.
 * 2. For 60 s (AGENTCHARTS_SOAK_SECONDS), that read credential and a key scoped
 *    to one actor do all of it at once, with bad input, while a worker puts tasks
 *    up for approval and an approver decides them from the dashboard: no 5xx,
 *    every request of the worker and the approver served, the peak bounded as
 *    above, and `verify` clean afterwards.
 *
 * Nothing here is timed: the soak runs for its duration and counts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { charts } from '../machines/index.ts';
import { getRuntime, verify } from '../src/index.ts';
import { openStore } from '../src/store/open.ts';
import {
  SOAK_APPROVER,
  SOAK_INTRUDER,
  SOAK_POOL,
  SOAK_TOKEN,
  SOAK_WORKER,
} from './fixtures/soak-principals.ts';
import { approverSession, signed, signedPost } from './support/principals.ts';
import { suiteTempDir } from './support/temp-dir.ts';

const MiB = 1024 * 1024;
const SOAK_MS = Number(process.env['AGENTCHARTS_SOAK_SECONDS'] ?? 60) * 1000;

const dir = suiteTempDir('agentcharts-soak-');
let child: ChildProcess;
let url: string;
let inspectUrl: string;
let lastId: number;
let db: string;
let manager: string;
/** The server's RSS once started and warmed up: both bounds are measured from it. */
let baseline: number;

/** A field of /proc/<pid>/status, in bytes (VmRSS: now; VmHWM: the peak). */
function memory(field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
  return Number(kb) * 1024;
}

/** Starts counting the peak from now (VmHWM), where the kernel lets us; else false. */
function resetPeak(): boolean {
  try {
    writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The peak RSS since `resetPeak`, or (without it) the largest of the samples taken. */
function peakMeter() {
  const exact = resetPeak();
  let sampled = memory('VmRSS');
  const timer = setInterval(() => {
    sampled = Math.max(sampled, memory('VmRSS'));
  }, 100);
  return {
    exact,
    stop(): number {
      clearInterval(timer);
      return exact ? memory('VmHWM') : Math.max(sampled, memory('VmRSS'));
    },
  };
}

beforeAll(async () => {
  db = join(dir(), 'soak.db');
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const fixture = join(import.meta.dirname, 'fixtures', 'soak-server.ts');
  child = spawn(process.execPath, ['--import', tsx, fixture, db], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ url: string; inspectUrl: string; lastId: number }>(
    (resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = /^READY (.*)$/m.exec(out)?.[1];
        if (line !== undefined) resolve(JSON.parse(line) as never);
      });
      child.once('exit', (code) => reject(new Error(`the soak server exited (${code})`)));
    },
  );
  ({ url, inspectUrl, lastId } = ready);
  manager = await approverSession(url, SOAK_APPROVER);
  // Warm the paths once, then measure from here.
  await approvalRound(SOAK_POOL[0]!);
  baseline = memory('VmRSS');
}, 120_000);

afterAll(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
});

/** A stream that is opened and never read: what the server queues for it stays queued. */
function stalledStream(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = httpRequest(`${url}${path}`, { headers, agent: false });
    req.once('response', (res: IncomingMessage) => {
      if (res.statusCode === 200) res.pause();
      else res.resume();
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
    });
    req.once('error', reject);
    req.end();
  });
}

/** Runs `work` `count` times, `width` at a time. */
async function inParallel(count: number, width: number, work: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** Every status seen, by who asked: no 5xx anywhere, and the legitimate ones all 2xx. */
const statuses = { attacker: new Map<number, number>(), legitimate: new Map<number, number>() };
function count(who: keyof typeof statuses, status: number): number {
  statuses[who].set(status, (statuses[who].get(status) ?? 0) + 1);
  return status;
}
const bearer = { authorization: `Bearer ${SOAK_TOKEN}` };

/** An inspection socket from this machine (no credential needed on loopback). */
async function inspectionSocket(): Promise<WebSocket> {
  const socket = new WebSocket(inspectUrl);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
    socket.once('unexpected-response', (_, res) => reject(new Error(`${res.statusCode}`)));
  });
  return socket;
}

/** The heaviest messages an inspection socket may send, and two that cost more than they look. */
function inspectionMessages(sessionId: string): string[] {
  const big = 'b'.repeat(900_000);
  const objects = `[${Array.from({ length: 300_000 }, () => '{}').join(',')}]`;
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  return [
    JSON.stringify({ type: '@xstate.actor', sessionId, name: sessionId }),
    JSON.stringify({ type: '@xstate.snapshot', sessionId, snapshot: { context: { big } } }),
    `{"type":"@xstate.snapshot","sessionId":"${sessionId}","snapshot":{"context":${objects}}}`,
    `{"type":"@xstate.snapshot","sessionId":"${sessionId}","snapshot":{"context":${deep}}}`,
  ];
}

/** The worker puts a task up for approval; the approver reads it and approves. Every step must be 2xx. */
async function approvalRound(actorId: string): Promise<void> {
  const body = JSON.stringify({
    actorId,
    event: { type: 'PAUSE_FOR_APPROVAL', reason: 'soak', requestedAt: Date.now() },
  });
  const paused = await signedPost(url, SOAK_WORKER, '/api/events', body);
  count('legitimate', paused.status);
  await paused.body?.cancel();
  const page = await fetch(`${url}/api/actors/${actorId}`, { headers: { cookie: manager } });
  count('legitimate', page.status);
  await page.body?.cancel();
  const decided = await fetch(`${url}/dashboard/decision`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: manager, origin: url },
    body: JSON.stringify({ actorId, decision: 'approved' }),
  });
  count('legitimate', decided.status);
  await decided.body?.cancel();
}

describe('one read credential doing its worst', () => {
  test('raises the server peak RSS by at most 256 MiB, and a signed-in approver stays signed in', async () => {
    const meter = peakMeter();
    const held: Array<{ close(): void }> = [];
    const sockets: WebSocket[] = [];
    try {
      // Sessions: three times what the token may hold.
      const cookies: string[] = [];
      await inParallel(3_000, 16, async () => {
        const response = await fetch(`${url}/?token=${SOAK_TOKEN}`, { redirect: 'manual' });
        count('attacker', response.status);
        cookies.push((response.headers.get('set-cookie') ?? '').split(';')[0] ?? '');
      });
      // Streams resuming from 0 (7.5 MiB each), from many sessions, never read; and
      // resumes filtered on one actor (a copy each), past the credential's cap.
      await inParallel(300, 16, async (i) => {
        const path = i % 3 === 0 ? '/api/stream?actor=billing-1' : '/api/stream';
        const from = i % 5 === 0 ? String(lastId - 1_000) : '0';
        const stream = await stalledStream(path, {
          cookie: cookies[i] ?? '',
          'last-event-id': from,
        });
        count('attacker', stream.status);
        held.push(stream);
      });
      // Change streams of the inspector, past their cap.
      await inParallel(20, 4, async () => {
        const stream = await stalledStream('/api/inspections/stream', bearer);
        count('attacker', stream.status);
        held.push(stream);
      });
      // Inspection sockets past their cap, each sending the heaviest messages it may, four times.
      await inParallel(20, 4, async (i) => {
        const socket = await inspectionSocket().catch((error: Error) => {
          count('attacker', Number(error.message));
          return undefined;
        });
        if (!socket) return;
        sockets.push(socket);
        for (let round = 0; round < 4; round++) {
          for (const message of inspectionMessages(`attack:${i}:${round}`)) socket.send(message);
        }
      });
      // Tickets, past what the token may keep.
      await inParallel(2_000, 16, async () => {
        const response = await fetch(`${url}/api/stream-tickets`, {
          method: 'POST',
          headers: bearer,
        });
        count('attacker', response.status);
        await response.body?.cancel();
      });
      // The inspection sockets' messages are all read: the server answers a read after them.
      for (const socket of sockets) {
        await new Promise<void>((resolve) => socket.ping(undefined, undefined, () => resolve()));
      }
      const stats = (await (await fetch(`${url}/api/inspections`, { headers: bearer })).json()) as {
        stats: { refused: Record<string, number> };
      };
      expect(stats.stats.refused['too_deep']).toBeGreaterThan(0);
      expect(stats.stats.refused['too_large']).toBeGreaterThan(0);
    } finally {
      const peak = meter.stop();
      for (const h of held) h.close();
      for (const s of sockets) s.terminate();
      const rise = (peak - baseline) / MiB;
      console.log(
        `one read credential at its worst: RSS ${(baseline / MiB).toFixed(0)} MiB → peak ${(peak / MiB).toFixed(0)} MiB (+${rise.toFixed(0)} MiB, ${meter.exact ? 'VmHWM' : 'sampled'})`,
      );
      expect(rise).toBeLessThanOrEqual(256);
    }
    expect(statuses.attacker.get(429)).toBeGreaterThan(0);
    expect([...statuses.attacker.keys()].filter((s) => s >= 500)).toEqual([]);
    // The approver signed in before all this is still signed in, and decides.
    await approvalRound(SOAK_POOL[1]!);
    expect([...statuses.legitimate.keys()]).toEqual([200]);
  }, 300_000);
});

describe(`${SOAK_MS / 1000} s of a read credential and a scoped key attacking while an approver works`, () => {
  test(
    'no 5xx, every legitimate request served, peak RSS bounded, verify clean',
    async () => {
      const meter = peakMeter();
      const deadline = Date.now() + SOAK_MS;
      const running = () => Date.now() < deadline;
      let rounds = 0;
      const held: Array<{ close(): void }> = [];

      /** The read token: sessions, streams from 0 left unread, reads, tickets, inspections, bad input. */
      const reader = async (lane: number) => {
        let socket: WebSocket | undefined;
        for (let i = 0; running(); i++) {
          const step = i % 8;
          if (step === 0) {
            const r = await fetch(`${url}/?token=${SOAK_TOKEN}`, { redirect: 'manual' });
            count('attacker', r.status);
          } else if (step === 1) {
            const stream = await stalledStream(
              i % 16 === 1 ? '/api/stream?actor=billing-2' : '/api/stream',
              {
                ...bearer,
                'last-event-id': '0',
              },
            );
            count('attacker', stream.status);
            held.push(stream);
            // Keep some, close the oldest: the cap is met and released all along.
            if (held.length > 200) held.shift()?.close();
          } else if (step === 2) {
            for (const path of [
              '/api/actors?limit=500',
              '/api/counts',
              '/api/actors?state=nope&limit=0',
              '/api/actors/refund-0/steps/999999999999',
            ]) {
              const r = await fetch(`${url}${path}`, { headers: bearer });
              count('attacker', r.status);
              await r.body?.cancel();
            }
          } else if (step === 3) {
            const r = await fetch(`${url}/api/stream-tickets`, {
              method: 'POST',
              headers: { ...bearer, 'content-type': 'application/json' },
              body: i % 24 === 3 ? 'x'.repeat(100_000) : '{"machine":"task-lifecycle"}',
            });
            count('attacker', r.status);
            await r.body?.cancel();
          } else if (step === 4) {
            socket ??= await inspectionSocket().catch(() => undefined);
            for (const message of inspectionMessages(`soak:${lane}:${i % 50}`))
              socket?.send(message);
          } else if (step === 5) {
            // A signed write with a body nested 20,000 deep, and one too large.
            const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
            for (const body of [
              `{"actorId":"refund-${i}","event":${deep}}`,
              `${'y'.repeat(200_000)}${i}`,
            ]) {
              const r = await signedPost(url, SOAK_INTRUDER, '/api/events', body);
              count('attacker', r.status);
              await r.body?.cancel();
            }
          } else if (step === 6) {
            const r = await fetch(`${url}/api/inspections`, { headers: bearer });
            count('attacker', r.status);
            await r.body?.cancel();
          } else {
            const r = await fetch(`${url}/dashboard/decision`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', cookie: '', origin: url },
              body: JSON.stringify({ actorId: 'refund-0', decision: 'approved' }),
            });
            count('attacker', r.status);
            await r.body?.cancel();
          }
        }
        socket?.terminate();
      };

      /**
       * The key scoped to refund-0: reads and moves everywhere else, illegal moves on
       * its own. (Each signed request differs from the last: a replay is refused.)
       */
      const intruder = async () => {
        const post = async (path: string, value: unknown) => {
          const r = await signedPost(url, SOAK_INTRUDER, path, JSON.stringify(value));
          count('attacker', r.status);
          await r.body?.cancel();
        };
        for (let i = 0; running(); i++) {
          const other = i % 2 === 0 ? `billing-${(i % 3) + 1}` : SOAK_POOL[i % SOAK_POOL.length]!;
          for (const path of [
            `/api/actors/${other}/history?limit=${(i % 500) + 1}`,
            `/api/actors/${other}/steps/${i + 1}`,
            `/api/actors?limit=${(i % 500) + 1}&state=running`,
            `/api/counts?machine=task-lifecycle&n=${i}`,
            `/api/actors/refund-0/history?limit=${(i % 500) + 1}`,
          ]) {
            const r = await fetch(`${url}${path}`, { headers: signed(SOAK_INTRUDER, 'GET', path) });
            count('attacker', r.status);
            await r.body?.cancel();
          }
          await post('/api/events', {
            actorId: other,
            event: { type: 'PAUSE_FOR_APPROVAL', reason: `x${i}`, requestedAt: 0 },
          });
          await post('/api/events', { actorId: 'refund-0', event: { type: 'START', n: i } });
          await post('/api/events', {
            actorId: 'refund-0',
            event: { type: 'PAUSE_FOR_APPROVAL', reason: `again ${i}`, requestedAt: i },
          });
          await post('/api/events', {
            actorId: 'refund-0',
            event: { type: 'APPROVAL_GRANTED', comment: `c${i}` },
          });
          await post('/api/events', { actorId: 'refund-0', event: { type: 'TIMEOUT', n: i } });
          await post('/api/stream-tickets', { actor: other, machine: `m${i}` });
          const path = `/api/stream?machine=m${i}`;
          const stream = await stalledStream(path, {
            ...signed(SOAK_INTRUDER, 'GET', path),
            'last-event-id': '0',
          });
          count('attacker', stream.status);
          stream.close();
        }
      };

      /** The worker and the approver, through the pool again and again. */
      const work = async () => {
        for (let i = 2; running(); i++) {
          await approvalRound(SOAK_POOL[i % SOAK_POOL.length]!);
          rounds++;
        }
      };

      try {
        await Promise.all([reader(0), reader(1), intruder(), work()]);
      } finally {
        const peak = meter.stop();
        for (const h of held) h.close();
        const rise = (peak - baseline) / MiB;
        console.log(
          `soak ${SOAK_MS / 1000} s: ${rounds} approval rounds; RSS ${(baseline / MiB).toFixed(0)} MiB → peak ${(peak / MiB).toFixed(0)} MiB (+${rise.toFixed(0)} MiB); attacker statuses ${JSON.stringify(Object.fromEntries(statuses.attacker))}`,
        );
        expect(rise).toBeLessThanOrEqual(256);
      }
      expect([...statuses.attacker.keys()].filter((s) => s >= 500)).toEqual([]);
      expect([...statuses.legitimate.keys()]).toEqual([200]);
      expect(rounds).toBeGreaterThan(0);
      // Stop the server, then replay every actor's log.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      const store = openStore(`sqlite:${db}`);
      try {
        expect((await verify(store, { charts })).problems).toEqual([]);
      } finally {
        await getRuntime(store).close();
        await store.close();
      }
    },
    SOAK_MS + 240_000,
  );
});
