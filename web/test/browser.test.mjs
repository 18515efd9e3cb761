// The browser test: Parley's page in headless Chromium, as people use it.
// alice (desktop width, reaching the server through a proxy that can cut
// her network) and bob (phone width) sign up, create and join a room, chat
// live, read and reload; the test cuts alice's network, restarts the server
// and checks that nothing is missed. Screenshots go to web/test-output/.
//
// Run from the repository root: node --test web/test/ (PARLEY_BIN may name
// a built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, Proxy, launchBrowser, parleyBinary, tempDir, outDir } from './harness.mjs';

const xss = '<img src=x onerror=alert(1)>';
const roomTitle = 'Lunch <b>plans</b> & "more"';
const password = 'correct horse battery';

let tmp, server, proxy, browser;
const ctx = {}; // name -> {page, base, dialogs}
let roomId = '';
let inviteLink = '';
// shown is the conversation as both sides saw it after the concurrent sends:
// which of two racing messages commits first is up to the server.
let shown = [];

before(async () => {
  tmp = tempDir('parley-web-test-');
  const bin = parleyBinary(tmp.dir);
  server = new Server(bin, join(tmp.dir, 'data'));
  await server.start();
  proxy = new Proxy(Number(server.addr.split(':').pop()));
  await proxy.listen();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (proxy) await proxy.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

/** open makes a browser context (its own storage) for one person. */
async function open(name, base, viewport) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const dialogs = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Every STOMP frame, to check the protocol under the page.
  const frames = { sent: [], received: [] };
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => frames.sent.push(String(f.payload)));
    ws.on('framereceived', (f) => frames.received.push(String(f.payload)));
  });
  // Count the "sending…" placeholders the page shows.
  await page.addInitScript(() => {
    window.__pending = 0;
    document.addEventListener('DOMContentLoaded', () => {
      new MutationObserver((muts) => {
        for (const m of muts) {
          for (const n of m.addedNodes) {
            if (n.classList && n.classList.contains('pending') && n.textContent.includes('sending…')) window.__pending++;
          }
        }
      }).observe(document.getElementById('messages'), { childList: true });
    });
  });
  ctx[name] = { page, base, dialogs, frames, errors };
  return ctx[name];
}

/** until waits for fn(arg) to hold in the page; on timeout it says what and shows the page text. */
async function until(page, what, fn, arg, timeout = 15000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    const text = await page.evaluate(() => document.body.innerText).catch(() => '(page gone)');
    throw new Error(`${what}: ${e.message.split('\n')[0]}\n--- page text ---\n${text}`);
  }
}

function waitLive(page) {
  return until(page, 'connection live', () => document.getElementById('conn').dataset.state === 'live', null, 30000);
}

/** bodies are the confirmed messages shown, in order. */
function bodies(page) {
  return page.evaluate(() => [...document.querySelectorAll('#messages li[data-seq]')]
    .map((li) => li.querySelector('.msg-body').textContent));
}

async function waitBodies(page, want, timeout = 20000) {
  try {
    await page.waitForFunction((w) => {
      const got = [...document.querySelectorAll('#messages li[data-seq]')].map((li) => li.querySelector('.msg-body').textContent);
      return JSON.stringify(got) === JSON.stringify(w) && !document.querySelector('#messages li.pending');
    }, want, { timeout, polling: 100 });
  } catch (e) {
    assert.deepEqual(await bodies(page), want, 'messages shown');
    throw e;
  }
}

async function say(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

function token(page) {
  return page.evaluate(() => localStorage.getItem('parley.token'));
}

/** api calls the REST API as page's user; a 429 (the server's limit on each
 * user's sends) is waited out as its Retry-After says, as a client should. */
async function api(page, method, path, body) {
  let res;
  for (let attempt = 0; ; attempt++) {
    res = await fetch(server.url + path, {
      method,
      headers: { Authorization: 'Bearer ' + (await token(page)), 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status !== 429 || attempt === 10) break;
    await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('Retry-After') || 1)));
  }
  const data = res.status === 204 ? null : await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

async function signUp(p, name) {
  await p.page.goto(p.base + '/');
  await p.page.fill('#auth-name', name);
  await p.page.fill('#auth-password', password);
  await p.page.click('button[value=signup]');
  await p.page.waitForSelector('#chat-app:not([hidden])');
  await waitLive(p.page);
}

function badge(page, id) {
  return page.evaluate((id) => {
    const b = document.querySelector(`#room-list a[data-room="${id}"] .badge [aria-hidden]`);
    return b ? b.textContent : '';
  }, id);
}

/** newConversation opens the "New conversation" panel. */
async function newConversation(page) {
  if (!(await page.evaluate(() => document.getElementById('new-room').open))) await page.click('#new-room summary');
}

async function shot(page, name) {
  await page.screenshot({ path: join(outDir, name), fullPage: false });
}

test('two people sign up in their own browsers', async () => {
  const alice = await open('alice', proxy.url, { width: 1200, height: 800 });
  const bob = await open('bob', server.url, { width: 390, height: 780 });
  await signUp(alice, 'alice');
  await signUp(bob, 'bob');
  assert.equal(await alice.page.textContent('#me-name'), 'alice');
  assert.equal(await bob.page.textContent('#me-name'), 'bob');
});

test('alice creates a group room with two seats and an invite link', async () => {
  const { page } = ctx.alice;
  await newConversation(page);
  await page.fill('#group-title', roomTitle);
  await page.fill('#group-capacity', '2');
  await page.click('#group-form button[type=submit]');
  await until(page, 'room open', () => /^#\/room\//.test(location.hash) && !document.getElementById('chat-view').hidden);
  roomId = decodeURIComponent(await page.evaluate(() => location.hash.split('/')[2]));
  assert.equal(await page.textContent('#chat-title'), roomTitle, 'the title shows as text');
  await until(page, 'member count', () => document.getElementById('chat-members').textContent === '1 of 2 seats taken');
  await page.click('#invite-button');
  inviteLink = await page.inputValue('#invite-link');
  assert.match(inviteLink, /#\/join\//);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(proxy.url).origin });
  await page.click('#invite-copy');
  await until(page, 'Copied', () => document.getElementById('invite-copy').textContent === 'Copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), inviteLink, 'the link is on the clipboard');
});

test('bob joins by the link; the room is then full for carol', async () => {
  const { page } = ctx.bob;
  await newConversation(page);
  await page.fill('#join-link', inviteLink);
  await page.click('#join-form button[type=submit]');
  await until(page, 'join preview', () => !document.getElementById('join-view').hidden && !document.getElementById('join-button').hidden);
  assert.equal(await page.textContent('#join-title'), `Join “${roomTitle}”`);
  await page.click('#join-button');
  await until(page, 'room open after join', (id) => location.hash === '#/room/' + id && !document.getElementById('chat-view').hidden, roomId);
  await until(page, 'member count', () => document.getElementById('chat-members').textContent === '2 of 2 seats taken');
  await waitLive(page);

  const carol = await open('carol', server.url, { width: 1000, height: 700 });
  // A refused sign-up says why, as text.
  await carol.page.goto(server.url + '/');
  await carol.page.fill('#auth-name', '<b>carol</b>');
  await carol.page.fill('#auth-password', password);
  await carol.page.click('button[value=signup]');
  await until(carol.page, 'sign-up refused', () => /^name must be/.test(document.getElementById('auth-error').textContent));
  assert.equal(await carol.page.evaluate(() => document.querySelectorAll('b').length), 0);
  await signUp(carol, 'carol');
  await carol.page.goto(server.url + '/#/join/' + roomId);
  await until(carol.page, 'join preview', () => !document.getElementById('join-button').hidden);
  // A full room says so before any click, and offers no Join.
  await until(carol.page, 'room full message', () => document.getElementById('join-error').textContent === 'This room is full: all 2 seats are taken.');
  assert.equal(await carol.page.isDisabled('#join-button'), true, 'Join room is disabled on a full room');
  await shot(carol.page, 'join-room-full.png');
  await carol.page.context().close();
});

test('messages arrive live and in the same order on both sides, after "sending…"', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  await until(a, 'alice in the room', (id) => location.hash === '#/room/' + id, roomId);
  await say(a, 'hello bob');
  await waitBodies(b, ['hello bob']);
  await say(b, 'hi alice');
  await waitBodies(a, ['hello bob', 'hi alice']);
  for (const n of [1, 2, 3]) await say(a, `quick ${n}`);
  await say(b, 'and me');
  // bob's message races alice's last ones, so either may commit first; both
  // sides must show the same order, and alice's messages keep hers.
  const settled = (page) => until(page, 'six confirmed messages', () => document.querySelectorAll('#messages li[data-seq]').length === 6 &&
    !document.querySelector('#messages li.pending'));
  await settled(a);
  await settled(b);
  shown = await bodies(a);
  assert.deepEqual(await bodies(b), shown, 'both sides show the same order');
  assert.deepEqual(shown.slice(0, 2), ['hello bob', 'hi alice']);
  assert.deepEqual(shown.filter((t) => t.startsWith('quick')), ['quick 1', 'quick 2', 'quick 3'], "alice's messages in the order she sent them");
  assert.deepEqual([...shown].sort(), ['and me', 'hello bob', 'hi alice', 'quick 1', 'quick 2', 'quick 3']);
  assert.ok(await a.evaluate(() => window.__pending) >= 4, 'alice saw "sending…" for each of her messages');
  // The sender names and seq order agree.
  const seqs = await a.evaluate(() => [...document.querySelectorAll('#messages li[data-seq]')].map((li) => Number(li.dataset.seq)));
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
});

test('a message with markup shows as text', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  await say(b, xss);
  const want = [...shown, xss];
  await waitBodies(a, want);
  await waitBodies(b, want);
  for (const p of [a, b]) {
    assert.equal(await p.evaluate(() => document.querySelectorAll('#messages img, #room-list img').length), 0, 'no img element');
  }
  assert.equal(await a.evaluate((id) => document.querySelector(`#room-list a[data-room="${id}"] .room-last`).textContent, roomId), 'bob: ' + xss);
  assert.deepEqual(ctx.alice.dialogs, []);
  assert.deepEqual(ctx.bob.dialogs, []);
  // A sender's consecutive messages share one name and time: each run of
  // one sender shows its header once.
  const runs = await a.evaluate(() => [...document.querySelectorAll('#messages li[data-seq]')].map((li) => ({
    sender: li.dataset.sender, cont: li.classList.contains('cont'),
    meta: li.querySelector('.msg-meta').checkVisibility(),
  })));
  runs.forEach((r, i) => {
    const continues = i > 0 && runs[i - 1].sender === r.sender;
    assert.equal(r.cont, continues, `message ${i + 1} continues the one before: ${continues}`);
    assert.equal(r.meta, !continues, `message ${i + 1} shows its name and time: ${!continues}`);
  });
  assert.ok(runs.some((r) => r.cont), 'some messages are grouped');
  await shot(a, 'chat-desktop.png');
  await shot(b, 'chat-phone.png');
});

test('the room list shows unread messages, newest activity first, and clears when read', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  // alice moves to another room of her own.
  await newConversation(a);
  await a.fill('#group-title', 'Quiet corner');
  await a.click('#group-form button[type=submit]');
  await until(a, 'second room open', (id) => /^#\/room\//.test(location.hash) && location.hash !== '#/room/' + id, roomId);
  await until(a, 'second room on top', (id) => document.querySelector('#room-list a').dataset.room !== id, roomId);

  await say(b, 'are you there?');
  await say(b, 'lunch at noon');
  await until(a, 'badge 2', (id) => {
    const el = document.querySelector(`#room-list a[data-room="${id}"] .badge [aria-hidden]`);
    return el && el.textContent === '2';
  }, roomId);
  assert.equal(await a.evaluate(() => document.querySelector('#room-list a').dataset.room), roomId, 'the busy room is on top');
  assert.equal(await a.evaluate((id) => document.querySelector(`#room-list a[data-room="${id}"] .room-last`).textContent, roomId), 'bob: lunch at noon');
  assert.equal(await a.title(), '(2) Parley', 'the unread count in the tab title');
  await shot(a, 'room-list-desktop.png');

  await a.click(`#room-list a[data-room="${roomId}"]`);
  await waitBodies(a, [...shown, xss, 'are you there?', 'lunch at noon']);
  await until(a, 'badge cleared', (id) => !document.querySelector(`#room-list a[data-room="${id}"] .badge`), roomId);
  await until(a, 'title without unread', () => document.title === 'Parley');
  // The read position reaches the server (PUT .../read): a fresh room list agrees.
  let unread = -1;
  for (let i = 0; i < 50 && unread !== 0; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100));
    unread = (await api(a, 'GET', '/api/me/rooms')).rooms.find((e) => e.room.id === roomId).unread;
  }
  assert.equal(unread, 0, 'unread on the server');

  // bob's list, on the phone: his own messages are not unread.
  await b.evaluate(() => { location.hash = '#/'; });
  await until(b, 'bob sees the list', () => !document.getElementById('sidebar').checkVisibility || document.getElementById('sidebar').checkVisibility());
  assert.equal(await badge(b, roomId), '');
  await shot(b, 'room-list-phone.png');
  await b.click(`#room-list a[data-room="${roomId}"]`);
  await until(b, 'bob back in the room', () => !document.getElementById('chat-view').hidden);
});

test('links in messages can be clicked, and open apart from the chat', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  const before = await bodies(a);
  const text = 'menu at https://example.com/lunch?day=1, ok';
  await say(b, text);
  await waitBodies(a, [...before, text]);
  const link = await a.evaluate(() => {
    const el = [...document.querySelectorAll('#messages li[data-seq] .msg-body a')].pop();
    return el && { href: el.getAttribute('href'), text: el.textContent, target: el.target, rel: el.rel };
  });
  assert.deepEqual(link, { href: 'https://example.com/lunch?day=1', text: 'https://example.com/lunch?day=1', target: '_blank', rel: 'noopener noreferrer nofollow' });
  assert.equal(await a.evaluate(() => document.querySelectorAll('#messages a[href^="javascript"]').length), 0);
});

test('a reload keeps the session and the conversation', async () => {
  const b = ctx.bob.page;
  const want = await bodies(b);
  await b.reload();
  await waitLive(b);
  await waitBodies(b, want);
  assert.equal(await b.textContent('#chat-title'), roomTitle);
});

/** header returns a STOMP frame's header value. */
function header(frame, name) {
  const m = new RegExp('^' + name + ':(.*)$', 'm').exec(frame.split('\n\n')[0]);
  return m ? m[1] : null;
}

test('after a network drop alice resumes with since-seq; her sends go through once', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  const before = await bodies(a);
  const lastSeq = await a.evaluate(() => Math.max(...[...document.querySelectorAll('#messages li[data-seq]')].map((li) => Number(li.dataset.seq))));
  // The first message may or may not reach the server before the cut: it
  // is resent with its client-id either way, and stored once.
  await say(a, 'sent as the network drops');
  await proxy.drop();
  const cutAt = ctx.alice.frames.sent.length;
  await until(a, 'alice sees the drop', () => document.getElementById('conn').dataset.state === 'reconnecting');
  await say(a, 'typed while offline');
  await until(a, 'sending… while offline', () => {
    const li = document.querySelector('#messages li.pending:last-child');
    return li && li.textContent.includes('typed while offline') && li.textContent.includes('sending…');
  });
  await say(b, 'missed 1');
  await say(b, 'missed 2');
  await until(b, 'bob sees his messages', () => [...document.querySelectorAll('#messages li[data-seq] .msg-body')]
    .some((e) => e.textContent === 'missed 2'));
  await new Promise((r) => setTimeout(r, 1000)); // stay offline a while
  await proxy.restore();
  await waitLive(a);
  await until(a, 'everything arrived', () => !document.querySelector('#messages li.pending') &&
    [...document.querySelectorAll('#messages li[data-seq] .msg-body')].some((e) => e.textContent === 'typed while offline'), null, 20000);
  const got = await bodies(a);
  const early = got.indexOf('sent as the network drops') < got.indexOf('missed 1');
  const want = early
    ? [...before, 'sent as the network drops', 'missed 1', 'missed 2', 'typed while offline']
    : [...before, 'missed 1', 'missed 2', 'sent as the network drops', 'typed while offline'];
  await waitBodies(a, want);
  await waitBodies(b, want);

  // Under the page: the room was subscribed again with since-seq, and the
  // missed messages came on that subscription (not from a history fetch).
  const resub = ctx.alice.frames.sent.slice(cutAt).find((f) => f.startsWith('SUBSCRIBE\n') && header(f, 'destination') === '/topic/rooms.' + roomId);
  assert.ok(resub, 'a new SUBSCRIBE to the room after the drop');
  const since = Number(header(resub, 'since-seq'));
  assert.ok(since >= lastSeq && since <= lastSeq + 1, `since-seq ${since}, want the last seq shown (${lastSeq}, or ${lastSeq + 1} if the first send was stored)`);
  const missed = ctx.alice.frames.received.filter((f) => f.startsWith('MESSAGE\n') && f.includes('\n\nmissed 1\0'));
  assert.ok(missed.some((f) => header(f, 'destination') === '/topic/rooms.' + roomId), 'missed 1 arrived on the room subscription');
  // Each of alice's messages was sent with one client-id, however often.
  for (const body of ['sent as the network drops', 'typed while offline']) {
    const sends = ctx.alice.frames.sent.filter((f) => f.startsWith('SEND\n') && f.endsWith('\n\n' + body + '\0'));
    assert.ok(sends.length >= 1, `SEND of ${body}`);
    assert.equal(new Set(sends.map((f) => header(f, 'client-id'))).size, 1, `one client-id for ${body}`);
    assert.ok(sends.every((f) => header(f, 'receipt')), `every SEND of ${body} asks for a receipt`);
  }
});

test('after a server restart both reconnect and see messages sent meanwhile', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  const before = await bodies(a);
  const bobToken = await token(b);
  await server.stop(); // SIGTERM: the server closes every WebSocket with an ERROR
  await until(a, 'alice sees the close', () => document.getElementById('conn').dataset.state !== 'live');
  await until(b, 'bob sees the close', () => document.getElementById('conn').dataset.state !== 'live');
  await server.start(); // same port, same data
  // Sent the moment the server is back, before or after the pages reconnect.
  const res = await fetch(server.url + `/api/rooms/${roomId}/messages`, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + bobToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ body: 'sent during the restart' }),
  });
  assert.equal(res.status, 201);
  await waitLive(a);
  await waitLive(b);
  await say(a, 'back again');
  const want = [...before, 'sent during the restart', 'back again'];
  await waitBodies(a, want);
  await waitBodies(b, want);
});

test('an over-long message is stopped before it is sent, with a counter near the limit', async () => {
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  const before = await bodies(a);
  const sentBefore = ctx.alice.frames.sent.length;
  await a.fill('#composer-input', 'é'.repeat(1900)); // 3800 bytes of the server's 4096
  await until(a, 'counter near the limit', () => document.getElementById('composer-count').textContent === '296 bytes left');
  await say(a, 'x'.repeat(5000)); // over the limit
  await until(a, 'counter over the limit', () => document.getElementById('composer-count').textContent === '904 bytes too long (the limit is 4096)');
  assert.equal(await a.isDisabled('#composer button[type=submit]'), true, 'Send is disabled');
  await shot(a, 'send-too-long.png');
  assert.equal(await a.inputValue('#composer-input'), 'x'.repeat(5000), 'the text stays to be shortened');
  assert.ok(!ctx.alice.frames.sent.slice(sentBefore).some((f) => f.startsWith('SEND\n')), 'no SEND went out');
  assert.equal(await a.evaluate(() => document.querySelectorAll('#messages li.pending, #messages li.failed').length), 0);
  assert.equal(await a.evaluate(() => document.getElementById('conn').dataset.state), 'live', 'no reconnect');
  await a.fill('#composer-input', '');
  await say(a, 'a short one');
  assert.equal(await a.evaluate(() => document.getElementById('composer-count').hidden), true, 'no counter far from the limit');
  await waitBodies(a, [...before, 'a short one']);
  await waitBodies(b, [...before, 'a short one']);
});

test('older history loads when scrolling up', async () => {
  const a = ctx.alice.page;
  const room = await api(a, 'POST', '/api/rooms', { kind: 'group', title: 'Archive' });
  for (let i = 1; i <= 70; i++) await api(a, 'POST', `/api/rooms/${room.id}/messages`, { body: `old ${i}` });
  await a.evaluate((id) => { location.hash = '#/room/' + id; }, room.id);
  const all = Array.from({ length: 70 }, (_, i) => `old ${i + 1}`);
  await waitBodies(a, all.slice(20));
  await a.evaluate(() => { document.getElementById('messages-scroll').scrollTop = 0; });
  await waitBodies(a, all);
  await until(a, 'start of the conversation', () => document.getElementById('history-status').textContent === 'This is the start of the conversation.');
});

test('a 1:1 chat starts from a user name', async (t) => {
  const probe = await fetch(server.url + '/api/users/bob', { headers: { Authorization: 'Bearer ' + (await token(ctx.alice.page)) } });
  if (probe.status === 404 && /no such route/.test(await probe.text())) {
    t.skip('GET /api/users/{name} is not served yet');
    return;
  }
  const a = ctx.alice.page;
  const b = ctx.bob.page;
  await newConversation(a);
  await a.fill('#direct-name', 'bob');
  await a.click('#direct-form button[type=submit]');
  await until(a, 'direct room open', () => !document.getElementById('chat-view').hidden && document.getElementById('chat-members').textContent === 'Direct chat');
  assert.equal(await a.textContent('#chat-title'), 'bob');
  await waitLive(a);
  await say(a, 'just between us');
  await waitBodies(a, ['just between us']);
  const directId = decodeURIComponent(await a.evaluate(() => location.hash.split('/')[2]));
  await b.evaluate(() => { location.hash = '#/'; });
  await until(b, 'the new room in bob\'s list with a badge', (id) => {
    const el = document.querySelector(`#room-list a[data-room="${id}"]`);
    return el && el.querySelector('.room-title').textContent === 'alice' && el.querySelector('.badge [aria-hidden]')?.textContent === '1';
  }, directId);
  await shot(b, 'room-list-phone-unread.png');
});

/** signInShown waits until the page asks to sign in (both views start hidden, so this is the page's decision). */
function signInShown(page, what) {
  return until(page, what, () => !document.getElementById('auth').hidden && document.getElementById('chat-app').hidden);
}

async function meStatus(tok) {
  return (await fetch(server.url + '/api/me', { headers: { Authorization: 'Bearer ' + tok } })).status;
}

test('a session revoked elsewhere ends on the page', async () => {
  const b = ctx.bob.page;
  await waitLive(b);
  const old = await token(b);
  await api(b, 'DELETE', '/api/tokens'); // "log out everywhere", as from another device
  await signInShown(b, 'bob is asked to sign in');
  assert.match(await b.textContent('#auth-error'), /revoked/);
  assert.equal(await token(b), null, 'the page forgot the token');
  assert.equal(await meStatus(old), 401);
});

test('logging out with a room open forgets the token, and the server refuses it', async () => {
  const a = ctx.alice.page;
  await until(a, 'a room is open', () => !document.getElementById('chat-view').hidden);
  await waitLive(a);
  const old = await token(a);
  const revoked = a.waitForResponse((r) => r.request().method() === 'DELETE' && new URL(r.url()).pathname === '/api/tokens/current');
  await a.click('#logout');
  assert.equal((await revoked).status(), 204, 'DELETE /api/tokens/current');
  await signInShown(a, 'alice is asked to sign in');
  assert.equal(await token(a), null, 'the page forgot the token');
  assert.equal(await meStatus(old), 401, 'the old token is refused');
  await a.reload();
  await signInShown(a, 'after a reload alice is still asked to sign in');
  assert.equal(await token(a), null);
});

test('a new visitor who presses Enter in the password field is told about Sign up', async () => {
  const dave = await open('dave', server.url, { width: 1000, height: 700 });
  await dave.page.goto(server.url + '/');
  await dave.page.fill('#auth-name', 'dave');
  await dave.page.fill('#auth-password', password);
  await dave.page.press('#auth-password', 'Enter');
  await until(dave.page, 'the sign-up hint', () => /New here\? Choose “Sign up” to create the account “dave”\./.test(document.getElementById('auth-error').textContent));
  await dave.page.click('button[value=signup]');
  await dave.page.waitForSelector('#chat-app:not([hidden])');
  await dave.page.context().close();
});

test('no page threw an uncaught error', () => {
  for (const [name, c] of Object.entries(ctx)) assert.deepEqual(c.errors, [], `${name}'s page errors`);
});
