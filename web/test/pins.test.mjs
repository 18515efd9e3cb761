// The pins test: two people in their own browser contexts. alice owns the
// room and pins a message from the toolbar's Pin action; bob, a member,
// has no Pin action, sees the "Pinned" marker appear live and the Pinned
// panel list it live, jumps to it from the panel, and sees both go when
// alice unpins. Each step waits for a page's DOM to change, bounded in
// time; none sleeps.
//
// Run from web/: node --test test/pins.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { until, api, twoInRoom, shot } from './pages.mjs';

let tmp, server, browser;
let alice, bob;
let roomId = '';
const seqs = [];

before(async () => {
  tmp = tempDir('parley-web-pins-');
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

/** untilMarked waits for p's page to mark exactly the messages want as pinned. */
function untilMarked(p, what, want) {
  return until(p.page, what, (w) => JSON.stringify([...document.querySelectorAll('#messages li.msg[data-seq]')]
    .filter((el) => !!el.querySelector('.pin-mark')).map((el) => Number(el.dataset.seq))) === JSON.stringify(w), want);
}

/** untilListed waits for p's Pinned panel to list exactly want, in order. */
function untilListed(p, what, want) {
  return until(p.page, what, (w) =>
    JSON.stringify([...document.querySelectorAll('#pins-list li')].map((el) => Number(el.dataset.seq))) === JSON.stringify(w), want);
}

test('alice (the owner) and bob (a member) share a room with two messages', async () => {
  const set = await twoInRoom(browser, server.url, { messages: ['the plan for friday', 'lunch at noon'] });
  [alice, bob] = set.people;
  roomId = set.room.id;
  seqs.push(...set.seqs);
  await until(alice.page, 'alice’s Pin action (she owns the room)', (sel) =>
    !!document.querySelector(sel + ' .msg-actions button[data-action="pin"]'), li(seqs[0]));
  await until(bob.page, 'bob’s page knows his role', () => document.querySelector('#messages').dataset.role === 'member');
  const bobs = await bob.page.evaluate(() => document.querySelectorAll('#messages .msg-actions button[data-action="pin"], #messages .msg-actions button[data-action="unpin"]').length);
  assert.equal(bobs, 0, 'a member has no Pin action');
  // bob opens the Pinned panel: nothing yet.
  await bob.page.click('#pins-button');
  await until(bob.page, 'bob’s empty Pinned panel', () =>
    !document.getElementById('pins').hidden && document.getElementById('pins-status').textContent === 'No pinned messages yet.');
});

test('alice pins from the toolbar; bob sees the marker and the panel live', async () => {
  await alice.page.focus(`${li(seqs[0])} .msg-actions button[data-action="pin"]`);
  await alice.page.keyboard.press('Enter');
  await untilMarked(alice, 'alice’s marker', [seqs[0]]);
  await until(alice.page, 'alice’s Unpin action', (sel) =>
    !!document.querySelector(sel + ' .msg-actions button[data-action="unpin"]'), li(seqs[0]));
  await untilMarked(bob, 'bob sees the marker live', [seqs[0]]);
  await until(bob.page, 'bob’s panel lists it live, pinned by alice', (s) => {
    const items = [...document.querySelectorAll('#pins-list li')];
    return items.length === 1 && Number(items[0].dataset.seq) === s && items[0].querySelector('.pin-by').textContent.startsWith('Pinned by alice');
  }, seqs[0]);
  // A second pin comes first: newest pin first.
  const r = await api(alice, 'PUT', `/api/rooms/${roomId}/messages/${seqs[1]}/pin`);
  assert.equal(r.status, 200);
  assert.ok(r.data.pinned && r.data.pinned.by, 'the answer carries the pin');
  await untilListed(bob, 'bob’s panel, newest pin first', [seqs[1], seqs[0]]);
  await shot(bob.page, 'pins-bob-panel.png');
});

test('bob jumps to a pin from the panel', async () => {
  await bob.page.click(`#pins-list li[data-seq="${seqs[0]}"] .pin-jump`);
  await until(bob.page, 'the message marked as the target', (sel) =>
    !!document.querySelector(sel + '.msg-target'), li(seqs[0]));
});

test('alice unpins; the marker and the entry go on both pages', async () => {
  await alice.page.focus(`${li(seqs[0])} .msg-actions button[data-action="unpin"]`);
  await alice.page.keyboard.press('Enter');
  await untilMarked(bob, 'bob’s marker of the first message gone', [seqs[1]]);
  await untilListed(bob, 'bob’s panel left with the second', [seqs[1]]);
  await until(alice.page, 'alice’s Pin action back', (sel) =>
    !!document.querySelector(sel + ' .msg-actions button[data-action="pin"]'), li(seqs[0]));
  // After a reload, bob's page reads the same state.
  await bob.page.reload();
  await untilMarked(bob, 'bob’s page back, the second pinned', [seqs[1]]);
  assert.deepEqual(alice.errors, []);
  assert.deepEqual(bob.errors, []);
});
