/**
 * One INFO line per request, after its answer: method, path, status and time,
 * as pino fields and as text (`--> GET /api/actors?limit=… 200 3ms`). Query
 * values are never written: `/?token=…`, `/api/stream?ticket=…` and
 * `/?signin=…` carry credentials, so every value is replaced by `…` (the
 * parameter names stay, for debugging). Hand-written because hono's `logger`
 * prints the raw URL, query and all, on two lines per request.
 */
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';

/** A request target with every query value redacted. */
export function redactedTarget(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const target = start === -1 ? '/' : url.slice(start);
  const q = target.indexOf('?');
  if (q === -1) return target;
  const names = target
    .slice(q + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => `${pair.split('=')[0] ?? ''}=…`);
  return `${target.slice(0, q)}?${names.join('&')}`;
}

export function requestLog(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now();
    await next();
    const ms = Math.round(performance.now() - start);
    const path = redactedTarget(c.req.url);
    const status = c.res.status;
    logger.info(
      { method: c.req.method, path, status, ms },
      `--> ${c.req.method} ${path} ${status} ${ms}ms`,
    );
  };
}
