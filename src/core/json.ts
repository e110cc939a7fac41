/**
 * Values JSON carries unchanged. A durable actor's context, output and events are
 * stored as JSON and read back after a restart; anything JSON would change on
 * the way (a Date becomes a string, a Map `{}`, NaN `null`, a BigInt or a cycle
 * throws) is refused where it enters, naming the path, instead of being changed
 * silently. One walk also measures the exact UTF-8 size of the JSON text and, for
 * events, makes the one copy the runtime validates and stores (every property read
 * once: a getter cannot show one value to validation and another to the log).
 *
 * Written by hand: JSON.stringify with a replacer cannot name the path of a
 * problem, misses Dates (their `toJSON` runs first) and still reads getters twice
 * when validation reads the object too.
 */

/** Why a value is not plain JSON data, and where. */
export interface JsonProblem {
  reason: 'forbidden_key' | 'invalid_field' | 'oversize';
  /** Keys from the root to the offending value. */
  path: string[];
  detail?: string | undefined;
}

export interface JsonWalkOptions {
  /** Stop past this many bytes of JSON text (default: no limit). */
  budget?: number | undefined;
  /** Refuse `__proto__`, `constructor` and `prototype` keys (caller-supplied events). */
  refuseForbiddenKeys?: boolean | undefined;
  /** Return a fresh copy of the value (each property read once). */
  copy?: boolean | undefined;
  /**
   * Accept XState actor refs (a machine's context may hold its children: XState
   * persists them as references and restores them).
   */
  actorRefs?: boolean | undefined;
}

/** `bytes`: the JSON text's UTF-8 size, counted when a budget is given (else 0). */
export type JsonWalk =
  { ok: true; value: unknown; bytes: number } | { ok: false; problem: JsonProblem };

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Deepest nesting accepted. */
export const MAX_JSON_DEPTH = 64;

/** Characters a JSON string holds as themselves, one byte each: printable ASCII but `"` and `\\`. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** TextEncoder rather than Buffer: events are validated in browsers too (`agentcharts/chart`). */
const utf8 = /* @__PURE__ */ new TextEncoder();

/** Exact UTF-8 length of `text` written as a JSON string, quotes included. */
function jsonStringBytes(text: string): number {
  if (PLAIN_ASCII.test(text)) return text.length + 2;
  return utf8.encode(JSON.stringify(text)).byteLength;
}

/**
 * The most UTF-8 bytes one character of a string adds to its JSON text beyond the
 * one byte a plain character takes: a control character is written `\u00XX` (six
 * bytes); nothing else takes more than three (a surrogate pair, two characters,
 * four).
 */
const MAX_EXTRA_BYTES_PER_CHAR = 5;

/** Length of `value` written as JSON (a finite number): integers counted, not printed. */
function jsonNumberBytes(value: number): number {
  if (!Number.isSafeInteger(value)) return String(value).length;
  let digits = value < 0 ? 2 : 1;
  for (let rest = Math.abs(value); rest >= 10; rest = Math.floor(rest / 10)) digits++;
  return digits;
}

/** What a value that JSON cannot carry unchanged is, in words. */
function describe(value: unknown): string {
  switch (typeof value) {
    case 'bigint':
      return 'a BigInt (JSON has no BigInt: store it as a string)';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    case 'number':
      return `${String(value)} (not a finite number: JSON writes null)`;
    default:
      break;
  }
  if (value instanceof Date)
    return 'a Date (JSON writes a string: store an ISO string or epoch ms)';
  if (value instanceof Map) return 'a Map (JSON writes {}: store an object or an array of pairs)';
  if (value instanceof Set) return 'a Set (JSON writes {}: store an array)';
  const ctor = (value as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof ctor === 'string' && ctor !== ''
    ? `an instance of ${ctor} (not plain JSON data)`
    : 'not plain JSON data';
}

/**
 * Walks `value` once: plain objects (prototype Object or null), arrays without
 * holes or `undefined`, strings, finite numbers, booleans and null. `undefined`
 * object properties are dropped, as JSON drops them (an absent optional field).
 */
export function walkJson(value: unknown, options: JsonWalkOptions = {}): JsonWalk {
  const walker = new Walker(options, false);
  const result = walker.walk(value);
  const { problem, budget } = walker;
  if (problem) return { ok: false, problem };
  let bytes = walker.bytes;
  if (bytes + MAX_EXTRA_BYTES_PER_CHAR * walker.chars > budget) {
    // The quick count cannot tell: measure every string exactly (large events only).
    const exact = new Walker({ budget }, true);
    exact.walk(result);
    bytes = exact.bytes;
  }
  if (bytes > budget) return { ok: false, problem: { reason: 'oversize', path: [] } };
  return { ok: true, value: result, bytes };
}

/** One walk's state (a class, not closures: the context check runs on every transition). */
class Walker {
  readonly budget: number;
  /** Sizes are counted only against a budget (the per-transition context check has none). */
  private readonly measure: boolean;
  /**
   * Count each string's exact UTF-8 JSON size. Otherwise a string counts as its
   * length + 2 (exact for printable ASCII; never more than the truth) and its
   * length is added to `chars`, which bounds what the count may have left out: a
   * walk well inside its budget needs no exact count (most events).
   */
  private readonly exact: boolean;
  /** Characters of the strings counted at their length (keys and values). */
  chars = 0;
  private readonly forbid: boolean;
  private readonly copy: boolean;
  private readonly actorRefs: boolean;
  /** The objects open from the root to the value being walked (a cycle meets one again). */
  private readonly open: object[] = [];
  /** The keys from the root to the value being walked (pushed and popped). */
  private readonly path: string[] = [];
  bytes = 0;
  problem: JsonProblem | undefined;

  constructor(options: JsonWalkOptions, exact: boolean) {
    this.exact = exact;
    this.budget = options.budget ?? Number.POSITIVE_INFINITY;
    this.measure = Number.isFinite(this.budget);
    this.forbid = options.refuseForbiddenKeys === true;
    this.copy = options.copy === true;
    this.actorRefs = options.actorRefs === true;
  }

  private stringBytes(text: string): number {
    if (this.exact) return jsonStringBytes(text);
    this.chars += text.length;
    return text.length + 2;
  }

  private fail(reason: JsonProblem['reason'], path: string[], detail?: string): undefined {
    this.problem = { reason, path, detail };
    return undefined;
  }

  private at(key?: string): string[] {
    return key === undefined ? [...this.path] : [...this.path, key];
  }

  /** The (copied) value, or undefined after setting `problem`. */
  walk(v: unknown): unknown {
    if (this.bytes > this.budget) return this.fail('oversize', []);
    switch (typeof v) {
      case 'string':
        if (this.measure) this.bytes += this.stringBytes(v);
        return v;
      case 'number':
        if (!Number.isFinite(v)) return this.fail('invalid_field', this.at(), describe(v));
        if (this.measure) this.bytes += jsonNumberBytes(v);
        return v;
      case 'boolean':
        this.bytes += v ? 4 : 5;
        return v;
      case 'object':
        if (v === null) {
          this.bytes += 4;
          return v;
        }
        return this.object(v);
      default:
        return this.fail('invalid_field', this.at(), describe(v));
    }
  }

  private object(v: object): unknown {
    const { path, open } = this;
    if (path.length > MAX_JSON_DEPTH)
      return this.fail('invalid_field', this.at(), 'nested too deeply');
    if (open.includes(v))
      return this.fail('invalid_field', this.at(), 'a cycle (JSON cannot hold one)');
    if (Array.isArray(v)) {
      open.push(v);
      const out: unknown[] | undefined = this.copy ? new Array<unknown>(v.length) : undefined;
      this.bytes += v.length > 0 ? 1 + v.length : 2; // brackets and the commas between
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (item === undefined) return this.fail('invalid_field', this.at(String(i)), 'undefined');
        path.push(String(i));
        const done = this.walk(item);
        path.pop();
        if (this.problem) return undefined;
        if (out) out[i] = done;
      }
      open.pop();
      return out ?? v;
    }
    if (this.actorRefs && 'sessionId' in v && 'send' in v && 'ref' in v) return v;
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      return this.fail('invalid_field', this.at(), describe(v));
    }
    open.push(v);
    const out: Record<string, unknown> | undefined = this.copy ? {} : undefined;
    let members = 0;
    for (const key of Object.keys(v)) {
      if (this.forbid && FORBIDDEN_KEYS.has(key)) return this.fail('forbidden_key', this.at(key));
      const child = (v as Record<string, unknown>)[key];
      if (child === undefined) continue; // dropped by JSON, as optional fields are
      members++;
      if (this.measure) this.bytes += this.stringBytes(key) + 1; // "key":
      path.push(key);
      const done = this.walk(child);
      path.pop();
      if (this.problem) return undefined;
      if (out) out[key] = done;
    }
    this.bytes += members > 0 ? 1 + members : 2; // braces and the commas between
    open.pop();
    return out ?? v;
  }
}
