/**
 * Who is on the other end of a request, for throttles and for the inspection
 * socket's loopback rule. Without `--trust-proxy` it is the socket's peer. Behind
 * a trusted proxy every peer is the proxy, so the client is what the proxy says,
 * in any of the three headers proxies use: `Forwarded: for=…` (RFC 7239),
 * `X-Forwarded-For` and `X-Real-IP`. Of a list, the last entry is the one the
 * trusted proxy appended; the ones before it came from the client and prove
 * nothing.
 */
import type { Context } from 'hono';
import { incomingOf } from './http.ts';

/** The peer's address, or what a trusted proxy forwarded, and whether it was forwarded. */
export interface ClientAddress {
  address: string;
  /** True when a trusted proxy named the client (then it is not the socket's peer). */
  forwarded: boolean;
}

/** The last `for=` of a `Forwarded` header, unquoted, without brackets or port. */
function forwardedFor(header: string): string | undefined {
  const hops = header.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const match = /(?:^|;)\s*for\s*=\s*("[^"]*"|[^;,\s]+)/i.exec(hops[i] ?? '');
    if (match?.[1] === undefined) continue;
    let value = match[1].replace(/^"|"$/g, '');
    if (value.startsWith('[')) value = value.slice(1, value.indexOf(']'));
    else if (value.split(':').length === 2) value = value.slice(0, value.indexOf(':'));
    return value;
  }
  return undefined;
}

function lastOf(list: string | undefined): string | undefined {
  const last = list?.split(',').pop()?.trim();
  return last === undefined || last === '' ? undefined : last;
}

/** The client of a request (see the module comment). */
export function clientAddress(c: Context, trustProxy: boolean): ClientAddress {
  const peer = incomingOf(c)?.socket.remoteAddress ?? 'unknown';
  if (!trustProxy) return { address: peer, forwarded: false };
  const forwarded = c.req.header('forwarded');
  const named =
    (forwarded !== undefined ? (forwardedFor(forwarded) ?? 'unknown') : undefined) ??
    lastOf(c.req.header('x-forwarded-for')) ??
    c.req.header('x-real-ip')?.trim();
  return named === undefined
    ? { address: peer, forwarded: false }
    : { address: named, forwarded: true };
}

/** Whether an address is the machine itself (IPv4 127/8, IPv6 ::1, IPv4-mapped). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return plain === '::1' || /^127\.\d+\.\d+\.\d+$/.test(plain);
}
