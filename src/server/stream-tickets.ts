/**
 * Single-use stream tickets: how a browser app on another origin opens the live
 * stream without a secret in its URL. Its backend (which holds a read credential)
 * asks `POST /api/stream-tickets` for a ticket bound to one filter; the browser
 * opens `EventSource('/api/stream?ticket=…')` with it. A ticket works once,
 * within 60 s, for the principal and filter it was made for (a session's tickets
 * end with it). Tickets are bounded per credential (1,000 waiting; its oldest go
 * first, never another credential's) and 10,000 in all.
 */
import { randomBytes } from 'node:crypto';
import { ByCredential } from './by-credential.ts';
import type { Principal } from './middleware/auth.ts';

/** What a ticket opens: one stream, filtered as it was asked. */
export interface StreamTicket {
  principal: Principal;
  /** The credential it counts against (`token`, `key:<id>`, …). */
  credential: string;
  filter: { actorId: string | undefined; machineId: string | undefined };
  expiresAt: number;
}

export class StreamTickets {
  private readonly tickets = new Map<string, StreamTicket>();
  private readonly byCredential = new ByCredential();
  constructor(
    private readonly ttlMs = 60_000,
    private readonly max = 10_000,
    private readonly now: () => number = Date.now,
    private readonly maxPerCredential = 1_000,
  ) {}

  /** A new ticket (URL-safe text) for `principal` and `filter`. */
  issue(
    principal: Principal,
    filter: StreamTicket['filter'],
    credential = 'anyone',
  ): { ticket: string; expiresAt: number } {
    this.sweep();
    for (const oldest of this.byCredential.overflow(credential, this.maxPerCredential)) {
      this.drop(oldest);
    }
    for (const oldest of this.tickets.keys()) {
      if (this.tickets.size < this.max) break;
      this.drop(oldest);
    }
    const ticket = randomBytes(24).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.tickets.set(ticket, { principal, credential, filter, expiresAt });
    this.byCredential.add(credential, ticket);
    return { ticket, expiresAt };
  }

  /** The ticket's grant, once: a second use, an unknown or an expired ticket is undefined. */
  redeem(ticket: string): StreamTicket | undefined {
    const found = this.tickets.get(ticket);
    this.drop(ticket);
    return found && found.expiresAt > this.now() ? found : undefined;
  }

  /** Ends the tickets a dashboard session asked for (it logged out or was pushed out). */
  revokeSession(sessionId: string): void {
    for (const [ticket, grant] of this.tickets) {
      if (grant.principal.kind === 'session' && grant.principal.sessionId === sessionId) {
        this.drop(ticket);
      }
    }
  }

  /** Tickets waiting now. */
  get size(): number {
    return this.tickets.size;
  }

  private drop(ticket: string): void {
    const grant = this.tickets.get(ticket);
    if (!grant) return;
    this.tickets.delete(ticket);
    this.byCredential.delete(grant.credential, ticket);
  }

  private sweep(): void {
    const now = this.now();
    // In issue order, which is expiry order.
    for (const [ticket, grant] of this.tickets) {
      if (grant.expiresAt > now) break;
      this.drop(ticket);
    }
  }
}
