// The chat test (issue 32, and the Markdown of issue 31): the page as a
// chat app, two people on one server. alice is on a 1280×800 desktop, bob
// on a 375 px phone in the dark colour scheme. It checks the timeline
// (avatars, groups, the day and "New messages" lines, times, ≥ 20 short
// messages on the screen), the message toolbar (hover, keyboard, touch),
// edit by Up and Escape, the confirmation dialog, the panels beside the
// timeline (full screen with Back on the phone), Ctrl+K, desktop
// notifications, hostile Markdown, and "1 member". Every step waits for
// the page's DOM; none sleeps.
//
// Screenshots go to $PARLEY_WEB_SHOTS (default: a new temporary
// directory, printed at the end).
//
// Run from web/: node --test test/chat.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { person, until, waitLive, signUp, say, api, openRoom, showPeople, hidePanel, confirmDialog } from './pages.mjs';

const shotDir = process.env.PARLEY_WEB_SHOTS || mkdtempSync(join(tmpdir(), 'parley-web-shots-'));
mkdirSync(shotDir, { recursive: true });

let tmp, server, browser;
let alice, bob, carol;
let roomId = '';
const everyone = [];

before(async () => {
  tmp = tempDir('parley-web-chat-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'), ['--rest-send-rate', '0']);
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
  console.log('# screenshots in ' + shotDir);
});

function shot(p, name) {
  return p.page.screenshot({ path: join(shotDir, name), fullPage: false });
}

const li = (seq) => `#messages li[data-seq="${seq}"]`;

async function post(p, room, body) {
  const r = await api(p, 'POST', `/api/rooms/${room}/messages`, { body });
  assert.equal(r.status, 201, JSON.stringify(r.data));
  return r.data.seq;
}

/** A stand-in for the Notification API that records what the page does with it. */
function fakeNotifications() {
  window.__notes = { asked: 0, shown: [] };
  class FakeNotification {
    constructor(title, opts) {
      window.__notes.shown.push({ title, body: opts && opts.body, tag: opts && opts.tag });
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

test('alice and bob sign up; bob joins a room that says "1 member"', async () => {
  alice = await person(browser, 'alice', server.url, { width: 1280, height: 800 });
  bob = await person(browser, 'bob', server.url, { width: 375, height: 740 });
  await bob.context.close();
  // bob's phone is in the dark colour scheme and has a touch screen.
  const context = await browser.newContext({ viewport: { width: 375, height: 740 }, colorScheme: 'dark', hasTouch: true });
  bob = { ...bob, context, page: await context.newPage(), errors: [] };
  bob.page.on('pageerror', (e) => bob.errors.push(e.message));
  for (const p of [alice, bob]) await p.page.addInitScript(fakeNotifications);
  everyone.push(alice, bob);
  await signUp(alice);
  await signUp(bob);
  const created = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'History of the harbour' });
  roomId = created.data.id;
  await bob.page.goto(server.url + '/#/join/' + roomId);
  await until(bob.page, 'join preview', () => !document.getElementById('join-button').hidden);
  assert.equal(await bob.page.textContent('#join-info'), '1 member');
  await bob.page.click('#join-button');
  await until(bob.page, 'bob in the room', (id) => location.hash === '#/room/' + id && !document.getElementById('chat-view').hidden, roomId);
  assert.equal(await alice.page.evaluate(() => window.__notes.asked), 0, 'no notification permission asked on load');
});

test('a long conversation: grouped under names and avatars, a day line, times with the full date, ≥ 20 on screen', async () => {
  // Runs of one sender: alice 6, bob 6, alice 6, bob 6, alice 6.
  for (let run = 0; run < 5; run++) {
    const p = run % 2 ? bob : alice;
    for (let i = 1; i <= 6; i++) await post(p, roomId, `${p.name} line ${run * 6 + i}`);
  }
  await openRoom(alice, roomId);
  await until(alice.page, '30 messages', () => document.querySelectorAll('#messages li[data-seq]').length === 30);
  const rows = await alice.page.evaluate(() => [...document.querySelectorAll('#messages li[data-seq]')].map((el) => ({
    cont: el.classList.contains('cont'),
    avatar: el.querySelector('.msg-avatar').checkVisibility() ? el.querySelector('.msg-avatar').textContent : '',
    avatarClass: [...el.querySelector('.msg-avatar').classList].find((c) => c.startsWith('av-')),
    name: el.querySelector('.msg-meta').checkVisibility() ? el.querySelector('.msg-sender').textContent : '',
    day: el.querySelector(':scope > .day-sep')?.textContent || '',
    time: el.querySelector('.msg-time').textContent,
    title: el.querySelector('.msg-time').title,
  })));
  rows.forEach((r, i) => {
    const first = i % 6 === 0;
    assert.equal(r.cont, !first, `message ${i + 1} continues its group: ${!first}`);
    assert.equal(r.name, first ? (Math.floor(i / 6) % 2 ? 'bob' : 'alice') : '', `message ${i + 1}'s name`);
    assert.equal(r.avatar, first ? (Math.floor(i / 6) % 2 ? 'B' : 'A') : '', `message ${i + 1}'s avatar`);
    assert.equal(r.day, i === 0 ? 'Today' : '', `message ${i + 1}'s day line`);
    assert.equal(r.time, 'just now');
    assert.match(r.title, /\d{4}/, 'the full date on hover');
  });
  assert.notEqual(rows[0].avatarClass, rows[6].avatarClass, 'alice and bob have avatars of their own colours');
  // At least 20 short messages whole on a 1280×800 screen.
  const visible = await alice.page.evaluate(() => {
    const view = document.getElementById('messages-scroll').getBoundingClientRect();
    return [...document.querySelectorAll('#messages li[data-seq]')].filter((el) => {
      const b = el.querySelector('.msg-body').getBoundingClientRect();
      return b.top >= view.top && b.bottom <= view.bottom;
    }).length;
  });
  assert.ok(visible >= 20, `${visible} messages on the screen, want ≥ 20`);
  await shot(alice, 'timeline-desktop.png');
});

test('a message of another day gets a line with its day, which breaks a group', async () => {
  const room = (await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Old news' })).data;
  for (const t of ['one', 'two', 'three', 'four']) await post(alice, room.id, t);
  // The server stamps each message now: the page is shown a history in
  // which the first was sent three days ago and the second yesterday.
  const day = 24 * 3600 * 1000;
  const url = `**/api/rooms/${room.id}/messages?*`;
  await alice.page.route(url, async (route) => {
    const res = await route.fetch();
    const data = await res.json();
    for (const m of data.messages || []) {
      if (m.seq === 1) m.sent_at = new Date(Date.now() - 3 * day).toISOString();
      if (m.seq === 2) m.sent_at = new Date(Date.now() - day).toISOString();
    }
    await route.fulfill({ response: res, json: data });
  });
  try {
    await openRoom(alice, room.id);
    await until(alice.page, 'four messages', () => document.querySelectorAll('#messages li[data-seq]').length === 4);
    const rows = await alice.page.evaluate(() => [...document.querySelectorAll('#messages li[data-seq]')].map((el) => [
      el.querySelector(':scope > .day-sep')?.textContent || '', el.classList.contains('cont'), el.querySelector('.msg-time').textContent]));
    assert.equal(rows.length, 4);
    assert.ok(rows[0][0] && !['Today', 'Yesterday'].includes(rows[0][0]), `three days ago is named by its date: ${rows[0][0]}`);
    assert.deepEqual(rows.slice(1).map((r) => r.slice(0, 2)), [['Yesterday', false], ['Today', false], ['', true]]);
    assert.match(rows[0][2], /^\d{1,2}:\d{2}/, 'an older message shows its time of day');
    await shot(alice, 'day-lines-desktop.png');
  } finally {
    await alice.page.unroute(url);
  }
  await openRoom(alice, roomId);
});

test('bob, away, comes back to a "New messages" line at the first unread; the list and title count it', async () => {
  await bob.page.evaluate(() => { location.hash = '#/'; });
  await until(bob.page, 'bob at the list', () => document.getElementById('chat-view').hidden);
  await say(alice.page, 'are you reading this, bob?');
  await say(alice.page, '**three** things to _check_');
  await until(bob.page, 'badge 2', (id) => document.querySelector(`#room-list a[data-room="${id}"] .badge [aria-hidden]`)?.textContent === '2', roomId);
  await until(bob.page, 'tab title', () => document.title === '(2) Parley');
  await bob.page.click(`#room-list a[data-room="${roomId}"]`);
  await until(bob.page, 'the New messages line', () => {
    const line = document.querySelector('#messages .unread-sep');
    return line && line.closest('li').querySelector('.msg-body').textContent === 'are you reading this, bob?';
  });
  assert.equal(await bob.page.evaluate(() => document.querySelectorAll('#messages .unread-sep').length), 1);
  // It breaks the group: the first unread shows its sender again.
  assert.equal(await bob.page.evaluate(() => document.querySelector('#messages .unread-sep').closest('li').classList.contains('cont')), false);
  await shot(bob, 'new-messages-phone-dark.png');
});

test('with more unread than the screen holds, the room opens at the "New messages" line; reading down clears the badge', async () => {
  const b = bob.page;
  await b.evaluate(() => { location.hash = '#/'; });
  await until(b, 'bob at the list', () => document.getElementById('chat-view').hidden);
  for (let i = 1; i <= 40; i++) await post(alice, roomId, `catch up ${i}`);
  const badgeOf = (id) => document.querySelector(`#room-list a[data-room="${id}"] .badge [aria-hidden]`)?.textContent || '';
  await until(b, 'badge 40', (id) => document.querySelector(`#room-list a[data-room="${id}"] .badge [aria-hidden]`)?.textContent === '40', roomId);
  await b.click(`#room-list a[data-room="${roomId}"]`);
  await until(b, 'the line in view, at the first unread', () => {
    const line = document.querySelector('#messages .unread-sep');
    if (!line || line.closest('li').querySelector('.msg-body').textContent !== 'catch up 1') return false;
    const v = document.getElementById('messages-scroll').getBoundingClientRect();
    const r = line.getBoundingClientRect();
    return r.top >= v.top && r.bottom <= v.bottom;
  });
  assert.equal(await b.evaluate(badgeOf, roomId), '40', 'not read before it is seen');
  await shot(bob, 'unread-line-phone-dark.png');
  await b.evaluate(() => { const s = document.getElementById('messages-scroll'); s.scrollTop = s.scrollHeight; });
  await until(b, 'badge cleared once read down', (id) => !document.querySelector(`#room-list a[data-room="${id}"] .badge`), roomId);
});

test('the phone at 375 px in the dark: the title is readable, the composer on screen, dark colours', async () => {
  const box = await bob.page.evaluate(() => {
    const t = document.getElementById('chat-title').getBoundingClientRect();
    const c = document.getElementById('composer').getBoundingClientRect();
    return { title: t.width, composerBottom: c.bottom, composerTop: c.top, height: innerHeight, bg: getComputedStyle(document.body).backgroundColor,
      scrollW: document.documentElement.scrollWidth };
  });
  assert.ok(box.title >= 100, `title ${box.title} px wide, want ≥ 100`);
  assert.ok(box.composerTop > 0 && box.composerBottom <= box.height, 'the composer is on the screen');
  assert.ok(box.scrollW <= 375, 'nothing wider than the screen');
  const [r, g, b] = box.bg.match(/\d+/g).map(Number);
  assert.ok(r + g + b < 120, `a dark background, got ${box.bg}`);
  const light = await alice.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(light, 'rgb(255, 255, 255)', 'alice is in the light scheme');
});

test('Markdown renders: emphasis, code, a code block, a quote, a list, a link', async () => {
  const text = 'Some *em* and **strong**, `a code span`, [the docs](https://example.com/docs)\n\n```\nconst x = 1 < 2;\n```\n\n> quoted\n\n- one\n- two';
  await say(alice.page, text);
  const sel = '#messages li[data-seq]:last-of-type .msg-body';
  await until(bob.page, 'the formatted message', (s) => !!document.querySelector(s + ' pre code'), sel);
  const got = await bob.page.evaluate((s) => {
    const b = document.querySelector(s);
    const a = b.querySelector('a');
    return {
      em: b.querySelector('em')?.textContent, strong: b.querySelector('strong')?.textContent,
      code: b.querySelector('p code')?.textContent, pre: b.querySelector('pre code')?.textContent,
      quote: b.querySelector('blockquote')?.textContent.trim(), items: [...b.querySelectorAll('ul li')].map((x) => x.textContent),
      link: a && { href: a.getAttribute('href'), rel: a.rel, target: a.target, text: a.textContent },
    };
  }, sel);
  assert.deepEqual(got, {
    em: 'em', strong: 'strong', code: 'a code span', pre: 'const x = 1 < 2;', quote: 'quoted', items: ['one', 'two'],
    link: { href: 'https://example.com/docs', rel: 'noopener noreferrer nofollow', target: '_blank', text: 'the docs' },
  });
  // The server keeps the text as sent.
  const page = await api(bob, 'GET', `/api/rooms/${roomId}/messages?limit=1`);
  assert.equal(page.data.messages[0].body, text);
});

test('hostile Markdown: no element, attribute or link it asks for survives, nothing runs', async () => {
  const hostile = [
    '<script>window.__xss = 1</script>',
    '<img src=x onerror="window.__xss = 2">',
    '[click](javascript:window.__xss=3)',
    '[click](JaVaScRiPt:window.__xss=4)',
    '[tab](java\tscript:window.__xss=5)',
    '[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9Njwvc2NyaXB0Pg==)',
    '[ent](javascript&#58;window.__xss=7)',
    '![img](x" onerror="window.__xss=8)',
    '<a href="javascript:window.__xss=9">a</a>',
    '**<svg onload="window.__xss=10">**',
    '> <iframe src="javascript:window.__xss=11"></iframe>',
    '- [x](vbscript:msgbox(12))\n- <details open ontoggle="window.__xss=13">',
    '`<b>code</b>` and [ok](https://example.com/<script>)',
    '<style>body{display:none}</style><form action="https://evil.example/"><input></form>',
    '[rel](https://example.com "title\\" onmouseover=\\"window.__xss=14")',
  ];
  for (const h of hostile) await post(alice, roomId, h);
  await post(alice, roomId, 'end of the hostile ones');
  for (const p of [alice, bob]) {
    await until(p.page, `${p.name} shows them all`, () => document.querySelector('#messages li[data-seq]:last-of-type .msg-body')?.textContent === 'end of the hostile ones');
    // Hover every link and message: an event handler would fire now.
    for (const a of await p.page.$$('#messages li[data-seq] .msg-body a')) await a.hover().catch(() => {});
    const report = await p.page.evaluate(() => {
      const bodies = [...document.querySelectorAll('#messages .msg-body')];
      const els = bodies.flatMap((b) => [...b.querySelectorAll('*')]);
      return {
        xss: window.__xss || 0,
        tags: [...new Set(els.map((e) => e.tagName.toLowerCase()))].sort(),
        handlers: els.flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => /^on/i.test(n) || n === 'style' || n === 'src'),
        hrefs: els.filter((e) => e.hasAttribute('href')).map((e) => ({ href: e.getAttribute('href'), rel: e.rel })),
        text: document.querySelector('#messages').textContent,
      };
    });
    assert.equal(report.xss, 0, 'no script ran');
    const allowed = new Set(['p', 'br', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'span']);
    for (const t of report.tags) assert.ok(allowed.has(t), `no <${t}> in a message`);
    assert.deepEqual(report.handlers, [], 'no event handler, style or src attribute');
    for (const { href, rel } of report.hrefs) {
      assert.match(href, /^(https?:|mailto:)/, `link ${href}`);
      assert.equal(rel, 'noopener noreferrer nofollow');
    }
    // The refused markup shows as the text that was typed.
    assert.ok(report.text.includes('<script>window.__xss = 1</script>'), 'a script tag shows as text');
    assert.ok(report.text.includes('<img src=x onerror="window.__xss = 2">'), 'an img tag shows as text');
  }
  assert.equal(await bob.page.evaluate(() => getComputedStyle(document.body).display), 'flex', 'a style tag did nothing');
  await shot(alice, 'markdown-hostile-desktop.png');
});

test('the toolbar: on hover, by keyboard, by a tap on the phone; Copy link copies the message link', async () => {
  const seq = await alice.page.evaluate(() => Number([...document.querySelectorAll('#messages li.mine[data-seq]')].pop().dataset.seq));
  // Nothing shows under a message until the hand is there.
  const opacity = () => alice.page.evaluate((s) => getComputedStyle(document.querySelector(s + ' .msg-actions')).opacity, li(seq));
  await alice.page.mouse.move(5, 5);
  assert.equal(await opacity(), '0');
  await alice.page.hover(li(seq) + ' .msg-body');
  assert.equal(await opacity(), '1');
  assert.deepEqual(await alice.page.evaluate((s) => [...document.querySelectorAll(s + ' .msg-actions button')].map((b) => b.textContent), li(seq)),
    ['Reply', 'React', 'Pin', 'Edit', 'Copy link', 'Delete']); // alice owns the room: she pins
  await shot(alice, 'toolbar-desktop.png');
  // By keyboard: Tab from the message before reaches this toolbar's buttons, and shows them.
  await alice.page.mouse.move(5, 5);
  await alice.page.focus(`${li(seq - 1)} .msg-actions button:last-child`);
  await alice.page.keyboard.press('Tab');
  assert.equal(await alice.page.evaluate((s) => document.activeElement.closest('li')?.dataset.seq === String(s) &&
    document.activeElement.matches('.msg-actions button'), seq), true);
  assert.equal(await opacity(), '1', 'the focused toolbar shows');
  await alice.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await alice.page.click(`${li(seq)} .msg-copy-link`);
  await until(alice.page, 'Copied', (s) => document.querySelector(s + ' .msg-copy-link').textContent === 'Copied', li(seq));
  assert.equal(await alice.page.evaluate(() => navigator.clipboard.readText()), `${server.url}/#/room/${roomId}/m/${seq}`);
  // bob's phone: a tap on a message opens its toolbar.
  await bob.page.tap(li(seq) + ' .msg-body');
  await until(bob.page, 'the toolbar open', (s) => document.querySelector(s).classList.contains('tools-open') &&
    document.querySelector(s + ' .msg-actions').checkVisibility(), li(seq));
  assert.deepEqual(await bob.page.evaluate((s) => [...document.querySelectorAll(s + ' .msg-actions button')].map((b) => b.textContent), li(seq)), ['Reply', 'React', 'Copy link']);
  await shot(bob, 'toolbar-phone-dark.png');
});

test('Up edits my last message with only Save and Cancel; Escape cancels; Enter saves', async () => {
  const seq = await alice.page.evaluate(() => Number([...document.querySelectorAll('#messages li.mine[data-seq]')].pop().dataset.seq));
  await alice.page.click('#composer-input');
  await alice.page.keyboard.press('ArrowUp');
  await until(alice.page, 'editing', (s) => document.activeElement === document.querySelector(s + ' .msg-edit-input'), li(seq));
  const shown = await alice.page.evaluate((s) => [...document.querySelectorAll(s + ' button')].filter((b) => b.checkVisibility()).map((b) => b.textContent), li(seq));
  assert.deepEqual(shown, ['Save', 'Cancel'], 'only Save and Cancel while editing');
  await shot(alice, 'edit-desktop.png');
  await alice.page.keyboard.press('Escape');
  await until(alice.page, 'edit cancelled', (s) => !document.querySelector(s + ' .msg-edit-form'), li(seq));
  assert.equal(await alice.page.evaluate(() => document.activeElement.id), 'composer-input', 'back in the composer');
  await alice.page.keyboard.press('ArrowUp');
  await until(alice.page, 'editing again', (s) => !!document.querySelector(s + ' .msg-edit-input'), li(seq));
  await alice.page.fill(`${li(seq)} .msg-edit-input`, 'edited with the keyboard');
  await alice.page.keyboard.press('Enter');
  await until(bob.page, 'bob sees the edit', (s) => document.querySelector(s + ' .msg-body')?.textContent === 'edited with the keyboard' &&
    !!document.querySelector(s + ' .msg-edited'), li(seq));
});

test('Delete asks in a small dialog: Cancel keeps the message, Delete deletes it', async () => {
  const seq = await post(alice, roomId, 'a message to delete');
  await until(alice.page, 'shown', (s) => !!document.querySelector(s), li(seq));
  await alice.page.click(`${li(seq)} .msg-delete`);
  await until(alice.page, 'the dialog', () => document.getElementById('confirm-dialog').open);
  assert.equal(await alice.page.textContent('#confirm-title'), 'Delete this message?');
  assert.equal(await alice.page.evaluate(() => document.activeElement.id), 'confirm-cancel', 'Cancel has the focus');
  await shot(alice, 'confirm-delete-desktop.png');
  await alice.page.keyboard.press('Enter'); // Cancel
  await until(alice.page, 'closed', () => !document.getElementById('confirm-dialog').open);
  assert.equal(await alice.page.evaluate((s) => document.querySelector(s + ' .msg-body').textContent, li(seq)), 'a message to delete');
  await alice.page.click(`${li(seq)} .msg-delete`);
  await confirmDialog(alice.page, 'Delete');
  await until(bob.page, 'bob sees it deleted', (s) => document.querySelector(s + ' .msg-body')?.textContent === 'message deleted', li(seq));
});

test('panels open beside the timeline, close with Escape; on the phone they take the screen and Back returns', async () => {
  const a = alice.page;
  await a.click('#people-button');
  await until(a, 'members panel', () => !document.getElementById('people').hidden && document.querySelectorAll('#member-list li').length === 2);
  const layout = await a.evaluate(() => {
    const p = document.getElementById('panel').getBoundingClientRect();
    const m = document.getElementById('messages-scroll').getBoundingClientRect();
    return { beside: p.left >= m.right - 1, sameTop: Math.abs(p.top - m.top) < 80, msgTop: m.top };
  });
  assert.ok(layout.beside, 'the panel is right of the timeline');
  assert.ok(layout.msgTop < 160, 'the timeline is not pushed down');
  assert.deepEqual(await a.evaluate(() => [...document.querySelectorAll('#member-list li')].map((x) => [x.querySelector('.member-name').textContent, x.dataset.role])),
    [['alice (you)', 'owner'], ['bob', 'member']]);
  assert.deepEqual(await a.evaluate(() => [...document.querySelectorAll('#member-list li button')].map((b) => b.textContent)), ['Make admin', 'Remove', 'Ban']);
  await shot(alice, 'panel-members-desktop.png');
  await a.keyboard.press('Escape');
  await until(a, 'closed by Escape', () => document.getElementById('panel').hidden);
  await a.click('#invite-button');
  await until(a, 'invite panel', () => !document.getElementById('invite').hidden);
  assert.match(await a.inputValue('#invite-link'), /#\/join\//);
  await shot(alice, 'panel-invite-desktop.png');
  await a.click('#panel-close');
  await until(a, 'closed', () => document.getElementById('panel').hidden);
  await a.fill('#search-input', 'line');
  await a.press('#search-input', 'Enter');
  await until(a, 'search results in the panel', () => !document.getElementById('search').hidden && document.querySelectorAll('#search-results li').length === 20);
  assert.equal(await a.evaluate(() => !document.getElementById('chat-view').hidden), true, 'the room stays beside the results');
  await shot(alice, 'panel-search-desktop.png');
  await a.keyboard.press('Escape');
  await until(a, 'search closed', () => document.getElementById('panel').hidden);

  // The phone: the panel takes the screen; Back brings the room again.
  const b = bob.page;
  await showPeople(b);
  const cover = await b.evaluate(() => {
    const p = document.getElementById('panel').getBoundingClientRect();
    return p.left === 0 && p.top === 0 && p.width === innerWidth && p.height === innerHeight;
  });
  assert.ok(cover, 'the panel covers the phone screen');
  assert.equal(await b.isVisible('#panel-back'), true);
  await shot(bob, 'panel-members-phone-dark.png');
  await b.click('#panel-back');
  await until(b, 'back to the room', () => document.getElementById('panel').hidden && document.getElementById('composer-input').checkVisibility());
  await hidePanel(b);
});

test('Ctrl+K switches room', async () => {
  const other = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Quiet corner' });
  await until(alice.page, 'the new room listed', (id) => !!document.querySelector(`#room-list a[data-room="${id}"]`), other.data.id);
  await alice.page.click('#composer-input');
  await alice.page.keyboard.press('Control+k');
  await until(alice.page, 'the switcher', () => document.getElementById('switcher').open && document.activeElement.id === 'switcher-input');
  await alice.page.keyboard.type('quiet');
  await until(alice.page, 'one match', () => document.querySelectorAll('#switcher-list li[role=option]').length === 1);
  await shot(alice, 'switcher-desktop.png');
  await alice.page.keyboard.press('Enter');
  await until(alice.page, 'in the other room', (id) => location.hash === '#/room/' + id && !document.getElementById('switcher').open, other.data.id);
  await alice.page.keyboard.press('Control+k');
  await until(alice.page, 'the switcher again', () => document.getElementById('switcher').open);
  await alice.page.keyboard.type('harbour');
  await alice.page.keyboard.press('Enter');
  await until(alice.page, 'back in the first room', (id) => location.hash === '#/room/' + id, roomId);
});

test('desktop notifications: asked for on a click, then a direct message while the tab is hidden notifies', async () => {
  const b = bob.page;
  assert.equal(await b.evaluate(() => window.__notes.asked), 0, 'not asked on load');
  await b.evaluate(() => { location.hash = '#/'; });
  await b.click('#account-box summary');
  await b.click('#notify-button');
  await until(b, 'permission asked once', () => window.__notes.asked === 1);
  await until(b, 'notifications on', () => document.getElementById('notify-state').textContent === 'Notifications are on for direct messages.');
  await b.click('#account-box summary');
  // bob's tab goes to the background.
  await b.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    Object.defineProperty(document, 'hidden', { value: true, configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const user = await api(alice, 'GET', '/api/users/bob');
  const direct = await api(alice, 'POST', '/api/rooms', { kind: 'direct', peer: user.data.id });
  assert.ok(direct.status === 201 || direct.status === 200, JSON.stringify(direct.data));
  await post(alice, direct.data.id, 'psst, bob');
  await post(alice, roomId, 'a group message, no notification');
  await until(b, 'a notification', () => window.__notes.shown.length >= 1);
  await until(b, 'the group message arrived too', (id) => document.querySelector(`#room-list a[data-room="${id}"] .room-last`)?.textContent === 'alice: a group message, no notification', roomId);
  assert.deepEqual(await b.evaluate(() => window.__notes.shown.map((n) => [n.title, n.body])), [['alice', 'psst, bob']], 'one, for the direct message only');
});

test('every control on the page has an accessible name', async () => {
  for (const p of everyone) {
    const unnamed = await p.page.evaluate(() => {
      const name = (el) => (el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') && document.getElementById(el.getAttribute('aria-labelledby'))?.textContent ||
        (el.labels && [...el.labels].map((l) => l.textContent).join(' ')) || (el.matches('button, a, summary') ? el.textContent : '') || el.title || '').trim();
      return [...document.querySelectorAll('button, a[href], input, textarea, select, summary, [role=toolbar], [role=option]')]
        .filter((el) => el.checkVisibility() && !name(el)).map((el) => el.outerHTML.slice(0, 120));
    });
    assert.deepEqual(unnamed, [], `${p.name}'s page`);
  }
});

test('no page threw an uncaught error', () => {
  for (const p of everyone) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});
