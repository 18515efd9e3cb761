// ORY Hydra for the OpenID Connect browser test: a real OpenID provider
// ($PARLEY_TEST_HYDRA, which .ci/run builds with scripts/install-hydra.sh)
// on private loopback ports with an in-memory database, and a login and
// consent app that signs one fixed user in through Hydra's admin API
// (or refuses, with access_denied, while deny is set).

import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

export const hydraBin = process.env.PARLEY_TEST_HYDRA || '';

/** freePort returns a loopback port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export class Hydra {
  constructor({ subject = 'web-hydra-sub', name = 'hydra-web' } = {}) {
    this.subject = subject;
    this.name = name;
    this.deny = false;
    this.proc = null;
    this.app = null;
    this.log = '';
  }

  /** start runs the login app and Hydra, and resolves once Hydra is ready. */
  async start() {
    this.app = http.createServer((req, res) => this.serveApp(req, res));
    await new Promise((resolve) => this.app.listen(0, '127.0.0.1', resolve));
    const appURL = 'http://127.0.0.1:' + this.app.address().port;
    const pub = await freePort();
    const adm = await freePort();
    this.issuer = 'http://127.0.0.1:' + pub;
    this.admin = 'http://127.0.0.1:' + adm;
    this.proc = spawn(hydraBin, ['serve', 'all', '--dev'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env, DSN: 'memory', URLS_SELF_ISSUER: this.issuer,
        URLS_LOGIN: appURL + '/login', URLS_CONSENT: appURL + '/consent',
        SECRETS_SYSTEM: 'a-system-secret-for-the-parley-web-tests', LOG_LEVEL: 'warn',
        SERVE_PUBLIC_PORT: String(pub), SERVE_ADMIN_PORT: String(adm),
        SERVE_PUBLIC_HOST: '127.0.0.1', SERVE_ADMIN_HOST: '127.0.0.1',
      },
    });
    for (const s of [this.proc.stdout, this.proc.stderr]) s.on('data', (c) => { this.log += c; });
    const deadline = Date.now() + 60000;
    for (let pause = 10; ; pause = Math.min(2 * pause, 200)) {
      try {
        if ((await fetch(this.admin + '/health/ready')).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline || this.proc.exitCode !== null) throw new Error('hydra did not start:\n' + this.log.slice(-2000));
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      const exited = new Promise((resolve) => this.proc.once('exit', resolve));
      this.proc.kill('SIGKILL');
      await exited;
    }
    if (this.app) await new Promise((resolve) => this.app.close(resolve));
  }

  /** call sends JSON to Hydra's admin API and returns its JSON answer. */
  async call(method, path, body) {
    const res = await fetch(this.admin + path, {
      method, headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
    return data;
  }

  /** createClient registers a confidential client with its callback URLs. */
  createClient(id, secret, redirects) {
    return this.call('POST', '/admin/clients', {
      client_id: id, client_secret: secret, redirect_uris: redirects,
      grant_types: ['authorization_code'], response_types: ['code'],
      scope: 'openid profile', token_endpoint_auth_method: 'client_secret_basic',
    });
  }

  async serveApp(req, res) {
    const u = new URL(req.url, 'http://x');
    try {
      let to;
      if (u.pathname === '/login') {
        const ch = encodeURIComponent(u.searchParams.get('login_challenge'));
        to = this.deny
          ? await this.call('PUT', '/admin/oauth2/auth/requests/login/reject?login_challenge=' + ch, { error: 'access_denied', error_description: 'the test user said no' })
          : await this.call('PUT', '/admin/oauth2/auth/requests/login/accept?login_challenge=' + ch, { subject: this.subject });
      } else if (u.pathname === '/consent') {
        const ch = encodeURIComponent(u.searchParams.get('consent_challenge'));
        const r = await this.call('GET', '/admin/oauth2/auth/requests/consent?consent_challenge=' + ch);
        to = await this.call('PUT', '/admin/oauth2/auth/requests/consent/accept?consent_challenge=' + ch, {
          grant_scope: r.requested_scope, grant_access_token_audience: r.requested_access_token_audience,
          session: { id_token: { preferred_username: this.name } },
        });
      } else {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(302, { Location: to.redirect_to }).end();
    } catch (e) {
      res.writeHead(502, { 'Content-Type': 'text/plain' }).end(String(e));
    }
  }
}
