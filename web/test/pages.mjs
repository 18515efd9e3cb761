// Page helpers of the browser tests: one browser context per person, waits
// on the page's DOM bounded in time (never sleeps), REST calls as a page's
// user, and twoInRoom, the set-up of two people sharing a room.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { outDir } from './harness.mjs';

export const password = 'correct horse battery';

/**
 * person makes a browser context (its own storage) for one user of base;
 * it records the page's uncaught errors and every STOMP frame it sends.
 */
export async function person(browser, name, base, viewport = { width: 1200, height: 800 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.dismiss().catch(() => {}));
  const frames = { sent: [], received: [] };
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => frames.sent.push({ at: Date.now(), text: String(f.payload) }));
    ws.on('framereceived', (f) => frames.received.push({ at: Date.now(), text: String(f.payload) }));
  });
  return { name, base, context, page, errors, frames };
}

/** until waits for fn(arg) to hold in the page; on timeout it says what and shows the page text. */
export async function until(page, what, fn, arg, timeout = 15000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    const text = await page.evaluate(() => document.body.innerText).catch(() => '(page gone)');
    throw new Error(`${what}: ${e.message.split('\n')[0]}\n--- page text ---\n${text}`);
  }
}

export function waitLive(page) {
  return until(page, 'connection live', () => document.getElementById('conn').dataset.state === 'live', null, 30000);
}

export async function signUp(p) {
  await p.page.goto(p.base + '/');
  await p.page.fill('#auth-name', p.name);
  await p.page.fill('#auth-password', password);
  await p.page.click('button[value=signup]');
  await p.page.waitForSelector('#chat-app:not([hidden])');
  await waitLive(p.page);
  p.id = await p.page.evaluate(async () => {
    const r = await fetch('/api/me', { headers: { Authorization: 'Bearer ' + localStorage.getItem('parley.token') } });
    return (await r.json()).id;
  });
}

export async function say(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

/** api calls the REST API as p's user, from the test (not the page). */
export async function api(p, method, path, body) {
  const tok = await p.page.evaluate(() => localStorage.getItem('parley.token'));
  const res = await fetch(p.base + path, {
    method,
    headers: { Authorization: 'Bearer ' + tok, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  return { status: res.status, data };
}

/**
 * twoInRoom is the set-up most tests of two people start from: each in a
 * browser context of its own (person, at base or the person's own base,
 * with the person's viewport), init run on each (before any page loads),
 * each signed up (or signed in by the person's signIn), a group room
 * titled title that the first creates and the second joins, the first's
 * messages sent in it, then the room opened on the pages of those in open
 * (indexes into people: both by default). It returns the two people, the
 * room as created and the messages' seqs.
 */
export async function twoInRoom(browser, base, {
  people = [{ name: 'alice' }, { name: 'bob' }], init, title = 'Team', messages = [], open = [0, 1],
} = {}) {
  const ps = [];
  for (const spec of people) ps.push(await person(browser, spec.name, spec.base || base, spec.viewport));
  if (init) for (const p of ps) await init(p);
  for (const [i, p] of ps.entries()) await (people[i].signIn || signUp)(p);
  const [first, second] = ps;
  const created = await api(first, 'POST', '/api/rooms', { kind: 'group', title });
  assert.equal(created.status, 201);
  const room = created.data;
  assert.equal((await api(second, 'POST', `/api/rooms/${room.id}/members`)).status, 201);
  const seqs = [];
  for (const body of messages) {
    const sent = await api(first, 'POST', `/api/rooms/${room.id}/messages`, { body });
    assert.equal(sent.status, 201);
    seqs.push(sent.data.seq);
  }
  for (const i of open) await openRoom(ps[i], room.id);
  return { people: ps, room, seqs };
}

/** openRoom opens a room by its route and waits for its view and the live connection. */
export async function openRoom(p, roomId) {
  await p.page.evaluate((id) => { location.hash = '#/room/' + id; }, roomId);
  await until(p.page, `${p.name} in the room`, (id) => location.hash === '#/room/' + id &&
    !document.getElementById('chat-view').hidden && document.getElementById('chat-title').textContent !== '', roomId);
  await waitLive(p.page);
}

/** showPeople opens the members panel if it is closed. */
export async function showPeople(page) {
  if (await page.evaluate(() => document.getElementById('people').hidden)) await page.click('#people-button');
  await until(page, 'members panel open', () => !document.getElementById('people').hidden);
}

/** hidePanel closes the panel beside the timeline (on a phone it takes the screen) if one is open. */
export async function hidePanel(page) {
  if (!(await page.evaluate(() => document.getElementById('panel').hidden))) {
    await page.click(await page.evaluate(() => (getComputedStyle(document.getElementById('panel-close')).display === 'none' ? '#panel-back' : '#panel-close')));
  }
  await until(page, 'panel closed', () => document.getElementById('panel').hidden);
}

/** confirmDialog presses the action's button (its word is ok) in the confirmation dialog, and waits for it to close. */
export async function confirmDialog(page, ok) {
  await until(page, 'the confirmation dialog', (w) => document.getElementById('confirm-dialog').open &&
    document.getElementById('confirm-ok').textContent === w, ok);
  await page.click('#confirm-ok');
  await until(page, 'the dialog closed', () => !document.getElementById('confirm-dialog').open);
}

/** memberState is [name, online, role] of each member listed, in order. */
export function memberState(page) {
  return page.evaluate(() => [...document.querySelectorAll('#member-list li')].map((li) => [
    li.querySelector('.member-name').textContent, li.dataset.online === 'true', li.dataset.role,
  ]));
}

export function seats(page) {
  return page.evaluate(() => document.getElementById('chat-members').textContent);
}

/** typingSends are the typing SEND frames p's page sent to a room. */
export function typingSends(p, roomId) {
  return p.frames.sent.filter((f) => f.text.startsWith('SEND\n') && f.text.includes('\ndestination:/app/rooms.' + roomId + '.typing\n'));
}

export async function shot(page, name) {
  await page.screenshot({ path: join(outDir, name), fullPage: false });
}
