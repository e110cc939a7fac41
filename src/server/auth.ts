/**
 * Request signing for the HTTP API: HMAC-SHA256 over `<timestamp>.<body>` with a
 * shared secret per key, a freshness window, a bounded replay cache, and
 * authorization by the key's role (“Agent State Machine Design”: "the LLM cannot change the
 * task state" — an agent's key never sends an approval decision).
 */
import { ROLES, type EventInfo, type EventKind } from '../core/meta.ts';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { AgentchartsError } from '../core/errors.ts';
import { coversActor } from '../core/scope.ts';
import { requireArg } from '../core/options.ts';

/** Header naming the key that signed the request. */
export const KEY_HEADER = 'x-agentcharts-key';
/** Header carrying the signing time, whole seconds since the Unix epoch. */
export const TIMESTAMP_HEADER = 'x-agentcharts-timestamp';
/** Header carrying `sha256=<hex of HMAC-SHA256(secret, timestamp + '.' + body)>`. */
export const SIGNATURE_HEADER = 'x-agentcharts-signature';

/**
 * How far a request's timestamp may be from the server's clock (“Agent State Machine
 * Design”: 5 minutes).
 */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * What a key stands for. Which roles may send which event is the chart's metadata
 * (`meta.events[type].kind` and `.roles`): approvals go to `approver` (and, where a
 * chart says so, `leader`), commands to `agent` unless the chart names others,
 * and timer-only or internal events to nobody.
 */
export type KeyRole = (typeof ROLES)[number] | (string & {});

/** A role a chart names beyond the built-in ones (`meta.events[type].roles`), as a key holds it. */
const CUSTOM_ROLE = /^[a-z][a-z0-9_.-]{0,63}$/;

/** One shared-secret key. */
export interface ApiKey {
  /** Public key id, sent in `x-agentcharts-key`. */
  id: string;
  /** Shared secret (at least 16 characters). Never logged or echoed. */
  secret: string;
  /** `approver`: approval decisions only. `agent`: its own work events, never approvals. */
  role: KeyRole;
  /**
   * Actor ids this key may address: exact ids, or prefixes ending in `*`
   * (`refund-*`). Omitted: every actor.
   */
  actors?: readonly string[] | undefined;
}

const keySchema = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9._:@-]+$/, 'letters, digits and . _ : @ - only'),
  secret: z.string().min(16).max(1024).optional(),
  /** Name of an environment variable holding the secret, instead of `secret`. */
  secretEnv: z.string().min(1).max(200).optional(),
  role: z.union([
    z.enum(ROLES),
    z
      .string()
      .regex(
        CUSTOM_ROLE,
        `one of ${ROLES.join(', ')}, or a role a chart names (lower case letters, digits and . _ -, up to 64)`,
      ),
  ]),
  actors: z.array(z.string().min(1).max(200)).max(10_000).optional(),
});
const keysFileSchema = z.union([
  z.strictObject({ keys: z.array(keySchema).min(1) }),
  z.array(keySchema).min(1),
]);

/**
 * What is wrong with a key's field: zod's code, and for a role what a role may
 * be (never the value given: it could be a misplaced secret).
 */
function issueDetail(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return 'invalid';
  if (issue.path.at(-1) === 'role') {
    return `expected one of ${ROLES.join(', ')}, or a role a chart names (lower case letters, digits and . _ -, up to 64)`;
  }
  return issue.code;
}

/** A keys file or key list is malformed; names the key and field, never a secret. */
export class KeyConfigError extends AgentchartsError {
  override name = 'KeyConfigError';
  readonly field: string;
  constructor(field: string, detail: string) {
    super('KEY_CONFIG', `Invalid key configuration at "${field}": ${detail}`);
    this.field = field;
  }
}

/**
 * Validates keys given in code: unique ids, secrets of at least 16 characters,
 * known roles.
 */
export function validateKeys(keys: readonly ApiKey[]): ApiKey[] {
  requireArg('validateKeys', 'keys', Array.isArray(keys), 'an array of keys');
  const seen = new Set<string>();
  return keys.map((key, i) => {
    const parsed = keySchema.safeParse(key);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new KeyConfigError(
        `keys[${i}].${issue?.path.map(String).join('.') ?? ''}`,
        issueDetail(issue),
      );
    }
    if (parsed.data.secret === undefined) throw new KeyConfigError(`keys[${i}].secret`, 'missing');
    if (seen.has(key.id)) throw new KeyConfigError(`keys[${i}].id`, `duplicate id "${key.id}"`);
    seen.add(key.id);
    const out: ApiKey = { id: key.id, secret: parsed.data.secret, role: key.role };
    if (key.actors !== undefined) out.actors = [...key.actors];
    return out;
  });
}

/**
 * Reads a keys file: `{ "keys": [{ "id", "secret" | "secretEnv", "role", "actors"? }] }`
 * (or the bare array). `secretEnv` names an environment variable that holds the secret.
 *
 * @example
 * const keys = loadKeysFile('keys.json', process.env);
 */
export function loadKeysFile(file: string, env: NodeJS.ProcessEnv = process.env): ApiKey[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    const detail = error instanceof SyntaxError ? 'not valid JSON' : 'cannot be read';
    throw new KeyConfigError(file, detail);
  }
  // The shape the file has decides the schema, so an issue names its key and field.
  const parsed = (
    Array.isArray(raw) ? keysFileSchema.options[1] : keysFileSchema.options[0]
  ).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KeyConfigError(issue?.path.map(String).join('.') ?? '', issueDetail(issue));
  }
  const list = Array.isArray(parsed.data) ? parsed.data : parsed.data.keys;
  const keys = list.map((k, i): ApiKey => {
    if ((k.secret === undefined) === (k.secretEnv === undefined)) {
      throw new KeyConfigError(`keys.${i}`, 'give exactly one of secret or secretEnv');
    }
    const secret = k.secret ?? env[k.secretEnv ?? ''];
    if (secret === undefined || secret.length < 16) {
      throw new KeyConfigError(
        `keys.${i}.secretEnv`,
        `environment variable ${k.secretEnv ?? ''} is unset or shorter than 16 characters`,
      );
    }
    const key: ApiKey = { id: k.id, secret, role: k.role };
    if (k.actors !== undefined) key.actors = k.actors;
    return key;
  });
  return validateKeys(keys);
}

/** What a signature covers besides the timestamp: the request line and the raw body. */
export interface SignedRequest {
  /** HTTP method, upper case (`POST`, `GET`). */
  method: string;
  /** Path and query as sent (`/api/events`, `/api/actors?limit=1`). */
  path: string;
  /** The raw body (empty for a GET). */
  body?: string | Uint8Array | undefined;
}

function isSignedRequest(v: unknown): boolean {
  const r = v as { method?: unknown; path?: unknown } | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.method === 'string' &&
    typeof r.path === 'string'
  );
}

/**
 * The hex HMAC-SHA256 of `<timestamp>.<METHOD>.<path>.<body>`: a signature cannot
 * be moved to another route, another query or another body.
 */
export function computeSignature(
  secret: string,
  timestamp: string,
  request: SignedRequest,
): string {
  requireArg(
    'computeSignature',
    'secret',
    typeof secret === 'string' && typeof timestamp === 'string',
    'a secret and a timestamp (strings)',
  );
  requireArg(
    'computeSignature',
    'request',
    isSignedRequest(request),
    'a request ({ method, path, body? })',
  );
  const body = request.body ?? '';
  return createHmac('sha256', secret)
    .update(`${timestamp}.${request.method.toUpperCase()}.${request.path}.`)
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('hex');
}

/**
 * The three headers of a signed request.
 *
 * @example
 * const body = JSON.stringify({ actorId: 'refund-42', event: { type: 'COMPLETE' } });
 * await fetch(`${url}/api/events`, {
 *   method: 'POST',
 *   headers: {
 *     'content-type': 'application/json',
 *     ...signRequest(key, { method: 'POST', path: '/api/events', body }),
 *   },
 *   body,
 * });
 */
export function signRequest(
  key: Pick<ApiKey, 'id' | 'secret'>,
  request: SignedRequest,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Record<string, string> {
  requireArg(
    'signRequest',
    'key',
    typeof (key as { id?: unknown } | null)?.id === 'string' &&
      typeof (key as { secret?: unknown }).secret === 'string',
    'a key ({ id, secret })',
  );
  requireArg(
    'signRequest',
    'request',
    isSignedRequest(request),
    'a request ({ method, path, body? })',
  );
  const timestamp = String(nowSeconds);
  return {
    [KEY_HEADER]: key.id,
    [TIMESTAMP_HEADER]: timestamp,
    [SIGNATURE_HEADER]: `sha256=${computeSignature(key.secret, timestamp, request)}`,
  };
}

/** Why a signed request was refused (HTTP 401; `rate_limited` is 429). */
export type SignatureFailure =
  'missing_signature' | 'invalid_signature' | 'stale_request' | 'replayed_request' | 'rate_limited';

/** Reads one request header by lower-case name. */
export type HeaderGetter = (name: string) => string | undefined;

/** A {@link HeaderGetter} over Fetch API headers. */
export function fromHeaders(headers: Headers): HeaderGetter {
  return (name) => headers.get(name) ?? undefined;
}

export type VerifyResult = { ok: true; key: ApiKey } | { ok: false; error: SignatureFailure };

/** Remembers a request nonce until it expires; `replayed` when it is already there. */
export type NonceStore = (request: {
  key: string;
  nonce: string;
  expiresAt: number;
  now: number;
}) => Promise<'new' | 'replayed'>;

/**
 * How many signed requests each key may make per window. A key that floods gets
 * `rate_limited` (429); other keys are unaffected, and the nonces a key can make
 * the store keep are bounded by its quota.
 */
export class KeyQuota {
  private readonly used = new Map<string, { window: number; count: number }>();
  constructor(
    readonly perWindow: number,
    readonly windowSeconds: number,
  ) {}

  /** Counts one request of `keyId` at `nowSeconds`; false when over the quota. */
  take(keyId: string, nowSeconds: number): boolean {
    const window = Math.floor(nowSeconds / this.windowSeconds);
    const entry = this.used.get(keyId);
    if (!entry || entry.window !== window) {
      this.used.set(keyId, { window, count: 1 });
      return true;
    }
    entry.count++;
    return entry.count <= this.perWindow;
  }
}

const SIGNATURE_FORMAT = /^sha256=([0-9a-f]{64})$/;
const TIMESTAMP_FORMAT = /^[0-9]{1,12}$/;

/** Verifies signed requests against a key set; one instance per server (it owns the replay cache). */
export class RequestVerifier {
  private readonly keys: Map<string, ApiKey>;
  readonly toleranceSeconds: number;
  private readonly nonces: NonceStore;
  private readonly quota: KeyQuota;
  private readonly nowSeconds: () => number;

  constructor(
    keys: readonly ApiKey[],
    options: {
      toleranceSeconds?: number | undefined;
      /** Where nonces are remembered: the store, so replays fail after a restart. */
      nonces: NonceStore;
      /** Signed requests per key per freshness window. Default 100,000. */
      requestsPerKey?: number | undefined;
      nowSeconds?: (() => number) | undefined;
    },
  ) {
    this.keys = new Map(validateKeys(keys).map((k) => [k.id, k]));
    this.toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    this.nonces = options.nonces;
    this.quota = new KeyQuota(options.requestsPerKey ?? 100_000, this.toleranceSeconds);
    this.nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  }

  key(id: string): ApiKey | undefined {
    return this.keys.get(id);
  }

  /** Whether the request carries any of the signature headers. */
  static isSigned(header: HeaderGetter): boolean {
    return (
      header(KEY_HEADER) !== undefined ||
      header(SIGNATURE_HEADER) !== undefined ||
      header(TIMESTAMP_HEADER) !== undefined
    );
  }

  /**
   * Checks key, signature over method, path and body (constant-time), freshness,
   * the key's quota and replay, in that order; a request is remembered only once
   * its signature is valid, so forged requests cannot fill the nonce table.
   */
  async verify(
    header: HeaderGetter,
    request: { method: string; path: string; body: Uint8Array },
  ): Promise<VerifyResult> {
    const keyId = header(KEY_HEADER);
    const timestamp = header(TIMESTAMP_HEADER);
    const signature = header(SIGNATURE_HEADER);
    if (keyId === undefined || timestamp === undefined || signature === undefined) {
      return { ok: false, error: 'missing_signature' };
    }
    const match = SIGNATURE_FORMAT.exec(signature.trim().toLowerCase());
    const key = this.keys.get(keyId);
    // Unknown keys and bad signatures look the same from outside.
    if (!match?.[1] || !key || !TIMESTAMP_FORMAT.test(timestamp)) {
      return { ok: false, error: 'invalid_signature' };
    }
    const expected = Buffer.from(computeSignature(key.secret, timestamp, request), 'hex');
    const given = Buffer.from(match[1], 'hex');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return { ok: false, error: 'invalid_signature' };
    }
    const now = this.nowSeconds();
    const ts = Number(timestamp);
    if (Math.abs(now - ts) > this.toleranceSeconds) return { ok: false, error: 'stale_request' };
    if (!this.quota.take(key.id, now)) return { ok: false, error: 'rate_limited' };
    const outcome = await this.nonces({
      key: key.id,
      nonce: match[1],
      expiresAt: (ts + this.toleranceSeconds) * 1000,
      now: now * 1000,
    });
    if (outcome === 'replayed') return { ok: false, error: 'replayed_request' };
    return { ok: true, key };
  }
}

/** Whether `actorId` is in the key's actor list (exact ids, or `prefix*`). */
export function keyCoversActor(key: ApiKey, actorId: string): boolean {
  return coversActor(key.actors, actorId);
}

export type AuthorizationFailure =
  | { reason: 'approval_requires_approver_key'; eventType: string; roles: readonly string[] }
  | { reason: 'approver_key_sends_approvals_only'; eventType: string; roles: readonly string[] }
  | { reason: 'role_not_allowed'; eventType: string; roles: readonly string[] }
  | { reason: 'event_not_sendable'; eventType: string; kind: EventKind }
  | { reason: 'identity_mismatch'; eventType: string; field: string }
  | { reason: 'actor_not_allowed_for_key'; actorId: string };

/**
 * Authorization by source, from the chart's event metadata: a timer-only or
 * internal event is refused to every key (only the chart's own timers send it);
 * otherwise the key's role must be one of the event's roles (an approval's default
 * role is `approver`, so an agent key never approves; a command's is `agent`).
 * The key's actor list is checked first (call {@link keyCoversActor} before
 * loading the actor). Returns `undefined` when allowed.
 */
export function authorizeEvent(key: ApiKey, event: EventInfo): AuthorizationFailure | undefined {
  const eventType = event.type;
  if (event.kind === 'timer-only' || event.kind === 'internal') {
    return { reason: 'event_not_sendable', eventType, kind: event.kind };
  }
  if (event.roles.includes(key.role)) return undefined;
  const roles = event.roles;
  if (event.kind === 'approval')
    return { reason: 'approval_requires_approver_key', eventType, roles };
  if (key.role === 'approver')
    return { reason: 'approver_key_sends_approvals_only', eventType, roles };
  return { reason: 'role_not_allowed', eventType, roles };
}
