// The OpenID Connect test: the page signs in through ORY Hydra, a real
// OpenID provider (hydra.mjs; skipped without $PARLEY_TEST_HYDRA, which
// .ci/run sets). alice clicks "Sign in with Hydra", goes through Hydra and
// its login app, lands in the chat signed in, and sends a message; no URL
// the browser requested carried her token; "Delete my account" asks her
// for no password and deletes the account; on a server where every
// sign-in is too old for it (--delete-signin-window 1ns), the dialog
// offers "Sign in again", which goes through Hydra and back to the
// dialog. A refusal at the provider
// shows its reason on the sign-in form. A second server runs with
// --password-login=false: its page shows the button and no password form.
// Each step waits for a page's DOM to change, bounded in time.
//
// Run from web/: PARLEY_TEST_HYDRA=/path/to/hydra node --test test/oidc.test.mjs

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { Hydra, freePort, hydraBin } from './hydra.mjs';
import { person, until, waitLive, api, openRoom, say, shot } from './pages.mjs';

const skip = hydraBin ? false : 'needs PARLEY_TEST_HYDRA, the ORY Hydra binary (.ci/run builds it with scripts/install-hydra.sh)';
const clientId = 'parley-web';
const secret = 'parley-web-client-secret';

let tmp, hydra, server, noPasswords, stale, browser;

/** oidcServer starts parley serve on a port of its own, signing in with hydra. */
async function oidcServer(dir, extra = []) {
  const s = new Server(parleyBinary(tmp.dir), join(tmp.dir, dir));
  s.addr = '127.0.0.1:' + (await freePort());
  s.args = ['--oidc-issuer', hydra.issuer, '--oidc-client-id', clientId, '--oidc-client-secret', secret,
    '--oidc-redirect-url', s.url + '/api/auth/oidc/callback', '--oidc-name', 'Hydra', ...extra];
  return s;
}

before(async () => {
  if (skip) return;
  tmp = tempDir('parley-web-oidc-');
  hydra = new Hydra({ name: 'alice' });
  await hydra.start();
  server = await oidcServer('data');
  noPasswords = await oidcServer('data2', ['--password-login=false']);
  // Every sign-in is too old to delete an account here: the page offers
  // "Sign in again".
  stale = await oidcServer('data3', ['--delete-signin-window', '1ns']);
  await hydra.createClient(clientId, secret, [server.url + '/api/auth/oidc/callback', noPasswords.url + '/api/auth/oidc/callback',
    stale.url + '/api/auth/oidc/callback']);
  await server.start();
  await noPasswords.start();
  await stale.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  for (const s of [server, noPasswords, stale]) if (s) await s.stop().catch(() => {});
  if (hydra) await hydra.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

test('alice signs in with Hydra, lands in the chat and sends a message', { skip }, async () => {
  const alice = await person(browser, 'alice', server.url);
  const urls = [];
  alice.page.on('request', (r) => urls.push(r.url()));
  await alice.page.goto(server.url + '/');
  await until(alice.page, 'the OpenID button', () => {
    const a = document.getElementById('oidc-button');
    return !document.getElementById('oidc-signin').hidden && a.textContent === 'Sign in with Hydra';
  });
  assert.equal(await alice.page.isVisible('#auth-name'), true, 'passwords are on: the form is shown too');
  assert.equal(await alice.page.isVisible('#auth-or'), true);
  await shot(alice.page, 'oidc-signin.png');
  await alice.page.click('#oidc-button');
  await alice.page.waitForSelector('#chat-app:not([hidden])', { timeout: 30000 });
  await waitLive(alice.page);
  assert.equal(await alice.page.textContent('#me-name'), 'alice');
  assert.equal(await alice.page.evaluate(() => location.hash), '', 'the #oidc fragment is gone');
  const token = await alice.page.evaluate(() => localStorage.getItem('parley.token'));
  assert.ok(token, 'the page keeps a token');
  assert.ok(urls.some((u) => u.startsWith(hydra.issuer)), 'the browser went through Hydra');
  assert.ok(!urls.some((u) => u.includes(token)), 'no URL carried the token');

  const me = await api(alice, 'GET', '/api/me');
  assert.equal(me.status, 200);
  assert.match(me.data.id, /^x/, 'an outside identity\'s account');
  const room = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'OIDC room' });
  assert.equal(room.status, 201);
  await openRoom(alice, room.data.id);
  await say(alice.page, 'hello from an OpenID user');
  await until(alice.page, 'the message is in the timeline', () =>
    [...document.querySelectorAll('#messages li .msg-body')].some((el) => el.textContent === 'hello from an OpenID user'));
  // Her account has no password: "Delete my account" asks for none, and
  // her sign-in, seconds old, confirms the deletion.
  await alice.page.click('#account-box summary');
  await alice.page.click('#delete-account');
  await until(alice.page, 'the delete dialog open', () => document.getElementById('delete-dialog').open);
  assert.equal(await alice.page.isVisible('#delete-password'), false, 'no password field');
  await alice.page.click('#delete-confirm');
  await until(alice.page, 'back at sign-in', () => !document.getElementById('auth').hidden &&
    document.getElementById('auth-error').textContent.includes('deleted'));
  const gone = await fetch(server.url + '/api/me', { headers: { Authorization: 'Bearer ' + token } });
  assert.equal(gone.status, 401, 'the account is deleted');
  assert.deepEqual(alice.errors, []);
  await alice.context.close();
});

test('a refusal at the provider shows its reason on the sign-in form', { skip }, async () => {
  const bob = await person(browser, 'bob', server.url);
  hydra.deny = true;
  try {
    await bob.page.goto(server.url + '/');
    await until(bob.page, 'the OpenID button', () => !document.getElementById('oidc-signin').hidden);
    await bob.page.click('#oidc-button');
    await until(bob.page, 'the refusal shown', () => {
      const e = document.getElementById('auth-error');
      return !document.getElementById('auth').hidden && e.textContent.includes('access_denied');
    }, null, 30000);
  } finally {
    hydra.deny = false;
  }
  await shot(bob.page, 'oidc-denied.png');
  assert.equal(await bob.page.evaluate(() => localStorage.getItem('parley.token')), null, 'no token');
  assert.equal(await bob.page.evaluate(() => location.hash), '');
  await bob.context.close();
});

test('with --password-login=false the page shows only the OpenID button', { skip }, async () => {
  const carol = await person(browser, 'carol', noPasswords.url);
  await carol.page.goto(noPasswords.url + '/');
  await until(carol.page, 'the OpenID button and no password form', () =>
    !document.getElementById('oidc-signin').hidden &&
    [...document.querySelectorAll('#auth .password-only')].every((el) => el.hidden));
  await shot(carol.page, 'oidc-no-passwords.png');
  assert.equal(await carol.page.isVisible('#auth-name'), false);
  assert.equal(await carol.page.isVisible('#auth-or'), false);
  assert.equal(await carol.page.isVisible('#auth-password'), false);
  assert.equal(await carol.page.isVisible('button[value=signup]'), false);
  const res = await fetch(noPasswords.url + '/api/tokens', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'carol', password: 'long enough' }),
  });
  assert.equal(res.status, 403);
  assert.match((await res.json()).error.message, /password sign-in is turned off on this server: sign in with Hydra/);
  // And the button still signs in.
  await carol.page.click('#oidc-button');
  await carol.page.waitForSelector('#chat-app:not([hidden])', { timeout: 30000 });
  await waitLive(carol.page);
  await carol.context.close();
});

test('a sign-in too old to delete the account: "Sign in again" goes through Hydra and back to the dialog', { skip }, async () => {
  const dave = await person(browser, 'dave', stale.url);
  await dave.page.goto(stale.url + '/');
  await until(dave.page, 'the OpenID button', () => !document.getElementById('oidc-signin').hidden);
  await dave.page.click('#oidc-button');
  await dave.page.waitForSelector('#chat-app:not([hidden])', { timeout: 30000 });
  await waitLive(dave.page);
  await dave.page.click('#account-box summary');
  await dave.page.click('#delete-account');
  await until(dave.page, 'the delete dialog open', () => document.getElementById('delete-dialog').open);
  assert.equal(await dave.page.isVisible('#delete-password'), false, 'no password field');
  await dave.page.click('#delete-confirm');
  await until(dave.page, '"Sign in again" offered', () => !document.getElementById('delete-signin-row').hidden &&
    document.getElementById('delete-error').textContent.includes('sign in again to confirm'));
  await shot(dave.page, 'oidc-delete-sign-in-again.png');
  // Through Hydra and back: the dialog opens again by itself.
  await dave.page.click('#delete-signin');
  await dave.page.waitForSelector('#chat-app:not([hidden])', { timeout: 30000 });
  await until(dave.page, 'the delete dialog open again after the sign-in', () => document.getElementById('delete-dialog').open, null, 30000);
  assert.equal(await dave.page.evaluate(() => sessionStorage.getItem('parley.delete-after-signin')), null, 'the mark is spent');
  await dave.page.click('#delete-confirm');
  await until(dave.page, 'refused again (every sign-in is too old on this server)', () =>
    document.getElementById('delete-error').textContent.includes('sign in again to confirm'));
  assert.equal((await api(dave, 'GET', '/api/me')).status, 200, 'nothing deleted');
  assert.deepEqual(dave.errors, []);
  await dave.context.close();
});
