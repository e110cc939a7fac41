/**
 * Single-use stream tickets: how a browser app on another origin opens the live
 * stream without a secret in its URL. Its backend (which holds a read credential)
 * asks `POST /api/stream-tickets` for a ticket bound to one filter; the browser
 * opens `EventSource('/api/stream?ticket=…')` with it. A ticket works once,
 * within 60 s, for the principal and filter it was made for; at most 10,000 wait
 * at once (the oldest go first).
 */
import { randomBytes } from 'node:crypto';
import type { Principal } from './middleware/auth.ts';

/** What a ticket opens: one stream, filtered as it was asked. */
export interface StreamTicket {
  principal: Principal;
  filter: { actorId: string | undefined; machineId: string | undefined };
  expiresAt: number;
}

export class StreamTickets {
  private readonly tickets = new Map<string, StreamTicket>();
  constructor(
    private readonly ttlMs = 60_000,
    private readonly max = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new ticket (URL-safe text) for `principal` and `filter`. */
  issue(
    principal: Principal,
    filter: StreamTicket['filter'],
  ): { ticket: string; expiresAt: number } {
    this.sweep();
    while (this.tickets.size >= this.max) {
      const oldest = this.tickets.keys().next().value;
      if (oldest === undefined) break;
      this.tickets.delete(oldest);
    }
    const ticket = randomBytes(24).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.tickets.set(ticket, { principal, filter, expiresAt });
    return { ticket, expiresAt };
  }

  /** The ticket's grant, once: a second use, an unknown or an expired ticket is undefined. */
  redeem(ticket: string): StreamTicket | undefined {
    const found = this.tickets.get(ticket);
    this.tickets.delete(ticket);
    return found && found.expiresAt > this.now() ? found : undefined;
  }

  private sweep(): void {
    const now = this.now();
    for (const [ticket, grant] of this.tickets)
      if (grant.expiresAt <= now) this.tickets.delete(ticket);
  }
}
