// The threads test: two people in their own browser contexts. bob replies
// to alice's message from the toolbar (by keyboard), with the quote above
// the composer; both pages show the reply's quote and, under the root,
// its reply count, live. alice opens the thread in the panel beside the
// timeline, replies there with its own composer, and sees bob's reaction
// on her reply live in the panel. An edit of the root shows in the
// quotes. Each step waits for a page's DOM to change, bounded in time;
// none sleeps.
//
// Run from web/: node --test test/threads.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, api, twoInRoom, shot } from './pages.mjs';

let tmp, server, browser;
let alice, bob;
let roomId = '';
let root = 0;

before(async () => {
  tmp = tempDir('parley-web-threads-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'), []);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

const li = (seq) => `#messages li[data-seq="${seq}"]`;

/** replyCount is the "N replies" under the root on a page ('' for none). */
function untilReplies(p, what, n) {
  return until(p.page, what, ([sel, want]) => document.querySelector(sel + ' .msg-thread')?.dataset.replies === want, [li(root), String(n)]);
}

test('alice and bob share a room; alice asks a question', async () => {
  const set = await twoInRoom(browser, server.url, { messages: ['lunch on friday?'] });
  [alice, bob] = set.people;
  roomId = set.room.id;
  [root] = set.seqs;
  await until(bob.page, 'the question on bob’s page', (sel) => !!document.querySelector(sel), li(root));
});

test('bob replies from the toolbar by keyboard; both pages show the quote and the count', async () => {
  await bob.page.focus(`${li(root)} .msg-actions button[data-action="reply"]`);
  await bob.page.keyboard.press('Enter');
  await until(bob.page, 'the quote above the composer, the composer focused', () =>
    !document.getElementById('reply-bar').hidden && document.activeElement?.id === 'composer-input' &&
    document.getElementById('reply-quote').textContent === 'Replying to alice: lunch on friday?');
  await bob.page.keyboard.type('yes, noon');
  await bob.page.keyboard.press('Enter');
  await until(bob.page, 'the quote gone once sent', () => document.getElementById('reply-bar').hidden);
  const quoted = ([sel]) => [...document.querySelectorAll('#messages li[data-seq]')].some((e) =>
    e.querySelector('.msg-body')?.textContent === 'yes, noon' && e.querySelector('.msg-quote')?.textContent === 'alice: ' + sel);
  await until(bob.page, 'bob’s reply with its quote', quoted, ['lunch on friday?']);
  await until(alice.page, 'bob’s reply on alice’s page, quoted', quoted, ['lunch on friday?']);
  await untilReplies(alice, 'alice sees 1 reply under her question, live', 1);
  await untilReplies(bob, 'bob sees 1 reply', 1);
});

test('alice opens the thread, replies there; bob’s reaction on it shows live in her panel', async () => {
  await alice.page.click(`${li(root)} .msg-thread`);
  await until(alice.page, 'the thread panel with the root and bob’s reply', () =>
    !document.getElementById('thread').hidden &&
    [...document.querySelectorAll('#thread-list li .msg-body')].map((b) => b.textContent).join('|') === 'lunch on friday?|yes, noon');
  await until(alice.page, 'the thread composer focused', () => document.activeElement?.id === 'thread-input');
  await alice.page.keyboard.type('great, see you');
  await alice.page.keyboard.press('Enter');
  await until(alice.page, 'alice’s reply in the panel', () =>
    [...document.querySelectorAll('#thread-list li .msg-body')].map((b) => b.textContent).join('|') === 'lunch on friday?|yes, noon|great, see you');
  await untilReplies(bob, 'bob sees 2 replies', 2);
  await untilReplies(alice, 'alice sees 2 replies', 2);

  // bob reacts to alice's reply (in his timeline, from the chip-less
  // message: the toolbar's React and the picker).
  const seq = await bob.page.evaluate(() => Number([...document.querySelectorAll('#messages li[data-seq]')].find((e) =>
    e.querySelector('.msg-body')?.textContent === 'great, see you').dataset.seq));
  await until(bob.page, 'alice’s reply on bob’s page', (sel) => !!document.querySelector(sel + ' .msg-actions button[data-action="react"]'), li(seq));
  await bob.page.click(`${li(seq)} .msg-actions button[data-action="react"]`);
  await bob.page.click('.emoji-picker button[data-emoji="👍"]');
  await until(alice.page, 'bob’s 👍 on alice’s reply, live in her thread panel', (s) =>
    document.querySelector(`#thread-list li[data-seq="${s}"] .reaction[data-emoji="👍"] .reaction-count`)?.textContent === '1', seq);
  await shot(alice.page, 'threads-alice.png');
});

test('the root’s edit shows in the quotes; the thread reads the same from the server', async () => {
  const r = await api(alice, 'PATCH', `/api/rooms/${roomId}/messages/${root}`, { body: 'lunch on saturday?' });
  assert.equal(r.status, 200);
  await until(bob.page, 'bob’s quote follows the edit', () => [...document.querySelectorAll('#messages .msg-quote')].some((q) =>
    q.textContent === 'alice: lunch on saturday?'));
  const page = await api(bob, 'GET', `/api/rooms/${roomId}/messages/${root}/replies`);
  assert.deepEqual(page.data.messages.map((m) => [m.body, m.reply_to.excerpt]), [['yes, noon', 'lunch on saturday?'], ['great, see you', 'lunch on saturday?']]);
  await bob.page.reload();
  await until(bob.page, 'after a reload', (sel) => document.querySelector(sel + ' .msg-thread')?.dataset.replies === '2', li(root));
  assert.deepEqual(alice.errors, []);
  assert.deepEqual(bob.errors, []);
});
