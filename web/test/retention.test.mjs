// The retention test: a room's own retention, as its owner sets it and a
// member sees it, on one server whose sweeper passes every 50 ms (the
// server keeps messages forever by default). alice owns a room and bob is
// a member. Each step waits for the other page's DOM to change (bounded
// in time), never for a fixed delay.
//
// Run from web/: node --test test/retention.test.mjs (PARLEY_BIN may name
// a built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, api, twoInRoom, showPeople, shot } from './pages.mjs';

let tmp, server, browser;
let alice, bob;
let roomId = '';

before(async () => {
  tmp = tempDir('parley-web-retention-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'), ['--retention-interval', '50ms']);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

const retentionOf = (page) => page.evaluate(() => document.getElementById('room-retention').textContent);

test('alice keeps her room\'s messages 1 day; bob sees it, read-only', async () => {
  const set = await twoInRoom(browser, server.url, { title: 'Short-lived' });
  [alice, bob] = set.people;
  roomId = set.room.id;
  assert.equal(set.room.retention_seconds, 0);
  for (const p of [alice, bob]) {
    await showPeople(p.page);
    await until(p.page, `${p.name} sees the server's default`, () => document.getElementById('room-retention').textContent === 'Keep messages: Server default');
  }
  assert.equal(await bob.page.evaluate(() => document.getElementById('room-settings').hidden), true, 'no settings for a member');
  await until(alice.page, 'alice\'s settings', () => !document.getElementById('room-settings').hidden);
  assert.equal(await alice.page.inputValue('#settings-retention'), '0');

  await alice.page.click('#room-settings summary');
  await alice.page.selectOption('#settings-retention', '86400');
  await until(bob.page, 'bob sees 1 day, without a reload', () => document.getElementById('room-retention').textContent === 'Keep messages: 1 day');
  await until(alice.page, 'alice sees 1 day', () => document.getElementById('room-retention').textContent === 'Keep messages: 1 day');
  assert.equal((await api(bob, 'GET', `/api/rooms/${roomId}`)).data.retention_seconds, 86400);
  assert.equal(await alice.page.textContent('#people-error'), '');
  // A member's PATCH is refused.
  assert.equal((await api(bob, 'PATCH', `/api/rooms/${roomId}`, { retention_seconds: 0 })).status, 403);
  await shot(alice.page, 'retention-settings.png');
});

test('a retention of 1 s set over the API turns the old messages into "message deleted" live', async () => {
  for (const body of ['soon gone', 'gone too']) {
    assert.equal((await api(alice, 'POST', `/api/rooms/${roomId}/messages`, { body })).status, 201);
  }
  for (const p of [alice, bob]) {
    await until(p.page, `${p.name} sees both messages`, () => document.querySelectorAll('#messages li[data-seq]').length === 2);
  }
  assert.equal((await api(alice, 'PATCH', `/api/rooms/${roomId}`, { retention_seconds: 1 })).status, 200);
  for (const p of [alice, bob]) {
    await until(p.page, `${p.name} sees both deleted`, () => [...document.querySelectorAll('#messages li[data-seq] .msg-body')]
      .filter((e) => e.textContent === 'message deleted').length === 2);
    await until(p.page, `${p.name} sees 1 second`, () => document.getElementById('room-retention').textContent === 'Keep messages: 1 second');
  }
  assert.equal(await bob.page.evaluate(() => document.body.innerText.includes('soon gone')), false, 'the text is gone from the page');
  for (const p of [alice, bob]) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});
