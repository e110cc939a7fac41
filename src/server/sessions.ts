/**
 * Browser sessions of the dashboard, each bound to the principal that opened it.
 * A session opened with the read token is a reader and can never send anything;
 * an approver signs in as themselves (their key id and secret) and their session
 * approves in their name only. Sessions live in memory, bounded in number, and
 * end on logout or after their time to live.
 */
import { randomBytes } from 'node:crypto';

/** Who is behind a session. */
export type SessionPrincipal =
  | { kind: 'reader' }
  | {
      kind: 'approver';
      /** The approver's key id: the identity recorded on every decision. */
      keyId: string;
    };

export interface SessionStoreOptions {
  /** How long a session lasts (ms). Default 8 hours. */
  ttlMs?: number | undefined;
  /** Most sessions kept; the oldest goes first. Default 10,000. */
  maxSessions?: number | undefined;
  now?: (() => number) | undefined;
}

interface Entry {
  principal: SessionPrincipal;
  expires: number;
}

export class SessionStore {
  readonly ttlMs: number;
  private readonly max: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  constructor(options: SessionStoreOptions = {}) {
    this.ttlMs = options.ttlMs ?? 8 * 60 * 60 * 1000;
    this.max = options.maxSessions ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Opens a session for `principal`; returns its id (the cookie value). */
  open(principal: SessionPrincipal): string {
    const now = this.now();
    if (this.entries.size >= this.max) {
      for (const [id, e] of this.entries) if (e.expires < now) this.entries.delete(id);
      while (this.entries.size >= this.max) {
        const oldest = this.entries.keys().next().value;
        if (oldest === undefined) break;
        this.entries.delete(oldest);
      }
    }
    const id = randomBytes(32).toString('base64url');
    this.entries.set(id, { principal, expires: now + this.ttlMs });
    return id;
  }

  /** The principal of a live session, or undefined (unknown or expired). */
  get(id: string | undefined): SessionPrincipal | undefined {
    if (id === undefined) return undefined;
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.expires < this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.principal;
  }

  close(id: string | undefined): void {
    if (id !== undefined) this.entries.delete(id);
  }

  /** Ends every session of an approver (their key was removed or rotated). */
  closeFor(keyId: string): void {
    for (const [id, e] of this.entries) {
      if (e.principal.kind === 'approver' && e.principal.keyId === keyId) this.entries.delete(id);
    }
  }
}
