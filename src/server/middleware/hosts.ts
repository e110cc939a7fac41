/**
 * Host allow-list: a request whose `Host` header names a host the server was not
 * told to answer for gets 421, before anything else runs. Without it a page on
 * another site can point a DNS name at 127.0.0.1 (DNS rebinding) and read a
 * `--public-read` server from the victim's browser. Hono ships no such
 * middleware; this is the whole of it.
 */
import type { MiddlewareHandler } from 'hono';

/** Loopback names every server answers for, whatever else it is given. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/** The host of a `Host` header, lower case, without port or IPv6 brackets. */
export function hostOf(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(1, value.indexOf(']'));
  const colon = value.lastIndexOf(':');
  return colon > 0 && value.indexOf(':') === colon ? value.slice(0, colon) : value;
}

/**
 * Refuses requests for hosts not in `allowed` (names compared without port; a
 * leading `.` allows subdomains: `.example.com`). `*` allows any host.
 */
export function allowedHosts(allowed: readonly string[]): MiddlewareHandler {
  const any = allowed.includes('*');
  const exact = new Set([...LOOPBACK_HOSTS, ...allowed.map((h) => hostOf(h))]);
  const suffixes = allowed.filter((h) => h.startsWith('.')).map((h) => h.toLowerCase());
  return async (c, next) => {
    if (!any) {
      // HTTP/1.1 requests always carry Host; one built in process (the dashboard's
      // own approval request) is judged by its URL.
      const header = c.req.header('host') ?? new URL(c.req.url).host;
      const host = hostOf(header);
      const ok = exact.has(host) || suffixes.some((s) => host.endsWith(s));
      if (!ok) return c.json({ error: 'host_not_allowed' }, 421);
    }
    await next();
    return undefined;
  };
}
