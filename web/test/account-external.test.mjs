// The account test of an account with no password (a JWT user's; an
// OpenID Connect user's is in oidc.test.mjs, through Hydra): "Delete my
// account" asks zed for no password; with a JWT of an hour-old sign-in
// the server refuses (403 "sign in again") and the dialog says to sign in
// again at the issuer, nothing deleted; with a fresh JWT the deletion ends
// the session, and bob, in the room with zed, sees zed's message deleted.
// Each step waits for a page's DOM to change, bounded in time; none
// sleeps.
//
// Run from web/: node --test test/account-external.test.mjs (PARLEY_BIN
// may name a built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, waitLive, api, twoInRoom } from './pages.mjs';

const secret = 'a shared secret of the test, 32 bytes or more';
const issuer = 'https://id.example.test';
const audience = 'parley-web';

let tmp, server, browser;
let zed, bob;
let roomId = '';
let seq = 0;

/** jwt signs an HS256 token for zed, issued (iat) ago seconds ago. */
function jwt(ago) {
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = enc({ alg: 'HS256', typ: 'JWT' }) + '.' +
    enc({ iss: issuer, aud: audience, sub: 'sub-zed', preferred_username: 'zed', iat: now - ago, exp: now + 3600 });
  return body + '.' + createHmac('sha256', secret).update(body).digest('base64url');
}

/** signInWith loads the page with token as its saved token, and waits for the chat. */
async function signInWith(p, token) {
  await p.page.goto(server.url + '/');
  await p.page.evaluate((t) => localStorage.setItem('parley.token', t), token);
  await p.page.reload();
  await p.page.waitForSelector('#chat-app:not([hidden])');
  await waitLive(p.page);
}

before(async () => {
  tmp = tempDir('parley-web-account-external-');
  const secretFile = join(tmp.dir, 'jwt-secret');
  writeFileSync(secretFile, secret);
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'),
    ['--jwt-hs256-secret-file', secretFile, '--jwt-issuer', issuer, '--jwt-audience', audience]);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

const li = (s) => `#messages li[data-seq="${s}"]`;

test('zed (a JWT of an hour-old sign-in) and bob share a room', async () => {
  const set = await twoInRoom(browser, server.url, {
    people: [{ name: 'zed', signIn: (p) => signInWith(p, jwt(3600)) }, { name: 'bob' }], messages: ['words of zed'], open: [1],
  });
  [zed, bob] = set.people;
  assert.equal(await zed.page.textContent('#me-name'), 'zed');
  roomId = set.room.id;
  [seq] = set.seqs;
  await until(bob.page, 'bob sees zed\'s message', (sel) => {
    const el = document.querySelector(sel + ' .msg-body');
    return el && el.textContent === 'words of zed';
  }, li(seq));
});

test('Delete my account asks zed for no password, and an old sign-in is refused', async () => {
  await zed.page.click('#account-box summary');
  await zed.page.click('#delete-account');
  await until(zed.page, 'the delete dialog open', () => document.getElementById('delete-dialog').open);
  assert.equal(await zed.page.isVisible('#delete-password'), false, 'no password field');
  assert.equal(await zed.page.isVisible('#delete-signin-hint'), true);
  await zed.page.click('#delete-confirm');
  await until(zed.page, 'sign in again said', () =>
    document.getElementById('delete-error').textContent.includes('sign in again at your identity provider'));
  assert.equal(await zed.page.isVisible('#delete-signin'), false, 'no OpenID provider here: no button');
  assert.equal((await api(zed, 'GET', '/api/me')).status, 200, 'nothing deleted');
  await zed.page.click('#delete-cancel');
});

test('with a fresh JWT the deletion ends zed\'s session; bob sees the message deleted', async () => {
  await signInWith(zed, jwt(0));
  await zed.page.click('#account-box summary');
  await zed.page.click('#delete-account');
  await until(zed.page, 'the delete dialog open', () => document.getElementById('delete-dialog').open);
  await zed.page.click('#delete-confirm');
  await until(zed.page, 'back at sign-in', () => !document.getElementById('auth').hidden &&
    document.getElementById('auth-error').textContent.includes('deleted'));
  await until(bob.page, 'zed\'s message deleted on bob\'s page', (sel) => {
    const el = document.querySelector(sel);
    return el && el.classList.contains('deleted');
  }, li(seq));
  const res = await fetch(server.url + '/api/me', { headers: { Authorization: 'Bearer ' + jwt(0) } });
  assert.equal(res.status, 401, 'a JWT of the deleted account signs in no more');
  assert.deepEqual(zed.errors, []);
  assert.deepEqual(bob.errors, []);
});
