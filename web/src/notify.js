// Desktop notifications (the Notification API) for direct messages while
// the tab is hidden. The page never asks on load: it asks when the user
// presses "Turn on notifications" (the account menu), or answers the
// small prompt shown after the first message they send. Unread counts in
// the room list and the tab title are app.js's.
//
// Mentions (issue 31): a message whose `mentions` names the user (or
// @room) notifies like a direct message does. The room's level decides
// (docs/api.md "Mentions and notifications"): all: direct messages and
// mentions; mentions: mentions only; none: nothing.

import { $, setText } from './dom.js';

const askedKey = 'parley.notify.asked';

/** shouldNotify decides whether message m of room (the room list's entry) calls for a notification at level (all, mentions, none). */
export function shouldNotify(m, room, me, level = 'all') {
  if (!m || !me || m.sender_id === me.id || m.deleted_at || level === 'none') return false;
  const mentioned = Array.isArray(m.mentions) && m.mentions.some((x) => x === me.id || x === '@room');
  if (mentioned) return true;
  return level === 'all' && !!room && room.kind === 'direct';
}

export class Notifier {
  constructor(app) {
    this.app = app;
    this.seen = new Set(); // room id + seq notified, as a message may come on two subscriptions
    this.waiting = []; // messages of rooms the list does not know yet (a new direct chat): decided once it does
    this.supported = typeof window !== 'undefined' && 'Notification' in window;
    $('notify-button').addEventListener('click', () => this.ask());
    $('notify-yes').addEventListener('click', () => this.ask());
    $('notify-no').addEventListener('click', () => {
      localStorage.setItem(askedKey, 'no');
      $('notify-prompt').hidden = true;
    });
    this.render();
  }

  get permission() {
    return this.supported ? Notification.permission : 'unsupported';
  }

  render() {
    const p = this.permission;
    $('notify-button').hidden = p !== 'default';
    $('notify-state').hidden = p === 'default';
    setText($('notify-state'), p === 'granted' ? 'Notifications are on for direct messages.'
      : p === 'denied' ? 'Notifications are blocked in this browser’s site settings.' : 'This browser has no notifications.');
  }

  /** ask requests the permission (from a click: browsers want a user gesture). */
  async ask() {
    $('notify-prompt').hidden = true;
    localStorage.setItem(askedKey, 'yes');
    if (!this.supported) return;
    try {
      await Notification.requestPermission();
    } catch {
      // an old browser's callback form: the state is read below anyway
    }
    this.render();
  }

  /** sentFirst is called after the user's message is stored: a sensible moment to offer notifications, once. */
  sentFirst() {
    if (this.permission !== 'default' || localStorage.getItem(askedKey)) return;
    $('notify-prompt').hidden = false;
  }

  /** roomsLoaded decides on the messages that waited for the room list. */
  roomsLoaded() {
    const waiting = this.waiting;
    this.waiting = [];
    for (const m of waiting) if (this.app.rooms.has(m.room_id)) this.onMessage(m);
  }

  /** onMessage takes every live message; it notifies when the tab is hidden and the message calls for it. */
  onMessage(m) {
    if (this.permission !== 'granted' || document.visibilityState === 'visible') return;
    const entry = this.app.rooms.get(m.room_id);
    if (!entry) {
      if (this.waiting.length < 50) this.waiting.push(m);
      return;
    }
    if (!shouldNotify(m, entry.room, this.app.me, entry.notifications)) return;
    const key = m.room_id + '/' + m.seq;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const title = entry ? this.app.roomName(entry.room, m) : m.sender_name;
    try {
      const n = new Notification(entry && entry.room.kind === 'direct' ? m.sender_name : `${m.sender_name} in ${title}`, {
        body: String(m.body || '').slice(0, 200),
        tag: 'parley-' + m.room_id,
      });
      n.onclick = () => {
        window.focus();
        location.hash = '#/room/' + encodeURIComponent(m.room_id);
        n.close();
      };
    } catch {
      // a platform that wants a service worker for notifications: skip
    }
  }
}
