// The people test across a two-node cluster (PostgreSQL, RabbitMQ, Redis):
// alice's page talks to node 1, bob's to node 2, and every room event
// between them (seats, typing, read positions, presence, a formatted
// message deleted in the confirmation dialog, removal) crosses the broker. Skipped unless PARLEY_TEST_POSTGRES, PARLEY_TEST_AMQP and
// PARLEY_TEST_REDIS are set (PARLEY_TEST_REDIS_PREFIX optional); the test
// uses a PostgreSQL schema and a Redis key prefix of its own, dropped at
// the end.
//
// Run from web/: node --test test/people-cluster.test.mjs

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { person, until, waitLive, signUp, say, api, openRoom, showPeople, confirmDialog } from './pages.mjs';

const env = {
  store: process.env.PARLEY_TEST_POSTGRES,
  broker: process.env.PARLEY_TEST_AMQP,
  redis: process.env.PARLEY_TEST_REDIS,
  prefix: process.env.PARLEY_TEST_REDIS_PREFIX || 'parleytest:',
};
const skip = !env.store || !env.broker || !env.redis
  ? 'needs PARLEY_TEST_POSTGRES, PARLEY_TEST_AMQP and PARLEY_TEST_REDIS'
  : false;

const run = randomBytes(4).toString('hex');
const schema = 'webtest_' + run;
const prefix = env.prefix + 'webtest:' + run + ':';
let tmp, browser;
const nodes = [];
let alice, bob;
let roomId = '';
const everyone = [];

/** storeURL is PARLEY_TEST_POSTGRES with the test's schema first on the search path. */
function storeURL() {
  const u = new URL(env.store);
  u.searchParams.set('search_path', schema);
  return u.toString();
}

function psql(sql) {
  execFileSync('psql', [env.store, '-qc', sql], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, PGOPTIONS: '--client-min-messages=warning' } });
}

function redisCleanup() {
  const u = new URL(env.redis);
  const args = ['-h', u.hostname, '-p', u.port || '6379', '-n', (u.pathname.slice(1) || '0')];
  const keys = execFileSync('redis-cli', [...args, '--scan', '--pattern', prefix + '*'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (let i = 0; i < keys.length; i += 100) execFileSync('redis-cli', [...args, 'DEL', ...keys.slice(i, i + 100)], { stdio: 'ignore' });
}

before(async () => {
  if (skip) return;
  tmp = tempDir('parley-web-cluster-');
  psql(`CREATE SCHEMA ${schema}`);
  const bin = parleyBinary(tmp.dir);
  for (const n of [1, 2]) {
    const node = new Server(bin, join(tmp.dir, 'node' + n), [
      '--store', storeURL(), '--broker', env.broker, '--redis', env.redis, '--redis-prefix', prefix,
      '--node-id', `web${n}-${run}`, '--signup-rate', '0',
    ]);
    await node.start();
    nodes.push(node);
  }
  browser = await launchBrowser();
});

after(async () => {
  if (skip) return;
  if (browser) await browser.close().catch(() => {});
  for (const n of nodes) await n.stop().catch(() => {});
  try {
    psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    redisCleanup();
  } catch (e) {
    console.error('cleanup:', e.message);
  }
  if (tmp) tmp.cleanup();
});

/**
 * awaitMetric waits until a node's /metrics shows a series at least min
 * (polled, bounded in time), as the Go cluster tests do.
 */
async function awaitMetric(node, series, min, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let got = 0;
  for (;;) {
    const text = await (await fetch(node.url + '/metrics')).text();
    const line = text.split('\n').find((l) => l.startsWith(series + ' '));
    got = line ? Number(line.split(' ').pop()) : 0;
    if (got >= min) return;
    if (Date.now() > deadline) throw new Error(`${series} on ${node.url} = ${got}, want ≥ ${min}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function isOnline([name, online]) {
  return [...document.querySelectorAll('#member-list li')].some((li) =>
    li.querySelector('.member-name').textContent === name && li.dataset.online === String(online));
}

test('a join on node 2 moves the seat count on node 1 live', { skip }, async () => {
  alice = await person(browser, 'alice', nodes[0].url);
  bob = await person(browser, 'bob', nodes[1].url);
  everyone.push(alice, bob);
  await signUp(alice);
  await signUp(bob);
  const created = await api(alice, 'POST', '/api/rooms', { kind: 'group', title: 'Across', capacity: 3 });
  assert.equal(created.status, 201);
  roomId = created.data.id;
  await openRoom(alice, roomId);
  await showPeople(alice.page);
  await until(alice.page, 'one seat taken', () => document.getElementById('chat-members').textContent === '1 of 3 seats taken');
  assert.equal((await api(bob, 'POST', `/api/rooms/${roomId}/members`)).status, 201);
  await until(alice.page, 'two seats taken, from node 2', () => document.getElementById('chat-members').textContent === '2 of 3 seats taken');
  await openRoom(bob, roomId);
  await showPeople(bob.page);
  await until(alice.page, 'bob online', isOnline, ['bob', true], 20000);
  await until(bob.page, 'alice online', isOnline, ['alice', true], 20000);
});

test('bob typing on node 2 shows on node 1', { skip }, async () => {
  const typingShown = () => alice.page.waitForFunction(() => document.getElementById('typing').textContent === 'bob is typing…', null,
    { timeout: 300, polling: 50 }).then(() => true, () => false);
  await bob.page.click('#composer-input');
  for (let i = 0; i < 40; i++) {
    await bob.page.keyboard.type('a');
    if (await typingShown()) break;
  }
  await until(alice.page, 'alice sees bob typing', () => document.getElementById('typing').textContent === 'bob is typing…');
  await bob.page.fill('#composer-input', '');
});

test('bob reading on node 2 shows "Seen by bob" on node 1', { skip }, async () => {
  await say(alice.page, 'across the broker');
  await until(alice.page, 'seen by bob', () => {
    const mine = [...document.querySelectorAll('#messages li.mine[data-seq]')].pop();
    return mine && mine.querySelector('.msg-seen')?.textContent === 'Seen by bob';
  });
});

test('bob\'s dot on node 1 goes grey when his browser on node 2 closes', { skip }, async () => {
  // Node 1 says offline only after it said online (both after the 5 s
  // quiet): wait until it has announced alice and bob online.
  await awaitMetric(nodes[0], 'parley_room_events_total{kind="online"}', 2);
  const tok = await bob.page.evaluate(() => localStorage.getItem('parley.token'));
  await bob.context.close();
  await until(alice.page, 'bob offline', isOnline, ['bob', false], 30000);
  bob = await person(browser, 'bob', nodes[1].url);
  everyone.push(bob);
  await bob.context.addInitScript((t) => localStorage.setItem('parley.token', t), tok);
  await bob.page.goto(nodes[1].url + '/#/room/' + roomId);
  await until(alice.page, 'bob online again', isOnline, ['bob', true], 30000);
});

test('bob on node 2 sends Markdown; alice on node 1 sees it formatted, deletes it in the dialog, and bob sees it deleted', { skip }, async () => {
  await until(bob.page, 'bob in the room', () => !document.getElementById('chat-view').hidden);
  await waitLive(bob.page);
  await say(bob.page, 'from **node 2** with `code`');
  const last = () => {
    const b = [...document.querySelectorAll('#messages li[data-seq] .msg-body')].pop();
    return !!b && b.querySelector('strong')?.textContent === 'node 2' && b.querySelector('code')?.textContent === 'code';
  };
  await until(alice.page, 'formatted on node 1', last);
  const seq = await alice.page.evaluate(() => Number([...document.querySelectorAll('#messages li[data-seq]')].pop().dataset.seq));
  await until(alice.page, 'the owner may delete it', (s) => !!document.querySelector(`#messages li[data-seq="${s}"] .msg-delete`), seq);
  await alice.page.click(`#messages li[data-seq="${seq}"] .msg-delete`);
  await confirmDialog(alice.page, 'Delete');
  await until(bob.page, 'deleted on node 2', (s) => document.querySelector(`#messages li[data-seq="${s}"] .msg-body`)?.textContent === 'message deleted', seq, 20000);
  assert.equal(await bob.page.evaluate(() => document.querySelector('#messages').textContent.includes('node 2')), false, 'the text is gone on node 2');
});

test('alice on node 1 removes bob; his page on node 2 says so at once', { skip }, async () => {
  await until(bob.page, 'bob in the room', () => !document.getElementById('chat-view').hidden && document.getElementById('chat-error').textContent === '');
  await alice.page.click('#member-list li >> text=bob >> xpath=.. >> button[data-action=remove]');
  await confirmDialog(alice.page, 'Remove');
  await until(bob.page, 'bob is told', () => /removed from this room|no longer a member/.test(document.getElementById('chat-error').textContent));
  await until(bob.page, 'the room leaves bob\'s list', (id) => !document.querySelector(`#room-list a[data-room="${id}"]`), roomId);
  await until(alice.page, 'one seat taken again', () => document.getElementById('chat-members').textContent === '1 of 3 seats taken');
});

test('no page threw an uncaught error', { skip }, () => {
  for (const p of everyone) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});
