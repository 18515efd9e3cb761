// The bots test: an incoming webhook in the page. alice's room gets an
// incoming webhook from `parley apikey create --room` (the CLI beside the
// running node); a POST to its URL, with no header, shows in alice's open
// room under the bot's name with a "bot" label, and the members panel
// labels the bot too. Each step waits for the page's DOM; none sleeps.
//
// Run from web/: node --test test/bots.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { person, until, signUp, api, openRoom, showPeople, shot } from './pages.mjs';

let tmp, server, browser, bin, dataDir;
let alice;
let roomId = '';

before(async () => {
  tmp = tempDir('parley-web-bots-');
  bin = parleyBinary(tmp.dir);
  dataDir = join(tmp.dir, 'data');
  server = new Server(bin, dataDir);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

test('an incoming webhook posts into the room as a labelled bot', async () => {
  alice = await person(browser, 'alice', server.url);
  await signUp(alice);
  const created = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Alerts' });
  assert.equal(created.status, 201);
  roomId = created.data.id;
  await openRoom(alice, roomId);

  const key = execFileSync(bin, ['apikey', 'create', '--data', dataDir, '--name', 'alerts',
    '--scopes', 'post', '--bot', 'alert-bot', '--room', roomId], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  assert.match(key, /^pk_/);
  const res = await fetch(`${server.url}/api/hooks/${key}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ text: 'disk **91%** on db-1', client_id: 'alert-1' }),
  });
  assert.equal(res.status, 201);
  const m = await res.json();

  await until(alice.page, 'alice sees the webhook\'s message from a labelled bot', (seq) => {
    const li = document.querySelector(`#messages li[data-seq="${seq}"]`);
    return li && li.querySelector('.msg-sender')?.textContent === 'alert-bot' &&
      li.querySelector('.bot-badge')?.textContent === 'bot' &&
      li.querySelector('.msg-body strong')?.textContent === '91%';
  }, m.seq);
  await showPeople(alice.page);
  await until(alice.page, 'the members panel labels the bot', () => {
    const names = [...document.querySelectorAll('li.member')].filter((li) => li.querySelector('.bot-badge'));
    return names.length === 1 && names[0].querySelector('.member-name').textContent === 'alert-bot';
  });
  await shot(alice.page, 'bot-webhook.png');
});
