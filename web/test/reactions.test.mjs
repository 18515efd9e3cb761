// The reactions test: two people in their own browser contexts react to
// one message. bob reacts from the toolbar's React action and the emoji
// picker, by keyboard only; alice sees the chip appear live, joins it with
// a click, and each page shows the count and whether its own user is
// among those who reacted, live and after a reload. Each step waits for a
// page's DOM to change, bounded in time; none sleeps.
//
// Run from web/: node --test test/reactions.test.mjs (PARLEY_BIN may name
// a built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, api, twoInRoom, shot } from './pages.mjs';

let tmp, server, browser;
let alice, bob;
let roomId = '';
let seq = 0;

before(async () => {
  tmp = tempDir('parley-web-reactions-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'), []);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

const li = () => `#messages li[data-seq="${seq}"]`;

/** chipsOf is [emoji, count, pressed] of each reaction chip under the message. */
function chipsOf(page) {
  return page.evaluate((sel) => [...document.querySelectorAll(sel + ' .msg-reactions .reaction')].map((b) => [
    b.dataset.emoji, Number(b.querySelector('.reaction-count').textContent), b.getAttribute('aria-pressed') === 'true',
  ]), li());
}

/** untilChips waits for p's page to show exactly want under the message. */
function untilChips(p, what, want) {
  return until(p.page, what, ([sel, w]) => JSON.stringify([...document.querySelectorAll(sel + ' .msg-reactions .reaction')].map((b) => [
    b.dataset.emoji, Number(b.querySelector('.reaction-count').textContent), b.getAttribute('aria-pressed') === 'true',
  ])) === JSON.stringify(w), [li(), want]);
}

test('alice and bob share a room with one message', async () => {
  const set = await twoInRoom(browser, server.url, {
    people: [{ name: 'alice' }, { name: 'bob', viewport: { width: 390, height: 780 } }], messages: ['react to this'],
  });
  [alice, bob] = set.people;
  roomId = set.room.id;
  [seq] = set.seqs;
  await until(bob.page, 'the message on bob’s page', (sel) => !!document.querySelector(sel), li());
  await until(alice.page, 'the message on alice’s page', (sel) => !!document.querySelector(sel), li());
  assert.deepEqual(await chipsOf(alice.page), [], 'no reactions yet');
});

test('bob reacts by keyboard from the toolbar; alice sees it live', async () => {
  // The toolbar's React action, focused and pressed with the keyboard.
  await bob.page.focus(`${li()} .msg-actions button[data-action="react"]`);
  await bob.page.keyboard.press('Enter');
  await until(bob.page, 'the picker open, its first emoji focused', () =>
    !!document.querySelector('.emoji-picker') && document.activeElement?.classList.contains('emoji-choice'));
  await bob.page.keyboard.press('ArrowRight');
  const picked = await bob.page.evaluate(() => document.activeElement.dataset.emoji);
  assert.equal(picked, '❤️');
  await bob.page.keyboard.press('Enter');
  await until(bob.page, 'the picker closed', () => !document.querySelector('.emoji-picker'));
  await untilChips(bob, 'bob’s ❤️, pressed', [['❤️', 1, true]]);
  await untilChips(alice, 'alice sees bob’s ❤️ live, not hers', [['❤️', 1, false]]);
  await shot(bob.page, 'reactions-bob.png');
});

test('alice joins with a click; bob takes his back; both pages agree, live and after a reload', async () => {
  await alice.page.click(`${li()} .reaction[data-emoji="❤️"]`);
  await untilChips(alice, 'alice’s click counts', [['❤️', 2, true]]);
  await untilChips(bob, 'bob sees 2, his still pressed', [['❤️', 2, true]]);
  // Who reacted: one call, shown when the chip is looked at.
  await alice.page.hover(`${li()} .reaction[data-emoji="❤️"]`);
  await until(alice.page, 'who reacted, in the chip’s title', (sel) =>
    document.querySelector(sel + ' .reaction')?.title === '❤️ by bob, alice', li());

  await bob.page.click(`${li()} .reaction[data-emoji="❤️"]`);
  await untilChips(bob, 'bob’s taken back', [['❤️', 1, false]]);
  await untilChips(alice, 'alice’s left', [['❤️', 1, true]]);

  await bob.page.reload();
  await until(bob.page, 'bob’s page back', (sel) => !!document.querySelector(sel), li());
  await untilChips(bob, 'bob after a reload', [['❤️', 1, false]]);
  await alice.page.reload();
  await until(alice.page, 'alice’s page back', (sel) => !!document.querySelector(sel), li());
  await untilChips(alice, 'alice after a reload', [['❤️', 1, true]]);
  const r = await api(alice, 'GET', `/api/rooms/${roomId}/messages`);
  assert.deepEqual(r.data.messages[0].reactions, [{ emoji: '❤️', count: 1, me: true }]);
  assert.deepEqual(alice.errors, []);
  assert.deepEqual(bob.errors, []);
});
