// Test harness for the browser test: a Parley server run as a subprocess
// (killed and restarted on the same port and data directory), a TCP proxy
// that can cut a browser's connections like a network drop, and headless
// Chromium driven by playwright-core.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = join(webDir, '..');
// Screenshots: $PARLEY_WEB_SHOTS when set, else web/test-output/ (ignored by git).
export const outDir = process.env.PARLEY_WEB_SHOTS || join(webDir, 'test-output');

/** tempDir makes a directory removed by the returned cleanup. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** parleyBinary returns $PARLEY_BIN, or builds cmd/parley into dir. */
export function parleyBinary(dir) {
  if (process.env.PARLEY_BIN) return process.env.PARLEY_BIN;
  const bin = join(dir, 'parley');
  execFileSync('go', ['build', '-o', bin, './cmd/parley'], { cwd: repoDir, stdio: 'inherit' });
  return bin;
}

/**
 * Server runs `parley serve` on a data directory, with extra arguments
 * (cluster mode: --store, --broker, --redis, ...); restart keeps the port.
 */
export class Server {
  constructor(bin, dataDir, args = []) {
    this.bin = bin;
    this.dataDir = dataDir;
    this.args = args;
    this.addr = '127.0.0.1:0';
    this.proc = null;
    this.log = '';
  }

  get url() {
    return 'http://' + this.addr;
  }

  /** start runs the server and resolves once it logs its address. */
  start() {
    return new Promise((resolve, reject) => {
      const proc = spawn(this.bin, ['serve', '--addr', this.addr, '--data', this.dataDir, '--log-level', 'info', ...this.args], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      this.proc = proc;
      let buf = '';
      const timer = setTimeout(() => reject(new Error('parley did not start in 20 s:\n' + buf)), 20000);
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (chunk) => {
        this.log += chunk;
        buf += chunk;
        const m = /msg="parley serving" addr=(\S+)/.exec(buf);
        if (m && this.proc === proc) {
          clearTimeout(timer);
          this.addr = m[1];
          buf = '';
          resolve();
        }
      });
      proc.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (this.proc === proc) this.proc = null;
        reject(new Error(`parley exited (${code ?? signal}) before serving:\n${this.log.slice(-2000)}`));
      });
    });
  }

  /** stop sends SIGTERM (graceful: the server closes every WebSocket) and waits for the exit. */
  async stop(signal = 'SIGTERM') {
    const proc = this.proc;
    if (!proc) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    const t = setTimeout(() => proc.kill('SIGKILL'), 15000);
    await exited;
    clearTimeout(t);
    this.proc = null;
  }

  async restart() {
    await this.stop();
    await this.start();
  }
}

/**
 * Proxy forwards TCP from its own port to a target; drop() cuts every
 * connection and refuses new ones until restore(), like a network drop.
 */
export class Proxy {
  constructor(targetPort) {
    this.targetPort = targetPort;
    this.sockets = new Set();
    this.port = 0;
    this.server = null;
  }

  get url() {
    return 'http://127.0.0.1:' + this.port;
  }

  listen() {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    return new Promise((resolve) => this.server.listen(this.port, '127.0.0.1', () => {
      this.port = this.server.address().port;
      resolve();
    }));
  }

  drop() {
    const closed = new Promise((resolve) => this.server.close(resolve));
    for (const s of this.sockets) s.resetAndDestroy ? s.resetAndDestroy() : s.destroy();
    this.sockets.clear();
    return closed;
  }

  restore() {
    return this.listen();
  }

  close() {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => (this.server && this.server.listening ? this.server.close(resolve) : resolve()));
  }
}

/**
 * launchBrowser starts Debian's Chromium headless. Playwright gives every
 * launch a fresh temporary --user-data-dir of its own (it refuses one in
 * args); the background-networking flags keep Chromium from calling out,
 * which this closed network refuses.
 */
export function launchBrowser() {
  mkdirSync(outDir, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    chromiumSandbox: false,
    timeout: 60000,
    args: [
      '--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}
