// The admin API as the console calls it: same origin, the token from
// sessionStorage (this tab only) in the Authorization header. No cookie is
// ever set, so a foreign page cannot make the browser call with it (no
// CSRF); the API also refuses foreign Origin and Host headers.
const KEY = 'cebridge.admin.token';

export function token() {
  return sessionStorage.getItem(KEY);
}
export function setToken(t) {
  sessionStorage.setItem(KEY, t);
}
export function clearToken() {
  sessionStorage.removeItem(KEY);
}

// An answer the console shows as a message: the problem+json detail.
export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};
// Called with the error when the API refuses the token (401).
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

// Calls path (under /v1) with params (an object; empty values dropped).
// Resolves with the parsed JSON; rejects with ApiError.
export async function api(path, params = {}, method = 'GET') {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const url = '/v1' + path + (q.toString() ? '?' + q : '');
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 15000);
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: { Authorization: 'Bearer ' + (token() || ''), Accept: 'application/json' },
      credentials: 'omit',
      cache: 'no-store',
      signal: ctl.signal,
    });
  } catch (e) {
    throw new ApiError(0, 'unreachable',
      e.name === 'AbortError' ? 'the admin API did not answer within 15 s'
                              : 'the admin API cannot be reached');
  } finally {
    clearTimeout(timer);
  }
  let body = null;
  try {
    body = await res.json();
  } catch (e) {
    body = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, body && body.code, body && body.detail);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  return body;
}

export const enc = encodeURIComponent;
