// The live connection: STOMP 1.2 over WebSocket (docs/stomp.md, "Real time") with
// @stomp/stompjs. It reconnects by itself; on every (re)connect it
// subscribes to the personal queue and resumes each open room with
// since-seq, so nothing is missed across a drop, then resends the messages
// that had no RECEIPT yet under their original client-id (the server stores
// a client-id once).

import { Client, ReconnectionTimeMode } from '@stomp/stompjs';
import { eventOf, userEvents, roomEvents } from './events.js';

const userQueue = '/user/queue/messages';

// A message that was in flight when the connection died this many times in
// a row is given up: something about it is refused without a receipt-id.
const maxAttempts = 4;

/** messageOf turns a MESSAGE frame into the REST message shape. */
export function messageOf(frame) {
  const hd = frame.headers;
  return {
    id: hd['message-id'],
    room_id: hd.room,
    seq: Number(hd.seq),
    sender_id: hd.sender,
    sender_name: hd['sender-name'],
    body: frame.body,
    client_id: hd['client-id'] || '',
    sent_at: hd['sent-at'],
    // A replayed message says how it stands now (docs/stomp.md).
    edited_at: hd['edited-at'] || null,
    deleted_at: hd.deleted === 'true' ? hd['deleted-at'] || hd['sent-at'] : null,
    change: Number(hd.change || 0),
    // A reply names its thread's root (docs/stomp.md).
    ...(hd['reply-to'] ? { reply_to: { seq: Number(hd['reply-to']), sender_name: hd['reply-to-sender'] || '', excerpt: hd['reply-to-excerpt'] || '' } } : {}),
    files: filesOf(hd.files),
    // The members the text mentions (docs/stomp.md): ids and "@room".
    ...(hd.mentions ? { mentions: hd.mentions.split(',') } : {}),
  };
}

/** filesOf reads a MESSAGE frame's files header (a JSON array; docs/files.md). */
function filesOf(header) {
  if (!header) return undefined;
  try {
    const fs = JSON.parse(header);
    return Array.isArray(fs) ? fs : undefined;
  } catch {
    return undefined;
  }
}

export class Live {
  /**
   * @param {object} o
   * @param {string} o.token access token
   * @param {(state: string) => void} o.onState 'connecting', 'live', 'reconnecting', 'stopped'
   * @param {(m: object) => void} o.onUserMessage a message of any of the user's rooms
   * @param {(m: object) => void} o.onRoomMessage a message of an open room, in seq order
   * @param {(roomId: string, err: {code: string, text: string}) => void} o.onRoomError the room's subscription was refused
   * @param {(clientId: string, r: {seq?: number, messageId?: string, error?: {code: string, text: string}}) => void} o.onSendResult
   * @param {(err: {code: string, text: string}) => void} o.onError a refusal of the session
   * @param {() => void} o.onConnected after every (re)connect, once the subscriptions are sent
   * @param {(err: {code: string, text: string}) => void} o.onAuthFailed the token was refused (expired or revoked)
   * @param {(ev: object) => void} [o.onEvent] a room event (events.js eventOf) of any of the user's rooms or an open one
   */
  constructor(o) {
    this.o = o;
    this.rooms = new Map(); // open room id -> since(): the seq to resume after
    this.queue = []; // sends waiting for a RECEIPT, in order: {roomId, body, clientId, attempts}
    this.inflight = null; // the queue head when sent on this connection
    this.sendReceipts = new Map(); // receipt id -> queue item, this connection
    this.subReceipts = new Map(); // receipt id -> room id, this connection
    this.roomSubs = new Map(); // room id -> stompjs subscription, this connection
    this.eventSubs = new Map(); // room id -> stompjs subscription of the room's events, this connection
    this.eventReceipts = new Map(); // receipt id -> room id ('' for the personal queue), this connection
    this.eventsRefused = new Set(); // room ids ('' for the personal queue) whose events the server does not serve
    this.counter = 0;
    this.refused = false; // an ERROR came: the server is closing this connection
    this.evicted = null; // the ERROR forbidden that ended the last connection, not yet attributed to a room
    this.state = 'connecting';

    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.client = new Client({
      brokerURL: proto + '//' + location.host + '/ws',
      connectHeaders: { Authorization: 'Bearer ' + o.token },
      reconnectDelay: 500,
      maxReconnectDelay: 8000,
      reconnectTimeMode: ReconnectionTimeMode.EXPONENTIAL,
      connectionTimeout: 10000,
      heartbeatIncoming: 10000,
      heartbeatOutgoing: 10000,
      debug: () => {},
      onConnect: () => this.connected(),
      onStompError: (f) => this.stompError(f),
      onWebSocketClose: () => this.closed(),
    });
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.o.onState(s);
  }

  start() {
    this.setState('connecting');
    this.client.activate();
  }

  stop() {
    this.setState('stopped');
    this.client.deactivate();
  }

  get live() {
    return this.client.connected;
  }

  connected() {
    this.refused = false;
    this.sendReceipts.clear();
    this.subReceipts.clear();
    this.roomSubs.clear();
    this.eventSubs.clear();
    this.eventReceipts.clear();
    this.inflight = null;
    this.setState('live');
    this.client.subscribe(userQueue, (f) => this.o.onUserMessage(messageOf(f)), { id: 'user' });
    if (this.o.onEvent && !this.eventsRefused.has('')) {
      this.client.subscribe(userEvents, (f) => this.o.onEvent(eventOf(f)), { id: 'user-events', receipt: this.eventReceipt('') });
    }
    for (const roomId of this.rooms.keys()) this.subscribeRoom(roomId);
    this.o.onConnected();
    this.pump();
  }

  closed() {
    this.inflight = null;
    if (this.state !== 'stopped') this.setState('reconnecting');
  }

  /**
   * openRoom subscribes to a room's topic; since() gives the last seq the
   * view has, so that a resume sends everything after it.
   */
  openRoom(roomId, since) {
    this.rooms.set(roomId, since);
    if (this.client.connected) this.subscribeRoom(roomId);
  }

  closeRoom(roomId) {
    this.rooms.delete(roomId);
    for (const subs of [this.roomSubs, this.eventSubs]) {
      const sub = subs.get(roomId);
      subs.delete(roomId);
      if (sub && this.client.connected) sub.unsubscribe();
    }
  }

  /** eventReceipt names a SUBSCRIBE to events, so that a refusal of it is known as such. */
  eventReceipt(roomId) {
    const receipt = 'events-' + ++this.counter;
    this.eventReceipts.set(receipt, roomId);
    this.client.watchForReceipt(receipt, () => this.eventReceipts.delete(receipt));
    return receipt;
  }

  /** typing tells the room's members that this user is typing (an empty SEND, never stored). */
  typing(roomId) {
    if (!this.client.connected || this.refused) return;
    this.client.publish({ destination: '/app/rooms.' + roomId + '.typing', body: '' });
  }

  subscribeRoom(roomId) {
    const since = this.rooms.get(roomId)();
    const receipt = 'sub-' + ++this.counter;
    this.subReceipts.set(receipt, roomId);
    this.client.watchForReceipt(receipt, () => this.subReceipts.delete(receipt));
    const headers = { id: 'room-' + roomId, receipt };
    if (since !== null && since !== undefined) headers['since-seq'] = String(since);
    const sub = this.client.subscribe('/topic/rooms.' + roomId, (f) => {
      if (this.rooms.has(roomId)) this.o.onRoomMessage(messageOf(f));
    }, headers);
    this.roomSubs.set(roomId, sub);
    if (this.o.onEvent && !this.eventsRefused.has(roomId)) {
      const evs = this.client.subscribe(roomEvents(roomId), (f) => {
        if (this.rooms.has(roomId)) this.o.onEvent(eventOf(f));
      }, { id: 'events-' + roomId, receipt: this.eventReceipt(roomId) });
      this.eventSubs.set(roomId, evs);
    }
  }

  /** send queues a message; onSendResult tells its outcome. */
  send(roomId, body, clientId, replyTo = 0, files = []) {
    this.queue.push({ roomId, body, clientId, replyTo, files, attempts: 0 });
    this.pump();
  }

  /** pump sends the head of the queue: one SEND in flight at a time. */
  pump() {
    if (this.inflight || this.refused || !this.client.connected || this.queue.length === 0) return;
    const item = this.queue[0];
    if (item.attempts >= maxAttempts) {
      this.queue.shift();
      this.o.onSendResult(item.clientId, {
        error: { code: 'unavailable', text: 'the connection was lost each time this message was sent' },
      });
      this.pump();
      return;
    }
    item.attempts++;
    this.inflight = item;
    const receipt = 'send-' + ++this.counter;
    this.sendReceipts.set(receipt, item);
    this.client.watchForReceipt(receipt, (f) => {
      this.sendReceipts.delete(receipt);
      this.finish(item, { seq: Number(f.headers.seq), messageId: f.headers['message-id'] });
    });
    this.client.publish({
      destination: '/app/rooms.' + item.roomId,
      body: item.body,
      headers: {
        receipt,
        'client-id': item.clientId,
        ...(item.replyTo ? { 'reply-to': String(item.replyTo) } : {}),
        ...(item.files.length > 0 ? { files: item.files.map((f) => f.id).join(',') } : {}),
      },
    });
  }

  finish(item, result) {
    const i = this.queue.indexOf(item);
    if (i >= 0) this.queue.splice(i, 1);
    if (this.inflight === item) this.inflight = null;
    this.o.onSendResult(item.clientId, result);
    this.pump();
  }

  /** stompError attributes an ERROR frame; the server closes the socket after it and stompjs reconnects. */
  stompError(f) {
    this.refused = true; // the server closes this connection: send nothing more on it
    const code = f.headers.code || '';
    const text = (f.body || '').trim() || f.headers.message || 'refused';
    const err = { code, text };
    const rid = f.headers['receipt-id'];
    if (rid && this.sendReceipts.has(rid)) {
      const item = this.sendReceipts.get(rid);
      this.sendReceipts.delete(rid);
      this.finish(item, { error: err });
      return;
    }
    if (rid && this.subReceipts.has(rid)) {
      const roomId = this.subReceipts.get(rid);
      this.subReceipts.delete(rid);
      this.rooms.delete(roomId);
      this.roomSubs.delete(roomId);
      this.eventSubs.delete(roomId);
      this.o.onRoomError(roomId, this.evicted || err);
      this.evicted = null;
      return;
    }
    if (rid && this.eventReceipts.has(rid)) {
      // A server without room events (or with them off) refuses the
      // subscription: the chat goes on without them.
      const roomId = this.eventReceipts.get(rid);
      this.eventReceipts.delete(rid);
      this.eventSubs.delete(roomId);
      if (code === 'forbidden' && roomId) {
        this.rooms.delete(roomId);
        this.roomSubs.delete(roomId);
        this.o.onRoomError(roomId, this.evicted || err);
        this.evicted = null;
      } else {
        this.eventsRefused.add(roomId);
      }
      return;
    }
    // A room subscription ended by the server (the user was removed from
    // the room) names the subscription.
    const subId = f.headers.subscription || '';
    const ended = /^(?:room|events)-(.+)$/.exec(subId);
    if (ended && this.rooms.has(ended[1])) {
      const roomId = ended[1];
      this.rooms.delete(roomId);
      this.roomSubs.delete(roomId);
      this.eventSubs.delete(roomId);
      this.o.onRoomError(roomId, err);
      return;
    }
    // A frame over the size limit is refused before its headers are read,
    // so without receipt-id: it is the one SEND in flight.
    if (code === 'too_large' && this.inflight) {
      this.finish(this.inflight, { error: err });
      return;
    }
    if (code === 'unauthorized') {
      this.stop();
      this.o.onAuthFailed(err);
      return;
    }
    // The server ends a session whose user was removed from one of its
    // open rooms with ERROR forbidden; after the reconnect that room's
    // subscription is refused, which names it, and gets this reason.
    if (code === 'forbidden') {
      this.evicted = err;
      return;
    }
    this.o.onError(err);
  }
}
