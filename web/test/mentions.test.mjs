// The mentions test: bob types "@al" in the composer, picks alice from the
// list by keyboard and sends; alice, looking at another room, gets the
// mention event, a mention badge on the room and in the tab title, and,
// once she opens the room, the mention highlighted as hers. Her room's
// notification level (asked for desktop notifications when first
// changed) decides the rest: at "mentions" a mention while her tab is
// hidden shows a desktop notification; at "none" a mention shows no badge
// and no notification. Each step waits for a page's DOM to change,
// bounded in time; none sleeps.
//
// Run from web/: node --test test/mentions.test.mjs (PARLEY_BIN may name
// a built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, api, twoInRoom, openRoom, showPeople, shot } from './pages.mjs';

let tmp, server, browser;
let alice, bob;
let team = '';
let elsewhere = '';

before(async () => {
  tmp = tempDir('parley-web-mentions-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'), []);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

/** A stand-in for the Notification API that records what the page does with it. */
function fakeNotifications() {
  window.__notes = { asked: 0, shown: [] };
  class FakeNotification {
    constructor(title, opts) {
      window.__notes.shown.push({ title, body: opts && opts.body });
    }
    close() {}
    static requestPermission() {
      window.__notes.asked++;
      FakeNotification.permission = 'granted';
      return Promise.resolve('granted');
    }
  }
  FakeNotification.permission = 'default';
  window.Notification = FakeNotification;
}

/** badgeOf is the text of the mention badge of a room in p's room list, '' for none. */
function badgeOf(page, roomId) {
  return page.evaluate((id) => document.querySelector(`#room-list a[data-room="${id}"] .mention-badge [aria-hidden]`)?.textContent || '', roomId);
}

test('alice and bob share a room; alice looks at another', async () => {
  const set = await twoInRoom(browser, server.url, { init: (p) => p.page.addInitScript(fakeNotifications), open: [] });
  [alice, bob] = set.people;
  team = set.room.id;
  elsewhere = (await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Elsewhere' })).data.id;
  await openRoom(alice, elsewhere);
  await openRoom(bob, team);
  assert.equal(await alice.page.evaluate(() => window.__notes.asked), 0, 'not asked on load');
});

test('bob types @al, picks alice by keyboard and sends; alice gets the event, the badge and the title', async () => {
  const b = bob.page;
  await b.click('#composer-input');
  await b.keyboard.type('lunch, @al');
  await until(b, 'the mention list offers alice', () => {
    const list = document.getElementById('mention-list');
    return !list.hidden && [...list.querySelectorAll('[role=option]')].map((o) => o.dataset.name).join() === 'alice' &&
      document.getElementById('composer-input').getAttribute('aria-expanded') === 'true';
  });
  await b.keyboard.press('Enter'); // picks; does not send
  await until(b, 'alice picked', () => document.getElementById('composer-input').value === 'lunch, @alice ' &&
    document.getElementById('mention-list').hidden);
  await b.keyboard.type('?');
  await b.keyboard.press('Enter'); // sends
  await until(b, 'the message on bob’s page, mentioning alice', () =>
    [...document.querySelectorAll('#messages .msg-body .mention')].some((s) => s.textContent === '@alice'));

  await until(alice.page, 'the mention badge on Team', (id) =>
    document.querySelector(`#room-list a[data-room="${id}"] .mention-badge [aria-hidden]`)?.textContent === '@1', team);
  await until(alice.page, 'the title counts it', () => document.title.startsWith('@1 '));
  assert.ok(alice.frames.received.some((f) => f.text.includes('\nevent:mention\n') && f.text.includes('\nsender-name:bob\n')),
    'alice’s page received a mention event');
  await shot(alice.page, 'mentions-badge.png');

  await openRoom(alice, team);
  await until(alice.page, 'the mention highlighted as hers', () =>
    [...document.querySelectorAll('#messages .msg-body .mention-me')].some((s) => s.textContent === '@alice'));
  await until(alice.page, 'the badge cleared once read', (id) => !document.querySelector(`#room-list a[data-room="${id}"] .mention-badge`), team);
  await shot(alice.page, 'mentions-highlight.png');
});

test('alice sets Mentions only: asked for notifications; a mention while hidden notifies', async () => {
  const a = alice.page;
  await showPeople(a);
  await until(a, 'the notification setting', () => !document.getElementById('notify-setting').hidden &&
    document.getElementById('notify-level').value === 'all');
  await a.selectOption('#notify-level', 'mentions');
  await until(a, 'saved', () => document.getElementById('notify-level-status').textContent === 'Mentions only.');
  assert.equal(await a.evaluate(() => window.__notes.asked), 1, 'asked once, on the change');
  await openRoom(alice, elsewhere);
  await a.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    Object.defineProperty(document, 'hidden', { value: true, configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  assert.equal((await api(bob, 'POST', `/api/rooms/${team}/messages`, { body: 'plain words' })).status, 201);
  assert.equal((await api(bob, 'POST', `/api/rooms/${team}/messages`, { body: '@alice look' })).status, 201);
  await until(a, 'a desktop notification', () => window.__notes.shown.length >= 1);
  assert.deepEqual(await a.evaluate(() => window.__notes.shown.map((n) => n.body)), ['@alice look'], 'one, for the mention only');
  assert.equal((await api(alice, 'GET', '/api/me/rooms')).data.rooms.find((e) => e.room.id === team).notifications, 'mentions');
});

test('at level none a mention shows no badge and no notification', async () => {
  const a = alice.page;
  assert.equal((await api(alice, 'PUT', `/api/rooms/${team}/notifications`, { level: 'none' })).status, 200);
  // The page learns the level from the room list, as after a reload.
  await a.reload();
  await until(a, 'the room list loaded', (id) => !!document.querySelector(`#room-list a[data-room="${id}"]`), team);
  assert.equal(await badgeOf(a, team), '', 'at none, the earlier mention does not count');
  await a.evaluate(() => {
    Notification.permission = 'granted'; // as she granted it before the reload
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    Object.defineProperty(document, 'hidden', { value: true, configurable: true });
  });
  assert.equal((await api(bob, 'POST', `/api/rooms/${team}/messages`, { body: '@alice quiet' })).status, 201);
  await until(a, 'the message reached the room list', (id) =>
    document.querySelector(`#room-list a[data-room="${id}"] .room-last`)?.textContent === 'bob: @alice quiet', team);
  assert.equal(await badgeOf(a, team), '', 'no mention badge at none');
  assert.deepEqual(await a.evaluate(() => window.__notes.shown.length), 0, 'no notification at none');
});

test('no page threw an uncaught error', () => {
  for (const p of [alice, bob]) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});
