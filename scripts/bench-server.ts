/**
 * Load benchmark of `agentcharts serve` (not a test): SSE clients stay connected
 * while signed events are posted at a fixed rate, all on loopback. Reports
 * request latency (p50/p99/max), throughput, and checks that no acknowledged
 * event is missing from the store or from any client's stream.
 *
 *   npx tsx scripts/bench-server.ts [--clients 200] [--rate 1000] [--duration 30] [--actors 200]
 *
 * Three processes, so load generation, serving and stream reading do not share
 * an event loop: this one (the load generator), a server child and an SSE
 * clients child. Each posted event is an agent-status `OUTPUT` with a unique
 * `content`, so it can be found again in the audit trail and in the stream's
 * `output` messages.
 *
 * With `--resume`, every SSE client instead reads for 1–4 s, hangs up and comes
 * back with `Last-Event-ID` (every tenth time from 0), for the whole run; the
 * server's RSS is sampled every 5 s and reported (start, peak, end):
 *
 *   npx tsx scripts/bench-server.ts --resume --clients 1000 --duration 600
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { catalog, charts } from '../machines/index.ts';
import { createDurableActor, getRuntime } from '../src/index.ts';
import { signRequest, type ApiKey } from '../src/server/auth.ts';
import { createServer, listen } from '../src/server/app.ts';
import { openStore } from '../src/store/open.ts';

const KEY: ApiKey = { id: 'bench-agent', secret: 'bench-secret-0123456789abcdef', role: 'agent' };
const TOKEN = 'bench-token-0123456789abcdef';
const SELF = fileURLToPath(import.meta.url);

const { values: args } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    clients: { type: 'string', default: '200' },
    rate: { type: 'string', default: '1000' },
    duration: { type: 'string', default: '30' },
    /** Seconds posted at the same rate before measuring (JIT, caches); still checked for loss. */
    warmup: { type: 'string', default: '3' },
    actors: { type: 'string', default: '200' },
    /** Keep-alive connections the load generator posts over. */
    sockets: { type: 'string', default: '256' },
    db: { type: 'string' },
    url: { type: 'string' },
    /** Clients hang up and resume with Last-Event-ID all the time; RSS is sampled. */
    resume: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});

function bounded(name: string, text: string | undefined, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`--${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

type Message =
  | { type: 'ready'; url?: string }
  | { type: 'report'; report: ClientsReport }
  | { type: 'cpu'; cpuMs: number; rssMiB: number[]; heapMiB: number }
  | { type: 'stop' };

function forkRole(role: string, extra: string[]): ChildProcess {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return fork(SELF, ['--role', role, ...extra], {
    execArgv: ['--import', tsx, '--max-old-space-size=2048'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function nextMessage<T extends Message['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<Message, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${type}" from child`)), timeoutMs);
    const onMessage = (m: Message) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(m as Extract<Message, { type: T }>);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before "${type}"`)));
  });
}

// ---- server child --------------------------------------------------------------------

async function runServer(): Promise<void> {
  const store = openStore(`sqlite:${args.db}`);
  const server = createServer({
    store,
    charts,
    keys: [KEY],
    accessToken: TOKEN,
    pollMs: 0,
    requestLogs: false,
    // Every bench client reads with the one token from one address: one principal.
    sse: { maxStreamsPerPrincipal: 10_000 },
  });
  const http = await listen(server, { hostname: '127.0.0.1', port: 0 });
  const cpu0 = process.cpuUsage();
  const mib = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1));
  const rssMiB: number[] = [mib(process.memoryUsage().rss)];
  const sampler = setInterval(() => rssMiB.push(mib(process.memoryUsage().rss)), 5000);
  process.send?.({ type: 'ready', url: http.url } satisfies Message);
  await new Promise<void>((resolve) => {
    process.on('message', (m: Message) => {
      if (m.type !== 'stop') return;
      clearInterval(sampler);
      rssMiB.push(mib(process.memoryUsage().rss));
      const cpu = process.cpuUsage(cpu0);
      process.send?.({
        type: 'cpu',
        cpuMs: (cpu.user + cpu.system) / 1000,
        rssMiB,
        heapMiB: mib(process.memoryUsage().heapUsed),
      } satisfies Message);
    });
    process.once('disconnect', resolve);
  });
  await http.close();
  await getRuntime(store).close();
  await store.close();
}

// ---- SSE clients child ---------------------------------------------------------------

interface ClientsReport {
  clients: number;
  /** Clients whose stream ended early (dropped as too slow, or failed). */
  ended: number;
  /** Per client: frames received and gaps in the id sequence. */
  minFrames: number;
  maxFrames: number;
  clientsWithGaps: number;
  /** `content` of every output message, from the first client (parsed in full). */
  contents: string[];
  /** With --resume: streams opened in all, and how many resumed from 0. */
  connects?: number;
  fromZero?: number;
}

/** Frame ids in `buf[0..end)`: each `id: <n>` at the start of a line. */
function* frameIds(buf: Buffer, end: number): Generator<number> {
  let i = buf.indexOf('id: ');
  while (i !== -1 && i < end) {
    if (i === 0 || buf[i - 1] === 0x0a) {
      let id = 0;
      let j = i + 4;
      for (; j < end && (buf[j] as number) >= 0x30 && (buf[j] as number) <= 0x39; j++) {
        id = id * 10 + ((buf[j] as number) - 0x30);
      }
      yield id;
      i = buf.indexOf('id: ', j);
    } else {
      i = buf.indexOf('id: ', i + 4);
    }
  }
}

/**
 * Clients that keep hanging up and resuming: each reads for 1–4 s, closes, and
 * reconnects with `Last-Event-ID` (every tenth reconnect from 0), until told to stop.
 */
async function runResumingClients(): Promise<void> {
  const count = bounded('clients', args.clients, 1, 10_000);
  const url = new URL('/api/stream?machine=agent-status', args.url);
  const agent = new Agent({ keepAlive: false, maxSockets: count });
  let stopping = false;
  let connects = 0;
  let fromZero = 0;
  let frames = 0;
  let failures = 0;
  const connectOnce = (lastId: number, first: () => void): Promise<number> =>
    new Promise((resolve) => {
      let last = lastId;
      const resumeFrom = connects % 10 === 9 ? 0 : lastId;
      if (resumeFrom === 0 && lastId !== 0) fromZero++;
      connects++;
      const req = request(url, {
        agent,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          accept: 'text/event-stream',
          ...(resumeFrom > 0 || lastId !== 0 ? { 'last-event-id': String(resumeFrom) } : {}),
        },
      });
      const done = () => resolve(last);
      req.once('error', () => {
        failures++;
        first();
        done();
      });
      req.once('response', (res) => {
        first();
        res.on('data', (chunk: Buffer) => {
          for (const id of frameIds(chunk, chunk.length)) {
            last = Math.max(last, id);
            frames++;
          }
        });
        res.once('close', done);
        setTimeout(() => req.destroy(), 1000 + Math.random() * 3000);
      });
      req.end();
    });
  let connected = 0;
  let ready = (): void => undefined;
  const allConnected = new Promise<void>((resolve) => {
    ready = () => {
      if (++connected === count) resolve();
    };
  });
  const loops = Array.from({ length: count }, async (_, i) => {
    let lastId = 0;
    let announced = false;
    await new Promise((r) => setTimeout(r, (i % 100) * 10));
    while (!stopping) {
      lastId = await connectOnce(lastId, () => {
        if (!announced) {
          announced = true;
          ready();
        }
      });
    }
  });
  await allConnected;
  process.send?.({ type: 'ready' } satisfies Message);
  await new Promise<void>((resolve) => {
    process.on('message', (m: Message) => {
      if (m.type === 'stop') resolve();
    });
  });
  stopping = true;
  agent.destroy();
  await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 6000))]);
  const report: ClientsReport = {
    clients: count,
    ended: failures,
    minFrames: frames,
    maxFrames: frames,
    clientsWithGaps: 0,
    contents: [],
    connects,
    fromZero,
  };
  process.send?.({ type: 'report', report } satisfies Message, () => process.disconnect());
}

async function runClients(): Promise<void> {
  const count = bounded('clients', args.clients, 1, 10_000);
  const url = new URL('/api/stream?machine=agent-status', args.url);
  const contents: string[] = [];
  const contentPattern = /"type":"output".*?"content":"((?:[^"\\]|\\.)*)"/;
  const separator = Buffer.from('\n\n');
  // node:http rather than fetch: 200 web streams would cost this process more than the server.
  const agent = new Agent({ keepAlive: false, maxSockets: count });
  const clients = await Promise.all(
    Array.from(
      { length: count },
      (_, index) =>
        new Promise<{
          index: number;
          frames: number;
          lastId: number;
          gaps: number;
          ended: boolean;
          close: () => void;
        }>((resolve, reject) => {
          const req = request(url, {
            agent,
            headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
          });
          req.once('error', reject);
          req.once('response', (res) => {
            const client = {
              index,
              frames: 0,
              lastId: 0,
              gaps: 0,
              ended: false,
              close: () => req.destroy(),
            };
            let carry: Buffer | undefined;
            res.on('data', (chunk: Buffer) => {
              const buf = carry ? Buffer.concat([carry, chunk]) : chunk;
              const cut = buf.lastIndexOf(separator);
              if (cut === -1) {
                carry = buf;
                return;
              }
              for (const id of frameIds(buf, cut)) {
                if (client.lastId !== 0 && id !== client.lastId + 1) client.gaps++;
                client.lastId = id;
                client.frames++;
              }
              if (index === 0) {
                for (const frame of buf.toString('utf8', 0, cut).split('\n\n')) {
                  const m = contentPattern.exec(frame);
                  if (m?.[1] !== undefined) contents.push(JSON.parse(`"${m[1]}"`) as string);
                }
              }
              carry = cut + 2 < buf.length ? Buffer.from(buf.subarray(cut + 2)) : undefined;
            });
            res.once('close', () => {
              client.ended = true;
            });
            resolve(client);
          });
          req.end();
        }),
    ),
  );
  process.send?.({ type: 'ready' } satisfies Message);
  await new Promise<void>((resolve) => {
    process.on('message', (m: Message) => {
      if (m.type === 'stop') resolve();
    });
  });
  const endedEarly = clients.filter((c) => c.ended).length;
  for (const c of clients) c.close();
  agent.destroy();
  const frames = clients.map((c) => c.frames);
  const report: ClientsReport = {
    clients: count,
    ended: endedEarly,
    minFrames: Math.min(...frames),
    maxFrames: Math.max(...frames),
    clientsWithGaps: clients.filter((c) => c.gaps > 0).length,
    contents,
  };
  process.send?.({ type: 'report', report } satisfies Message, () => process.disconnect());
}

// ---- load generator (main) -----------------------------------------------------------

/** POSTs over a pool of keep-alive connections; resolves with the status code. */
function post(
  agent: Agent,
  url: URL,
  body: string,
  headers: Record<string, string>,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function runMain(): Promise<void> {
  const clientCount = bounded('clients', args.clients, 1, 10_000);
  const rate = bounded('rate', args.rate, 1, 20_000);
  const duration = bounded('duration', args.duration, 1, 600);
  const warmup = bounded('warmup', args.warmup, 0, 60);
  const actorCount = bounded('actors', args.actors, 1, 100_000);
  const sockets = bounded('sockets', args.sockets, 1, 4096);
  const dir = mkdtempSync(join(tmpdir(), 'agentcharts-bench-server-'));
  const db = join(dir, 'bench.db');
  const log = (line: string) => process.stderr.write(`${line}\n`);

  // Actors, created before the server starts.
  const status = catalog['agent-status'];
  const setup = openStore(`sqlite:${db}`);
  const ids = Array.from({ length: actorCount }, (_, i) => `agent-${String(i).padStart(5, '0')}`);
  await Promise.all(
    ids.map((id) =>
      createDurableActor(status.machine, {
        id,
        store: setup,
        input: { agentId: id, name: id, task: 'bench', modelBackend: 'none', createdAt: 0 },
        schemas: status.events,
      }),
    ),
  );
  await getRuntime(setup).close();
  await setup.close();

  const server = forkRole('server', ['--db', db]);
  const children: ChildProcess[] = [server];
  try {
    const { url } = await nextMessage(server, 'ready', 60_000);
    if (!url?.startsWith('http://127.0.0.1:')) throw new Error('server is not on loopback');
    const clients = forkRole('clients', [
      '--url',
      url,
      '--clients',
      String(clientCount),
      ...(args.resume ? ['--resume'] : []),
    ]);
    children.push(clients);
    await nextMessage(clients, 'ready', 60_000);
    log(
      `${clientCount} SSE clients connected; posting ${rate} events/s for ${warmup} s of warm-up, then ${duration} s measured`,
    );

    const warm = rate * warmup;
    const total = warm + rate * duration;
    const agent = new Agent({ keepAlive: true, maxSockets: sockets });
    const target = new URL('/api/events', url);
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    const acked: Array<{ actorId: string; content: string }> = [];
    let failed = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const pending: Array<Promise<void>> = [];
    const started = performance.now();
    const tickMs = 10;
    const perTick = rate / (1000 / tickMs);
    let sent = 0;
    for (let tick = 0; sent < total; tick++) {
      // Catch up to the schedule: the number due by the end of this tick.
      const due = Math.min(total, Math.round((tick + 1) * perTick));
      while (sent < due) {
        const n = sent++;
        const actorId = ids[n % ids.length] as string;
        const content = `bench-${n}`;
        const body = JSON.stringify({
          actorId,
          event: { type: 'OUTPUT', stream: 'stdout', content, at: n },
        });
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        const t0 = performance.now();
        pending.push(
          post(agent, target, body, signRequest(KEY, { method: 'POST', path: '/api/events', body }))
            .then((code) => {
              if (n >= warm) latencies.push(performance.now() - t0);
              statuses.set(code, (statuses.get(code) ?? 0) + 1);
              if (code === 200) acked.push({ actorId, content });
            })
            .catch(() => {
              failed++;
            })
            .finally(() => {
              inFlight--;
            }),
        );
      }
      const wait = started + (tick + 1) * tickMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const sendSeconds = (performance.now() - started) / 1000;
    await Promise.all(pending);
    agent.destroy();
    const elapsed = (performance.now() - started) / 1000;
    // Let the last stream frames arrive.
    await new Promise((r) => setTimeout(r, 2000));
    clients.send({ type: 'stop' } satisfies Message);
    const { report } = await nextMessage(clients, 'report', 120_000);
    server.send({ type: 'stop' } satisfies Message);
    const { cpuMs, rssMiB, heapMiB } = await nextMessage(server, 'cpu', 30_000);

    // The store: every acknowledged event is in its actor's audit trail.
    const check = openStore(`sqlite:${db}`);
    const stored = new Set<string>();
    for (const id of ids) {
      for (const row of await check.history(id)) {
        if (row.eventType !== 'OUTPUT') continue;
        stored.add((JSON.parse(row.event) as { content: string }).content);
      }
    }
    await check.close();
    const streamed = new Set(report.contents);
    const missingFromStore = acked.filter((a) => !stored.has(a.content)).length;
    // Resuming clients hang up on purpose: only the first, steady client's stream is checked.
    const missingFromStream = args.resume
      ? 0
      : acked.filter((a) => !streamed.has(a.content)).length;

    latencies.sort((a, b) => a - b);
    const result = {
      clients: clientCount,
      rate,
      durationSeconds: duration,
      warmupSeconds: warmup,
      posted: total,
      acknowledged: acked.length,
      statuses: Object.fromEntries(statuses),
      networkFailures: failed,
      postingSeconds: Number(sendSeconds.toFixed(2)),
      achievedRate: Math.round(acked.length / elapsed),
      maxInFlight,
      latencyMs: {
        p50: Number(percentile(latencies, 50).toFixed(2)),
        p99: Number(percentile(latencies, 99).toFixed(2)),
        max: Number((latencies.at(-1) ?? Number.NaN).toFixed(2)),
      },
      serverCpuMsPerEvent: Number((cpuMs / Math.max(1, acked.length)).toFixed(3)),
      missingFromStore,
      missingFromStream,
      serverRssMiB: {
        start: rssMiB[0],
        peak: Math.max(...rssMiB),
        end: rssMiB.at(-1),
        heapEnd: heapMiB,
      },
      ...(args.resume
        ? {
            resume: {
              streamsOpened: report.connects,
              resumedFromZero: report.fromZero,
              framesReceived: report.minFrames,
              failedConnects: report.ended,
            },
          }
        : {}),
      stream: {
        clientsEndedEarly: report.ended,
        clientsWithGaps: report.clientsWithGaps,
        minFramesPerClient: report.minFrames,
        maxFramesPerClient: report.maxFrames,
        outputMessagesOnFirstClient: report.contents.length,
      },
    };
    if (args.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      process.stdout.write(
        [
          `agentcharts serve load: ${clientCount} SSE clients, ${rate} signed events/s for ${duration} s (loopback)`,
          `  acknowledged ${result.acknowledged}/${total} (statuses ${JSON.stringify(result.statuses)}, network failures ${failed}), ${result.achievedRate} events/s`,
          `  latency p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, max ${result.latencyMs.max} ms (max in flight ${maxInFlight})`,
          `  server CPU ${result.serverCpuMsPerEvent} ms per event (incl. SSE fan-out to ${clientCount} clients)`,
          `  server RSS ${result.serverRssMiB.start} MiB at start, peak ${result.serverRssMiB.peak}, end ${result.serverRssMiB.end} (heap ${heapMiB} MiB)`,
          ...(args.resume
            ? [
                `  resuming clients: ${report.connects} streams opened (${report.fromZero} resumed from 0), ${report.minFrames} frames, ${report.ended} failed connects`,
              ]
            : []),
          `  missing from store: ${missingFromStore}; missing from stream: ${args.resume ? 'not checked (clients hang up on purpose)' : missingFromStream}`,
          ...(args.resume
            ? []
            : [
                `  stream: ${report.ended} client(s) ended early, ${report.clientsWithGaps} with id gaps, frames per client ${report.minFrames}..${report.maxFrames}`,
              ]),
        ].join('\n') + '\n',
      );
    }
    if (missingFromStore > 0 || missingFromStream > 0 || report.clientsWithGaps > 0) {
      process.exitCode = 1;
    }
  } finally {
    for (const child of children) {
      if (child.connected) child.disconnect();
    }
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else {
              const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
              child.once('exit', () => {
                clearTimeout(timer);
                resolve();
              });
            }
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

if (args.role === 'server') await runServer();
else if (args.role === 'clients' && args.resume) await runResumingClients();
else if (args.role === 'clients') await runClients();
else await runMain();
