// The people test: who is in a room, as three people in their own browser
// contexts see it on one server. alice owns a five-seat room; bob and
// carol join it. Each step waits for the other page's DOM to change
// (bounded in time), never for a fixed delay.
//
// Run from web/: node --test test/people.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import {
  person, until, waitLive, signUp, say, api, openRoom, showPeople, hidePanel, confirmDialog, memberState, seats, typingSends, shot,
} from './pages.mjs';

let tmp, server, browser;
const everyone = []; // every person's context, for the final check of page errors
let alice, bob, carol;
let roomId = '';

before(async () => {
  tmp = tempDir('parley-web-people-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'));
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

test('alice opens a five-seat room; bob and carol join and her seat count follows live', async () => {
  alice = await person(browser, 'alice', server.url);
  bob = await person(browser, 'bob', server.url, { width: 390, height: 780 });
  carol = await person(browser, 'carol', server.url);
  everyone.push(alice, bob, carol);
  for (const p of [alice, bob, carol]) await signUp(p);
  const created = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Team', capacity: 5 });
  assert.equal(created.status, 201);
  roomId = created.data.id;
  await openRoom(alice, roomId);
  await showPeople(alice.page);
  await until(alice.page, 'one seat taken', () => document.getElementById('chat-members').textContent === '1 of 5 seats taken');
  // Seconds after her page connected: the server lists her as last
  // announced (offline) and never sends her her own online event, so
  // her page shows her online because it is connected.
  await until(alice.page, 'alice sees herself online', () => [...document.querySelectorAll('#member-list li')].filter((li) => li.dataset.online === 'true').length === 1);

  // bob joins by the invite link, in his page.
  await bob.page.goto(server.url + '/#/join/' + roomId);
  await until(bob.page, 'join preview', () => !document.getElementById('join-button').hidden);
  await bob.page.click('#join-button');
  await until(bob.page, 'bob in the room', (id) => location.hash === '#/room/' + id && !document.getElementById('chat-view').hidden, roomId);
  await until(alice.page, 'two seats taken, without a reload', () => document.getElementById('chat-members').textContent === '2 of 5 seats taken');
  await until(alice.page, 'bob listed', () => [...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'bob'));

  // carol joins over REST (another device, say).
  assert.equal((await api(carol, 'POST', `/api/rooms/${roomId}/members`)).status, 201);
  await until(alice.page, 'three seats taken', () => document.getElementById('chat-members').textContent === '3 of 5 seats taken');
  await until(bob.page, 'bob sees three seats taken', () => document.getElementById('chat-members').textContent === '3 of 5 seats taken');
  await openRoom(carol, roomId);
  await showPeople(carol.page);
  await showPeople(bob.page);
  // Online first, then by name; the owner's role shows.
  await until(alice.page, 'all three online', () => [...document.querySelectorAll('#member-list li')].filter((li) => li.dataset.online === 'true').length === 3);
  assert.deepEqual(await memberState(alice.page), [['alice (you)', true, 'owner'], ['bob', true, 'member'], ['carol', true, 'member']]);
  assert.equal(await seats(carol.page), '3 of 5 seats taken');
});

test('bob typing shows "bob is typing…" to the others, sent at most once every 2 s', async () => {
  const before = typingSends(bob, roomId).length;
  await hidePanel(bob.page); // on his phone the members panel takes the screen
  await bob.page.click('#composer-input');
  await bob.page.keyboard.type('hello every', { delay: 20 });
  await until(alice.page, 'alice sees bob typing', () => document.getElementById('typing').textContent === 'bob is typing…');
  await until(carol.page, 'carol sees bob typing', () => document.getElementById('typing').textContent === 'bob is typing…');
  assert.equal(await bob.page.textContent('#typing'), '', 'bob is not told that he types');
  const sends = typingSends(bob, roomId).slice(before);
  assert.ok(sends.length >= 1, 'a typing SEND');
  for (let i = 1; i < sends.length; i++) {
    assert.ok(sends[i].at - sends[i - 1].at >= 1900, `typing SENDs ${sends[i].at - sends[i - 1].at} ms apart, want ≥ 2 s`);
  }
  assert.ok(sends.every((f) => f.text.endsWith('\n\n\0')), 'a typing SEND has an empty body');
  // The message ends the typing at once.
  await bob.page.keyboard.type('one');
  await bob.page.press('#composer-input', 'Enter');
  await until(alice.page, 'bob\'s message arrives and the typing goes', () => document.getElementById('typing').textContent === '' &&
    [...document.querySelectorAll('#messages .msg-body')].some((e) => e.textContent === 'hello everyone'));

  // Typing that stops shows for 5 s, then goes by itself. bob types on
  // until alice sees it (his page sends at most once every 2 s).
  const typingShown = () => alice.page.waitForFunction(() => document.getElementById('typing').textContent === 'bob is typing…', null,
    { timeout: 300, polling: 50 }).then(() => true, () => false);
  for (let i = 0; i < 40; i++) {
    await bob.page.keyboard.type('a');
    if (await typingShown()) break;
  }
  await until(alice.page, 'bob typing again', () => document.getElementById('typing').textContent === 'bob is typing…');
  const shownAt = Date.now();
  await until(alice.page, 'the typing goes after 5 s', () => document.getElementById('typing').textContent === '', null, 15000);
  assert.ok(Date.now() - shownAt >= 3000, 'shown for about 5 s, not dropped at once');
  await bob.page.fill('#composer-input', '');
});

/** lastSeen holds when the "Seen by" of alice's last message reads want (run in the page). */
function lastSeen(want) {
  const mine = [...document.querySelectorAll('#messages li.mine[data-seq]')].pop();
  const seen = mine && mine.querySelector('.msg-seen');
  return !!seen && seen.textContent === want && document.querySelectorAll('.msg-seen').length === 1;
}

test('"Seen by" under alice\'s last message follows the others\' read positions live', async () => {
  await say(alice.page, 'lunch at noon?');
  await until(alice.page, 'seen by bob and carol', lastSeen, 'Seen by bob and carol');
  assert.equal(await alice.page.evaluate(() => document.querySelectorAll('.msg-seen').length), 1, 'only under the last message alice sent');
  // A newer message: nobody has read it until the others' pages do.
  await carol.page.evaluate(() => { location.hash = '#/'; });
  await until(carol.page, 'carol left the room view', () => document.getElementById('chat-view').hidden);
  await say(alice.page, 'or at one');
  await until(alice.page, 'seen by bob only, under the newer message', lastSeen, 'Seen by bob');
  assert.equal(await alice.page.evaluate(() => [...document.querySelectorAll('#messages li.mine[data-seq]')].pop().querySelector('.msg-body').textContent), 'or at one');
  await openRoom(carol, roomId);
  await until(alice.page, 'seen by both again', lastSeen, 'Seen by bob and carol');
  await shot(alice.page, 'people-desktop.png');
  await shot(bob.page, 'people-phone.png');
});

test('only the owner and admins see the controls; the owner makes bob admin', async () => {
  await showPeople(carol.page);
  // carol, a member, sees no controls.
  assert.equal(await carol.page.evaluate(() => document.querySelectorAll('#member-list button').length), 0, 'no buttons for a member');
  assert.equal(await carol.page.evaluate(() => document.getElementById('room-settings').hidden), true, 'no settings for a member');
  assert.equal(await carol.page.evaluate(() => document.getElementById('leave-button').hidden), false, 'a member may leave');
  // alice, the owner, sees each control beside the others, none beside herself.
  const controls = (page) => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#member-list li')].map((li) => [
    li.querySelector('.member-name').textContent, [...li.querySelectorAll('button')].map((b) => b.textContent),
  ])));
  assert.deepEqual(await controls(alice.page), {
    'alice (you)': [], bob: ['Make admin', 'Remove', 'Ban'], carol: ['Make admin', 'Remove', 'Ban'],
  });
  assert.equal(await alice.page.evaluate(() => document.getElementById('room-settings').hidden), false);

  await alice.page.click('#member-list li[data-user] >> text=bob >> xpath=.. >> button[data-action=role]');
  await until(bob.page, 'bob is admin on his page', () => document.querySelector('#member-list li[data-role="admin"] .member-name')?.textContent === 'bob (you)');
  await until(alice.page, 'Take admin offered', () => [...document.querySelectorAll('#member-list li')].some((li) => li.dataset.role === 'admin' &&
    li.querySelector('button[data-action=role]')?.textContent === 'Take admin'));
  // An admin may remove members, but neither the owner nor change roles.
  await until(bob.page, 'bob\'s admin controls', () => !document.getElementById('room-settings').hidden);
  assert.deepEqual(await controls(bob.page), { 'alice': [], 'bob (you)': [], carol: ['Remove', 'Ban'] });
});

test('a refused change shows the server\'s reason as text; a rename reaches everyone', async () => {
  // The reason the server gives, straight from the API.
  const refused = await api(alice, 'PATCH', `/api/rooms/${roomId}`, { capacity: 1 });
  assert.equal(refused.status, 409);
  const reason = refused.data.error.message;
  await alice.page.click('#room-settings summary');
  await alice.page.fill('#settings-capacity', '1');
  await alice.page.click('#room-settings button[type=submit]');
  await until(alice.page, 'the reason shown', (r) => document.getElementById('people-error').textContent === r, reason);

  await alice.page.fill('#settings-capacity', '4');
  await alice.page.fill('#settings-title', 'Team <b>lunch</b>');
  await alice.page.click('#room-settings button[type=submit]');
  for (const p of [alice, bob, carol]) {
    await until(p.page, `${p.name} sees the new title and seats`, () => document.getElementById('chat-title').textContent === 'Team <b>lunch</b>' &&
      document.getElementById('chat-members').textContent === '3 of 4 seats taken');
  }
  assert.equal(await alice.page.textContent('#people-error'), '', 'the error goes with the next success');
  assert.equal(await bob.page.evaluate(() => document.querySelectorAll('b').length), 0, 'the title is text');
});

test('carol, banned by bob, is told at once; she cannot join again until unbanned', async () => {
  await showPeople(bob.page);
  await bob.page.click('#member-list li >> text=carol >> xpath=.. >> button[data-action=ban]');
  await confirmDialog(bob.page, 'Ban');
  // Told by the member event, or by the ERROR that ends her session when it comes first.
  await until(carol.page, 'carol is told', () => /removed from this room|no longer a member of this room: you were banned/
    .test(document.getElementById('chat-error').textContent));
  await until(carol.page, 'the room leaves carol\'s list', (id) => !document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  assert.equal(await carol.page.evaluate(() => document.getElementById('composer-input').disabled), true, 'her composer is off');
  await shot(carol.page, 'removed.png');
  for (const p of [alice, bob]) {
    await until(p.page, `${p.name} sees two seats taken`, () => document.getElementById('chat-members').textContent === '2 of 4 seats taken');
    await until(p.page, `carol gone from ${p.name}'s list`, () => ![...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'carol'));
  }
  // Her join is refused, with the server's reason.
  await carol.page.goto(server.url + '/#/join/' + roomId);
  await until(carol.page, 'join preview or refusal', () => !document.getElementById('join-button').hidden || document.getElementById('join-error').textContent !== '');
  if (!(await carol.page.evaluate(() => document.getElementById('join-button').hidden))) await carol.page.click('#join-button');
  await until(carol.page, 'join refused', () => document.getElementById('join-error').textContent !== '');
  // The owner unbans her from the panel's ban list.
  for (const p of [alice, bob]) {
    await until(p.page, `carol in ${p.name}'s ban list`, () => [...document.querySelectorAll('#ban-list .member-name')].some((e) => e.textContent === 'carol'));
  }
  await alice.page.click('#ban-list li >> text=carol >> xpath=.. >> button[data-action=unban]');
  await until(alice.page, 'ban list empty', () => document.getElementById('bans').hidden);
  // bob, an admin too, hears of it by the member event (action unbanned): his list empties live.
  await until(bob.page, 'bob\'s ban list empty, without a reload', () => document.getElementById('bans').hidden);
  assert.equal((await api(carol, 'POST', `/api/rooms/${roomId}/members`)).status, 201, 'carol may join again');
  await until(alice.page, 'three seats taken again', () => document.getElementById('chat-members').textContent === '3 of 4 seats taken');
});

test('alice removes carol (no ban): the room leaves carol\'s list live, and she may join again', async () => {
  // carol's join (over REST, above) put the room in her list by its member event.
  await carol.page.evaluate(() => { location.hash = '#/'; });
  await until(carol.page, 'the room in carol\'s list', (id) => !!document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  await until(alice.page, 'carol listed', () => [...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'carol'));
  await alice.page.click('#member-list li >> text=carol >> xpath=.. >> button[data-action=remove]');
  await confirmDialog(alice.page, 'Remove');
  await until(carol.page, 'the room leaves carol\'s list', (id) => !document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  await until(alice.page, 'two seats taken', () => document.getElementById('chat-members').textContent === '2 of 4 seats taken');
  assert.equal((await api(carol, 'POST', `/api/rooms/${roomId}/members`)).status, 201);
  await openRoom(carol, roomId);
  // With the room open, a removal ends her session's subscriptions; she is told.
  await alice.page.click('#member-list li >> text=carol >> xpath=.. >> button[data-action=remove]');
  await confirmDialog(alice.page, 'Remove');
  await until(carol.page, 'carol is told', () => /^You were removed from this room\.|no longer a member of this room: you were removed/
    .test(document.getElementById('chat-error').textContent));
  await until(carol.page, 'the room leaves carol\'s list again', (id) => !document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  assert.equal(await carol.page.evaluate(() => document.getElementById('banner').hidden), true, 'no banner about the connection');
  // The server ended her session (and may end the next one, which still
  // subscribes to the room): she rejoins from a fresh page holding one
  // steady connection, so that the member list read at her join has her
  // online (the listing's online is the moment's; online events wait 5 s).
  await carol.page.reload();
  await waitLive(carol.page);
  assert.equal((await api(carol, 'POST', `/api/rooms/${roomId}/members`)).status, 201);
});

test('bob leaves with the Leave button', async () => {
  await showPeople(bob.page);
  await bob.page.click('#leave-button');
  await confirmDialog(bob.page, 'Leave');
  await until(bob.page, 'bob back at the list without the room', (id) => location.hash === '#/' &&
    !document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  await until(alice.page, 'alice sees bob go', () => document.getElementById('chat-members').textContent === '2 of 4 seats taken' &&
    ![...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'bob'));
  assert.equal((await api(bob, 'GET', `/api/rooms/${roomId}/messages`)).status, 403, 'bob is out on the server');
});

test('alice adds bob back by name; an unknown name is refused with the server\'s reason', async () => {
  await showPeople(alice.page);
  await until(alice.page, 'the add form, for the owner', () => !document.getElementById('add-member').hidden);
  await alice.page.fill('#add-member-name', 'nobody-here');
  await alice.page.click('#add-member button[type=submit]');
  await until(alice.page, 'the refusal shown', () => document.getElementById('people-error').textContent !== '');
  await alice.page.fill('#add-member-name', 'bob');
  await alice.page.click('#add-member button[type=submit]');
  await until(alice.page, 'bob listed again', () => document.getElementById('chat-members').textContent === '3 of 4 seats taken' &&
    [...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'bob'));
  assert.equal(await alice.page.inputValue('#add-member-name'), '', 'the form clears');
  await until(bob.page, 'the room back in bob\'s list, live', (id) => !!document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  assert.equal((await api(bob, 'GET', `/api/rooms/${roomId}/messages`)).status, 200, 'bob is in on the server');
  await openRoom(carol, roomId);
  // Her panel stays open from before; her members list has loaded once bob is in it.
  await until(carol.page, 'carol\'s list has bob', () => [...document.querySelectorAll('#member-list .member-name')].some((e) => e.textContent === 'bob'));
  assert.equal(await carol.page.evaluate(() => document.getElementById('add-member').hidden), true, 'a plain member has no add form');
});

test('carol\'s dot goes grey when her browser closes, and green when she is back', async () => {
  await until(alice.page, 'carol online', () => document.querySelector('#member-list li[data-online="true"] .member-name')
    && [...document.querySelectorAll('#member-list li')].some((li) => li.querySelector('.member-name').textContent === 'carol' && li.dataset.online === 'true'));
  const tok = await carol.page.evaluate(() => localStorage.getItem('parley.token'));
  await carol.context.close();
  // The server waits 5 s for a reconnect before it says offline.
  await until(alice.page, 'carol offline', () => [...document.querySelectorAll('#member-list li')].some((li) =>
    li.querySelector('.member-name').textContent === 'carol' && li.dataset.online === 'false'), null, 20000);
  assert.deepEqual((await memberState(alice.page)).map((m) => m[0]), ['alice (you)', 'bob', 'carol'], 'online first');
  carol = await person(browser, 'carol', server.url);
  everyone.push(carol);
  await carol.context.addInitScript((t) => localStorage.setItem('parley.token', t), tok);
  await carol.page.goto(server.url + '/');
  await until(alice.page, 'carol online again', () => [...document.querySelectorAll('#member-list li')].some((li) =>
    li.querySelector('.member-name').textContent === 'carol' && li.dataset.online === 'true'), null, 20000);
});

test('no page threw an uncaught error', () => {
  for (const p of everyone) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});
