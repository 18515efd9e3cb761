// The REST API (rest/openapi.yaml, served at /api/openapi.yaml), with the bearer token.

/** ApiError is a refused or failed request: status 0 when unreachable. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  constructor(token = '') {
    this.token = token;
  }

  async req(method, path, body) {
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.token) headers.Authorization = 'Bearer ' + this.token;
    let res;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (e) {
      throw new ApiError(0, 'network', 'The server cannot be reached.');
    }
    if (res.status === 204) return null;
    let data = null;
    try {
      data = await res.json();
    } catch {
      // not JSON: fall through with data null
    }
    if (!res.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(res.status, e.code || 'http_' + res.status, e.message || res.statusText || 'request failed');
    }
    return data;
  }

  register(name, password) { return this.req('POST', '/api/users', { name, password }); }
  login(name, password) { return this.req('POST', '/api/tokens', { name, password }); }
  /** oidcSession takes the token of the OpenID Connect sign-in just finished (once). */
  oidcSession() { return this.req('POST', '/api/auth/oidc/session'); }
  me() { return this.req('GET', '/api/me'); }
  /** config is the server's limits and ways in: {max_body, max_client_id, max_page, password_login, oidc}. */
  config() { return this.req('GET', '/api/config'); }
  /** logout revokes this token on the server: it stops working everywhere. */
  logout() { return this.req('DELETE', '/api/tokens/current'); }
  /**
   * deleteMe deletes the account, confirmed with its password (403 forbidden when wrong); an
   * account with no password sends none, and its token must come from a recent sign-in.
   */
  deleteMe(password) { return this.req('DELETE', '/api/me', password === undefined ? {} : { password }); }
  rooms() { return this.req('GET', '/api/me/rooms?limit=100'); }
  room(id) { return this.req('GET', '/api/rooms/' + encodeURIComponent(id)); }
  join(id) { return this.req('POST', '/api/rooms/' + encodeURIComponent(id) + '/members'); }
  markRead(id, seq) { return this.req('PUT', '/api/rooms/' + encodeURIComponent(id) + '/read', { seq }); }
  userByName(name) { return this.req('GET', '/api/users/' + encodeURIComponent(name)); }

  createGroup(title, capacity) {
    const body = { kind: 'group', title };
    if (capacity > 0) body.capacity = capacity;
    return this.req('POST', '/api/rooms', body);
  }

  createDirect(peerId) { return this.req('POST', '/api/rooms', { kind: 'direct', peer: peerId }); }

  /** messages returns a page: newest first for before (or none), oldest first for after. */
  messages(id, { before, after, limit = 50 } = {}) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before !== undefined) q.set('before', String(before));
    if (after !== undefined) q.set('after', String(after));
    return this.req('GET', '/api/rooms/' + encodeURIComponent(id) + '/messages?' + q);
  }
}
