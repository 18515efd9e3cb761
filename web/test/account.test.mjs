// The account test: "Download my data" and "Delete my account" in the
// page, on one server. alice downloads her data (a JSON Lines file with
// her messages), then deletes her account from one tab: the password
// dialog refuses a wrong password and changes nothing; the right one ends
// her session in that tab and, through the server's revocation, in her
// second tab; bob, in the room with her, sees her message deleted; and
// her name cannot sign up again. Each step waits for a page's DOM to
// change, bounded in time; none sleeps.
//
// Run from web/: node --test test/account.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, waitLive, api, twoInRoom, password } from './pages.mjs';

let tmp, server, browser;
let alice, bob, aliceTab2;
let roomId = '';
let seq = 0;

before(async () => {
  tmp = tempDir('parley-web-account-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'));
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

const li = (s) => `#messages li[data-seq="${s}"]`;

test('alice and bob share a room; alice has a second tab', async () => {
  const set = await twoInRoom(browser, server.url, { messages: ['words of alice'], open: [1] });
  [alice, bob] = set.people;
  roomId = set.room.id;
  [seq] = set.seqs;
  await until(bob.page, 'bob sees alice\'s message', (sel) => {
    const el = document.querySelector(sel + ' .msg-body');
    return el && el.textContent === 'words of alice';
  }, li(seq));
  aliceTab2 = await alice.context.newPage();
  await aliceTab2.goto(server.url + '/');
  await aliceTab2.waitForSelector('#chat-app:not([hidden])');
  await waitLive(aliceTab2);
});

test('Download my data saves a JSON Lines file with alice\'s messages', async () => {
  await alice.page.click('#account-box summary');
  const [download] = await Promise.all([
    alice.page.waitForEvent('download'),
    alice.page.click('#download-data'),
  ]);
  assert.equal(download.suggestedFilename(), 'parley-alice.jsonl');
  const file = join(tmp.dir, 'export.jsonl');
  await download.saveAs(file);
  const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines[0].type, 'account');
  assert.equal(lines[0].user.name, 'alice');
  const bodies = lines.filter((l) => l.type === 'message').map((l) => l.message.body);
  assert.deepEqual(bodies, ['words of alice']);
  assert.equal(lines.at(-1).type, 'end');
});

test('Delete my account: a wrong password changes nothing, the right one ends both tabs', async () => {
  await alice.page.click('#delete-account');
  await until(alice.page, 'the delete dialog open', () => document.getElementById('delete-dialog').open);
  await alice.page.fill('#delete-password', 'not the password');
  await alice.page.click('#delete-confirm');
  await until(alice.page, 'wrong password said', () => document.getElementById('delete-error').textContent.startsWith('Wrong password'));
  assert.equal((await api(alice, 'GET', '/api/me')).status, 200, 'the token still works after a wrong password');

  await alice.page.fill('#delete-password', password);
  await alice.page.click('#delete-confirm');
  await until(alice.page, 'tab 1 back at sign-in', () => !document.getElementById('auth').hidden &&
    document.getElementById('auth-error').textContent.includes('deleted'));
  await until(aliceTab2, 'tab 2 back at sign-in (its session ended by the server)', () => !document.getElementById('auth').hidden);
});

test('bob sees alice\'s message deleted, and her name cannot sign up again', async () => {
  await until(bob.page, 'alice\'s message deleted on bob\'s page', (sel) => {
    const el = document.querySelector(sel);
    return el && el.classList.contains('deleted');
  }, li(seq));
  await alice.page.fill('#auth-name', 'alice');
  await alice.page.fill('#auth-password', 'another password');
  await alice.page.click('button[value=signup]');
  await until(alice.page, 'sign-up refused', () => document.getElementById('auth-error').textContent.includes('taken'));
  assert.deepEqual(alice.errors, []);
  assert.deepEqual(bob.errors, []);
});
