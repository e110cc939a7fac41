/**
 * Browser sessions of the dashboard, each bound to the principal that opened it.
 * A session opened with the read token is a reader and can never send anything;
 * an approver signs in as themselves (their key id and secret) and their session
 * approves in their name only, within their key's actors. Sessions live in
 * memory and end on logout or after their time to live.
 *
 * They are bounded per credential: the read token's sessions, and each key's,
 * count apart, and a credential past its cap loses its own oldest session,
 * never another's (a flood of `GET /?token=` cannot sign an approver out).
 */
import { randomBytes } from 'node:crypto';
import { ByCredential } from './by-credential.ts';

/** Who is behind a session. */
export type SessionPrincipal =
  | { kind: 'reader' }
  | {
      kind: 'approver';
      /** The approver's key id: the identity recorded on every decision. */
      keyId: string;
      /** The key's actor list: what the session may read and decide (undefined: every actor). */
      actors?: readonly string[] | undefined;
    };

export interface SessionStoreOptions {
  /** How long a session lasts (ms). Default 8 hours. */
  ttlMs?: number | undefined;
  /** Sessions one credential (the read token, or one key) may hold; its oldest goes first. Default 1,000. */
  maxPerCredential?: number | undefined;
  now?: (() => number) | undefined;
}

interface Entry {
  principal: SessionPrincipal;
  credential: string;
  expires: number;
}

/** The credential a session was opened with: `token`, or `key:<id>`. */
export function sessionCredential(principal: SessionPrincipal): string {
  return principal.kind === 'approver' ? `key:${principal.keyId}` : 'token';
}

export class SessionStore {
  readonly ttlMs: number;
  private readonly maxPerCredential: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly byCredential = new ByCredential();

  constructor(options: SessionStoreOptions = {}) {
    this.ttlMs = options.ttlMs ?? 8 * 60 * 60 * 1000;
    this.maxPerCredential = Math.max(1, options.maxPerCredential ?? 1_000);
    this.now = options.now ?? Date.now;
  }

  /** Sessions open now. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Opens a session for `principal`; returns its id (the cookie value) and the
   * ids of the sessions it pushed out (that credential's oldest), whose streams
   * and tickets end with them.
   */
  open(principal: SessionPrincipal): { id: string; evicted: string[] } {
    const credential = sessionCredential(principal);
    // In insertion order: the oldest is also the first to expire.
    const evicted = this.byCredential.overflow(credential, this.maxPerCredential);
    for (const old of evicted) this.close(old);
    const id = randomBytes(32).toString('base64url');
    this.entries.set(id, { principal, credential, expires: this.now() + this.ttlMs });
    this.byCredential.add(credential, id);
    return { id, evicted };
  }

  /** The principal of a live session, or undefined (unknown or expired). */
  get(id: string | undefined): SessionPrincipal | undefined {
    if (id === undefined) return undefined;
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.expires < this.now()) {
      this.close(id);
      return undefined;
    }
    return entry.principal;
  }

  close(id: string | undefined): void {
    if (id === undefined) return;
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.byCredential.delete(entry.credential, id);
  }

  /** Ends every session of an approver (their key was removed or rotated); returns their ids. */
  closeFor(keyId: string): string[] {
    const ids = this.byCredential.of(`key:${keyId}`);
    for (const id of ids) this.close(id);
    return ids;
  }
}
