/**
 * Request and response helpers the routes share: error bodies, body reading,
 * headers, request schemas, and how actors and trail rows are shown.
 */
import { type Context } from 'hono';
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as z from 'zod';
import type { ActorRow, TransitionRow } from '../store/types.ts';
import { fromHeaders, type HeaderGetter } from './auth.ts';
import { badge, cardLabels } from './badges.ts';

export const SESSION_COOKIE = 'agentcharts_session';
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
export const TRAIL_LIMIT = 200;
export const ACTOR_ID = z.string().min(1).max(200);

/** The JSON error body of every refusal: a code plus structured fields, never a payload value. */
export type ErrorBody = { error: string } & Record<string, unknown>;

export function zodField(error: z.ZodError, prefix = ''): { field: string; reason: string } {
  const issue = error.issues[0];
  const path = issue?.path.map(String).join('.') ?? '';
  const field =
    issue?.code === 'unrecognized_keys' && issue.keys[0] !== undefined
      ? [path, issue.keys[0]].filter(Boolean).join('.')
      : path;
  return {
    field: `${prefix}${field || '(body)'}`,
    reason:
      issue?.code === 'unrecognized_keys'
        ? 'unexpected_field'
        : issue?.code === 'invalid_type' && issue.input === undefined
          ? 'missing_field'
          : (issue?.code ?? 'invalid'),
  };
}

export const plainObject = z.custom<Record<string, unknown>>(
  (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
  { message: 'expected an object' },
);

export const eventBodySchema = z.strictObject({
  actorId: ACTOR_ID,
  event: plainObject,
});

/** “Agent State Machine Design” §4, "Integration Pattern with External Approval Systems". */
export const approvalBodySchema = z.strictObject({
  task_id: ACTOR_ID,
  decision: z.enum(['approved', 'denied']),
  approver: z.string().trim().min(1).max(1_000),
  comment: z.string().max(10_000).optional(),
  timestamp: z.union([z.string().min(1).max(100), z.number().finite()]),
});

export const listQuerySchema = z.strictObject({
  machine: z.string().min(1).max(200).optional(),
  state: z.string().min(1).max(500).optional(),
  userId: z.string().min(1).max(255).optional(),
  status: z.enum(['active', 'done', 'error', 'stopped']).optional(),
  cursor: ACTOR_ID.optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

export const historyQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

export const signInSchema = z.strictObject({
  keyId: z.string().min(1).max(200),
  secret: z.string().min(1).max(1000),
});

export const decisionSchema = z.strictObject({
  actorId: ACTOR_ID,
  decision: z.enum(['approved', 'denied']),
  comment: z.string().max(10_000).optional(),
});

/** Actor row as the API shows it (no snapshot JSON, no hashes). */
export function summary(row: ActorRow) {
  const style = badge(row.machineId, row.state, row.status);
  return {
    id: row.id,
    machineId: row.machineId,
    state: row.state,
    stateName: style.name,
    class: style.class,
    ...cardLabels(row.machineId, row.snapshot),
    status: row.status,
    version: row.version,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    category: style.category,
    color: style.color,
  };
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The runtime's own sources: a timer, recovery, an invoke's result, a message, a spawn. */
const SERVER_SOURCES = new Set(['timer', 'recover', 'invoke', 'message', 'spawn']);

/** Who caused a transition, from its row's metadata: a key id, `server`, or null (a local caller). */
export function principalOf(metadata: Record<string, unknown>): string | null {
  if (typeof metadata['keyId'] === 'string') return metadata['keyId'];
  const source = metadata['source'];
  return typeof source === 'string' && SERVER_SOURCES.has(source) ? 'server' : null;
}

export function trailEntry(machineId: string, row: TransitionRow) {
  const metadata = (parseJson(row.metadata) ?? {}) as Record<string, unknown>;
  const to = badge(machineId, row.toState);
  return {
    seq: row.seq,
    from: row.fromState,
    to: row.toState,
    eventType: row.eventType,
    event: parseJson(row.event) ?? null,
    at: row.at,
    source: typeof metadata['source'] === 'string' ? metadata['source'] : null,
    keyId: typeof metadata['keyId'] === 'string' ? metadata['keyId'] : null,
    /** How a key's event came in: `http` (the API, the dashboard's decisions) or `mcp`. */
    via: typeof metadata['via'] === 'string' ? metadata['via'] : null,
    /** Who caused it: the key, or `server` for the chart's own timers and the runtime's moves. */
    by: principalOf(metadata),
    toName: to.name,
    color: to.color,
    fromColor: row.fromState !== null ? badge(machineId, row.fromState).color : null,
  };
}

export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const here = new URL('./dashboard/', import.meta.url);
export function loadAsset(name: string): string {
  return readFileSync(new URL(name, here), 'utf8');
}

/** mermaid's browser bundle from node_modules, if installed. */
export function mermaidBundlePath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('mermaid/dist/mermaid.min.js');
  } catch {
    return undefined;
  }
}

/** The browser ESM build of `@mermaid-js/layout-elk` (its `dist` folder), if installed. */
export function elkLayoutDir(): string | undefined {
  try {
    const manifest = createRequire(import.meta.url).resolve('@mermaid-js/layout-elk/package.json');
    return join(dirname(manifest), 'dist');
  } catch {
    return undefined;
  }
}

/** The files of that build the dashboard may load: the entry and its chunks, nothing else. */
export const ELK_FILE =
  /^(mermaid-layout-elk\.esm\.min\.mjs|chunks\/mermaid-layout-elk\.esm\.min\/[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.mjs)$/;

/** The Node request behind a Hono context, when served by @hono/node-server. */
export function incomingOf(c: Context): IncomingMessage | undefined {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming && typeof env.incoming.on === 'function' ? env.incoming : undefined;
}

/**
 * Header reader: straight from Node's parsed headers when available (cheaper
 * than building Fetch `Headers` for every request), else from the Request.
 */
export function headerGetter(c: Context): HeaderGetter {
  const incoming = incomingOf(c);
  if (!incoming) return fromHeaders(c.req.raw.headers);
  const headers = incoming.headers;
  return (name) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}

/**
 * The raw request body, at most `maxBytes` (`undefined` when larger). Read from
 * the Node stream when served by Node, so no web stream is built per request.
 */
export async function readBody(c: Context, maxBytes: number): Promise<Uint8Array | undefined> {
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) return undefined;
  const incoming = incomingOf(c);
  if (incoming && !incoming.readableEnded) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of incoming as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) return undefined;
      chunks.push(chunk);
    }
    return chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
  }
  const body = new Uint8Array(await c.req.arrayBuffer());
  return body.byteLength > maxBytes ? undefined : body;
}

export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Mermaid writes style attributes and <style> into the SVG it renders.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');
