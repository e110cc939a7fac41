/** The principals of `agentcharts serve`, as a client holds them, for tests over real HTTP. */
import { signRequest, type ApiKey } from '../../src/server/auth.ts';

/** The seconds each identical request was signed at: a replayed signature is refused. */
const used = new Map<string, Set<number>>();

/**
 * Headers of a signed request by `key`, with a signature never used before: the
 * same request again is signed a second earlier (within the 5-minute window).
 */
export function signed(
  key: Pick<ApiKey, 'id' | 'secret'>,
  method: string,
  path: string,
  body = '',
): Record<string, string> {
  const request = `${key.id}\u0000${method}\u0000${path}\u0000${body}`;
  const seconds = used.get(request) ?? new Set<number>();
  used.set(request, seconds);
  const now = Math.floor(Date.now() / 1000);
  let at = now;
  while (seconds.has(at)) at--;
  if (now - at > 250) throw new Error('signed: this request was signed too often in 4 minutes');
  seconds.add(at);
  return signRequest(key, { method, path, body }, at);
}

/** A JSON POST signed by `key`. */
export function signedPost(
  url: string,
  key: Pick<ApiKey, 'id' | 'secret'>,
  path: string,
  body: string,
): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signed(key, 'POST', path, body) },
    body,
  });
}

/** A GET signed by `key`. */
export function signedGet(url: string, key: Pick<ApiKey, 'id' | 'secret'>, path: string) {
  return fetch(`${url}${path}`, { headers: signed(key, 'GET', path) });
}

/** A reader session opened with the read token (its cookie), as a browser does. */
export async function readerSession(url: string, token: string): Promise<string> {
  const response = await fetch(`${url}/?token=${token}`, { redirect: 'manual' });
  if (response.status !== 303) throw new Error(`token refused: ${response.status}`);
  return (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

/** An approver signed in to the dashboard with their own key id and secret (their cookie). */
export async function approverSession(
  url: string,
  key: Pick<ApiKey, 'id' | 'secret'>,
): Promise<string> {
  const response = await fetch(`${url}/dashboard/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ keyId: key.id, secret: key.secret }),
  });
  if (response.status !== 200) throw new Error(`sign-in refused: ${response.status}`);
  return (response.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}
