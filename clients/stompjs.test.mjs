// A real third-party client against a running Parley server: @stomp/stompjs
// (the library browser apps use) over the `ws` WebSocket in Node, with
// stomp.js defaults (heart-beats 10000,10000; subprotocols v12.stomp,
// v11.stomp, v10.stomp). Two users chat in a room with receipts, both see
// every message live in seq order, one of them leaves and resumes with
// since-seq, and the REST room list agrees afterwards.
//
// PARLEY_URL names the server (http://127.0.0.1:PORT); clients/run.sh
// builds and starts one, then runs this file with node --test.

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client } from '@stomp/stompjs';
import WebSocket from 'ws';

// stomp.js opens `new WebSocket(url, protocols)` itself, as in a browser.
Object.assign(globalThis, { WebSocket });

const base = (process.env.PARLEY_URL || '').replace(/\/$/, '');
const wsURL = base.replace(/^http/, 'ws') + '/ws';
const WAIT = 10000; // every wait is bounded by this, in ms
const suffix = randomBytes(4).toString('hex'); // names are unique per run

before(() => {
  assert.match(base, /^https?:\/\//, 'PARLEY_URL must name the server, e.g. http://127.0.0.1:8080 (clients/run.sh sets it)');
});

/** api calls the REST API; it returns {status, body}. */
async function api(method, path, { token, body } = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** signUp registers a user and logs in: {id, name, token}. */
async function signUp(name) {
  const creds = { name: `${name}-${suffix}`, password: 'correct horse battery' };
  const reg = await api('POST', '/api/users', { body: creds });
  assert.equal(reg.status, 201, `register ${creds.name}: ${JSON.stringify(reg.body)}`);
  const login = await api('POST', '/api/tokens', { body: creds });
  assert.equal(login.status, 201, `login ${creds.name}: ${JSON.stringify(login.body)}`);
  return { ...login.body.user, token: login.body.token };
}

/** within rejects with a message naming what did not happen in time. */
function within(promise, what, ms = WAIT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Peer is one user's stomp.js Client. It records every MESSAGE in `inbox`
 * and every ERROR frame in `errors`, and keeps stomp.js's debug lines to
 * show when a wait fails.
 */
class Peer {
  constructor(user, connectHeaders) {
    this.user = user;
    this.inbox = [];
    this.errors = [];
    this.closes = []; // the WebSocket close events
    this.log = [];
    this.waiters = [];
    this.receiptN = 0;
    this.client = new Client({
      brokerURL: wsURL,
      connectHeaders,
      reconnectDelay: 0, // the test decides when to come back
      debug: (line) => {
        this.log.push(line);
        if (this.log.length > 200) this.log.shift();
      },
      onStompError: (frame) => {
        this.errors.push(frame);
        this.notify();
      },
      onWebSocketClose: (ev) => {
        this.closes.push(ev);
        this.notify();
      },
    });
  }

  /**
   * until resolves once cond() holds, checked whenever a frame arrives.
   * what (a string, or a function giving one when the wait fails) says
   * what was awaited.
   */
  until(what, cond) {
    const check = () => cond();
    if (check()) return Promise.resolve();
    return within(new Promise((resolve) => this.waiters.push({ check, resolve })), this.user.name).catch((e) => {
      const w = typeof what === 'function' ? what() : what;
      e.message = `${this.user.name}: ${w}: nothing within ${WAIT} ms` +
        `\n--- stomp.js debug (${this.user.name}) ---\n${this.log.slice(-30).join('\n')}`;
      throw e;
    });
  }

  notify() {
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }

  /** connect activates the client and resolves with the CONNECTED frame. */
  connect(onConnect = () => {}) {
    let connected;
    this.client.onConnect = (frame) => {
      onConnect(frame);
      connected = frame;
      this.notify();
    };
    this.client.activate();
    return this.until('CONNECTED', () => connected).then(() => connected);
  }

  /** subscribe subscribes to the room; with ack:client-individual it ACKs each MESSAGE. */
  subscribe(roomId, headers = {}) {
    return this.client.subscribe(
      `/topic/rooms.${roomId}`,
      (msg) => {
        this.inbox.push(msg);
        if (headers.ack === 'client-individual') msg.ack();
        this.notify();
      },
      headers,
    );
  }

  /** send publishes body with a receipt and resolves with the RECEIPT frame. */
  send(roomId, body, clientId) {
    const receipt = `${this.user.name}-r${this.receiptN++}`;
    let got;
    this.client.watchForReceipt(receipt, (frame) => {
      got = frame;
      this.notify();
    });
    this.client.publish({
      destination: `/app/rooms.${roomId}`,
      body,
      headers: { receipt, 'client-id': clientId },
    });
    return this.until(`RECEIPT ${receipt} for ${JSON.stringify(body)}`, () => got || this.errors.length).then(() => {
      assert.ok(got, `${this.user.name}: ERROR instead of RECEIPT: ${this.errors.map((f) => f.headers.message)}`);
      return got;
    });
  }

  /** messages waits for n messages in the inbox and returns them. */
  async messages(n) {
    await this.until(() => `${n} MESSAGEs (have ${this.inbox.length}: seq ${this.seqs()})`, () => this.inbox.length >= n);
    return this.inbox.slice(0, n);
  }

  seqs() {
    return this.inbox.map((m) => m.headers.seq).join(',');
  }

  /**
   * close deactivates: DISCONNECT with a receipt, then the WebSocket closes
   * cleanly (a Close frame with status 1000, not an abnormal 1006).
   */
  async close() {
    let receipt;
    this.client.onDisconnect = (frame) => {
      receipt = frame;
    };
    await within(this.client.deactivate(), `${this.user.name}: deactivate`);
    assert.ok(receipt && receipt.command === 'RECEIPT', `${this.user.name}: DISCONNECT answered by ${receipt && receipt.command}`);
    await this.until('WebSocket closed', () => this.closes.length > 0);
    assert.equal(this.closes.at(-1).code, 1000, `${this.user.name}: WebSocket close status after DISCONNECT`);
  }
}

/** checkMessage compares a MESSAGE with the message it should carry. */
function checkMessage(who, msg, room, want) {
  const h = msg.headers;
  const ctx = `${who}: MESSAGE seq ${h.seq} ${JSON.stringify(h)}`;
  assert.equal(h.seq, String(want.seq), ctx);
  assert.equal(h.room, room.id, ctx);
  assert.equal(h.sender, want.from.id, ctx);
  assert.equal(h['sender-name'], want.from.name, ctx);
  assert.equal(h['client-id'], want.clientId, ctx);
  assert.equal(h.destination, `/topic/rooms.${room.id}`, ctx);
  assert.ok(h.subscription, ctx);
  assert.ok(h['message-id'], ctx);
  assert.ok(h['content-type'], ctx);
  assert.ok(!Number.isNaN(Date.parse(h['sent-at'])), `${ctx}: sent-at`);
  assert.equal(msg.body, want.body, ctx);
}

function checkAll(who, msgs, room, wants) {
  assert.deepEqual(
    msgs.map((m) => m.headers.seq),
    wants.map((w) => String(w.seq)),
    `${who}: seqs in order`,
  );
  msgs.forEach((m, i) => checkMessage(who, m, room, wants[i]));
}

test('two stomp.js clients chat, resume with since-seq and agree with the room list', async (t) => {
  const alice = await signUp('alice');
  const bob = await signUp('bob');
  const created = await api('POST', '/api/rooms', { token: alice.token, body: { kind: 'group', title: 'stomp.js', capacity: 10 } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const room = created.body;
  const joined = await api('POST', `/api/rooms/${room.id}/members`, { token: bob.token });
  assert.equal(joined.status, 201, JSON.stringify(joined.body));

  // bob authenticates with the Authorization header, alice with passcode.
  let bobPeer = new Peer(bob, { Authorization: `Bearer ${bob.token}` });
  const alicePeer = new Peer(alice, { login: alice.name, passcode: alice.token });
  t.after(async () => {
    for (const p of [alicePeer, bobPeer]) await p.client.deactivate({ force: true }).catch(() => {});
  });

  const connected = await bobPeer.connect();
  assert.equal(connected.headers.version, '1.2');
  assert.equal(bobPeer.client.webSocket.protocol, 'v12.stomp', 'negotiated WebSocket subprotocol');
  assert.equal(connected.headers['user-name'], bob.name);
  assert.match(connected.headers.server, /^parley\//);
  assert.ok(connected.headers.session, 'CONNECTED session');
  assert.equal(connected.headers['heart-beat'], '10000,10000');

  // The server handles a connection's frames in order, so when this
  // RECEIPT is back bob's subscription was live before seq 1.
  bobPeer.subscribe(room.id);
  const sent = [];
  const send = async (peer, body, clientId) => {
    const r = await peer.send(room.id, body, clientId);
    sent.push({ receipt: r, body, clientId, from: peer.user });
    return r;
  };
  await send(bobPeer, 'hi from bob', 'b1');

  // alice joins the conversation late: since-seq 0 replays seq 1 first.
  await alicePeer.connect();
  alicePeer.subscribe(room.id, { 'since-seq': '0' });
  await send(alicePeer, 'hello bob', 'a1');
  await send(alicePeer, 'línea: dos\\tres\nand a second line', 'a2');
  await send(bobPeer, 'ok', 'b2');

  // RECEIPTs carry the committed seq and the message id.
  const history = async () => {
    const res = await api('GET', `/api/rooms/${room.id}/messages?after=0`, { token: alice.token });
    assert.equal(res.status, 200);
    return res.body.messages;
  };
  let stored = await history();
  assert.deepEqual(stored.map((m) => m.seq), [1, 2, 3, 4]);
  sent.forEach((s, i) => {
    assert.equal(s.receipt.headers.seq, String(i + 1), `RECEIPT of ${s.clientId}: ${JSON.stringify(s.receipt.headers)}`);
    assert.equal(s.receipt.headers['message-id'], stored[i].id, `RECEIPT of ${s.clientId}`);
  });

  const want = sent.map((s, i) => ({ seq: i + 1, from: s.from, body: s.body, clientId: s.clientId }));
  checkAll('alice', await alicePeer.messages(4), room, want);
  checkAll('bob', await bobPeer.messages(4), room, want);
  bobPeer.inbox.forEach((m, i) => assert.equal(m.headers['message-id'], stored[i].id, 'MESSAGE id is the REST id'));

  // The same client-id again: the original's RECEIPT, no new message.
  const again = await alicePeer.send(room.id, 'hello bob', 'a1');
  assert.equal(again.headers.seq, '2', `repeated client-id: ${JSON.stringify(again.headers)}`);
  assert.equal(again.headers['message-id'], stored[1].id);

  // bob leaves (DISCONNECT gets its RECEIPT); alice goes on talking.
  const lastSeen = Number(bobPeer.inbox.at(-1).headers.seq);
  await bobPeer.close();
  await send(alicePeer, 'are you there?', 'a3');
  await send(alicePeer, 'bob?', 'a4');

  // bob comes back, the way a stomp.js app reconnects: a new activation
  // whose onConnect resubscribes from the last seq it saw, this time
  // acknowledging each message.
  bobPeer = new Peer(bob, { passcode: bob.token });
  await bobPeer.connect(() => bobPeer.subscribe(room.id, { 'since-seq': String(lastSeen), ack: 'client-individual' }));
  await send(alicePeer, 'welcome back', 'a5');
  const missed = sent.slice(4).map((s, i) => ({ seq: lastSeen + 1 + i, from: s.from, body: s.body, clientId: s.clientId }));
  assert.deepEqual(missed.map((w) => w.seq), [5, 6, 7]);
  checkAll('bob after resume', await bobPeer.messages(3), room, missed);
  for (const m of bobPeer.inbox) assert.ok(m.headers.ack, `MESSAGE seq ${m.headers.seq} to a client-individual subscription has an ack header`);
  await send(bobPeer, 'here now', 'b3');
  const last = { seq: 8, from: bob, body: 'here now', clientId: 'b3' };
  checkAll('bob', await bobPeer.messages(4), room, [...missed, last]);
  checkAll('alice', await alicePeer.messages(8), room, [...want, ...missed, last]);
  // A frame sent after everything else: once alice has it, bob's inbox
  // would show any duplicate of seq 5–8.
  await send(alicePeer, 'bye', 'a6');
  await bobPeer.messages(5);
  assert.equal(bobPeer.seqs(), '5,6,7,8,9', 'bob: no gap, no duplicate');
  await alicePeer.messages(9);
  assert.equal(alicePeer.seqs(), '1,2,3,4,5,6,7,8,9', 'alice: no gap, no duplicate');
  assert.deepEqual([...alicePeer.errors, ...bobPeer.errors], [], 'no ERROR frames');

  stored = await history();
  assert.deepEqual(stored.map((m) => m.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);

  // The room list: bob has alice's last message unread, alice nothing.
  const entry = async (user) => {
    const res = await api('GET', '/api/me/rooms', { token: user.token });
    assert.equal(res.status, 200);
    const e = res.body.rooms.find((r) => r.room.id === room.id);
    assert.ok(e, `${user.name}'s room list has the room: ${JSON.stringify(res.body)}`);
    return e;
  };
  let e = await entry(bob);
  assert.equal(e.unread, 1, `bob's unread: ${JSON.stringify(e)}`);
  assert.equal(e.room.last_seq, 9);
  assert.equal(e.last_message.seq, 9);
  assert.equal(e.last_message.body, 'bye');
  assert.equal(e.last_message.sender_id, alice.id);
  assert.equal(e.last_message.client_id, 'a6');
  e = await entry(alice);
  assert.equal(e.unread, 0, `alice's unread: ${JSON.stringify(e)}`);
  assert.equal(e.last_message.seq, 9);
  const read = await api('PUT', `/api/rooms/${room.id}/read`, { token: bob.token, body: { seq: 9 } });
  assert.equal(read.status, 204);
  e = await entry(bob);
  assert.equal(e.unread, 0, `bob's unread after reading: ${JSON.stringify(e)}`);

  await alicePeer.close();
  await bobPeer.close();
});

test('stomp.js with a wrong token gets an ERROR frame', async () => {
  const peer = new Peer({ name: 'nobody' }, { Authorization: 'Bearer not-a-token' });
  try {
    let connected = false;
    peer.client.onConnect = () => {
      connected = true;
    };
    peer.client.activate();
    await peer.until('ERROR frame for a wrong token', () => peer.errors.length > 0);
    assert.equal(connected, false);
    assert.ok(peer.errors[0].headers.message, `ERROR has a message header: ${JSON.stringify(peer.errors[0].headers)}`);
    // The server closes the connection after the ERROR, with a Close frame.
    await peer.until('socket closed after the ERROR', () => peer.closes.length > 0);
    assert.equal(peer.closes[0].code, 1000, 'WebSocket close status after the ERROR');
  } finally {
    await peer.client.deactivate({ force: true }).catch(() => {});
  }
});
