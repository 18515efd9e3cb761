// The chat view of one room: history loaded newest first and older pages on
// scrolling up, live messages in seq order, sends shown as "sending…" until
// their RECEIPT, and the read position sent while the view is at the bottom.

import { $, h, setText, randomId } from './dom.js';
import { Changes } from './changes.js';
import { composerReply, excerptOf, threads } from './threads.js';
import { pins } from './pins.js';
import { People } from './members.js';
import { renderMarkdown } from './markdown.js';
import { highlightMentions } from './mentions.js';
import { renderFiles } from './files.js';
import { avatar, botBadge, clock, isBot, markFirstUnread, msgTime, refreshTimes, regroup } from './timeline.js';

const pageSize = 50;

/** refusal says why the server refused a send, in words, with its own text. */
function refusal({ code, text }) {
  const why = {
    too_large: 'the message is too long',
    rate_limited: 'too many messages at once; wait a moment and send it again',
    forbidden: 'you are not a member of this room',
    not_found: 'this room does not exist',
    invalid: 'the server did not accept it',
  }[code];
  return why ? `${why} (${text})` : text;
}

export class ChatView {
  constructor(app, roomId, target = 0) {
    this.app = app;
    this.roomId = roomId;
    this.target = target; // a seq to open the room at (a search hit), 0: the newest
    this.room = null;
    this.msgs = new Map(); // seq -> message, confirmed ones
    this.pending = new Map(); // client id -> {el, body}
    this.minSeq = 0; // lowest seq shown (0: none)
    this.maxSeq = 0; // highest seq shown: live resumes after it
    this.hasOlder = false;
    this.loadingOlder = false;
    this.readSent = 0;
    this.closed = false;
    this.pinned = false; // a search hit is in view: keep it there

    this.list = $('messages');
    this.scroller = $('messages-scroll');
    this.onScroll = () => this.scrolled();
    this.onVisible = () => this.maybeMarkRead();
    // The first unread message gets the "New messages" line: what the room
    // list knew was read when the room opened.
    const entry = app.rooms.get(roomId);
    this.readBefore = entry && entry.room.last_seq > entry.readSeq ? entry.readSeq : -1;
    this.timesTimer = 0;
    this.people = new People(app, this); // members, typing, seen (members.js)
    this.changes = new Changes(app, this); // edits and deletions (changes.js)
  }

  async open() {
    const app = this.app;
    this.list.replaceChildren();
    setText($('history-status'), 'Loading…');
    setText($('chat-error'), '');
    $('load-older').hidden = true;
    $('invite').hidden = true;
    const entry = app.rooms.get(this.roomId);
    this.showRoom(entry ? entry.room : null);
    $('chat-view').hidden = false;
    this.scroller.addEventListener('scroll', this.onScroll, { passive: true });
    document.addEventListener('visibilitychange', this.onVisible);
    window.addEventListener('focus', this.onVisible);
    try {
      // A search hit opens the page that ends with it (before=seq+1) and
      // the page after it; the live resume then brings the rest.
      const t = this.target;
      const [room, page, newer] = await Promise.all([
        app.api.room(this.roomId),
        app.api.messages(this.roomId, t ? { before: t + 1, limit: pageSize } : { limit: pageSize }),
        t ? app.api.messages(this.roomId, { after: t, limit: pageSize }) : null,
      ]);
      if (this.closed) return;
      this.showRoom(room);
      for (const m of page.messages) this.insert(m);
      if (newer) for (const m of newer.messages) this.insert(m);
      this.markUnread();
      this.hasOlder = page.messages.length === pageSize && this.minSeq > 1;
      setText($('history-status'), this.msgs.size === 0 ? 'No messages yet. Say hello!' : '');
      this.updateOlderButton();
      if (!this.target || !this.showTarget(this.target)) {
        this.scrollToBottom();
        this.showFirstUnread();
      }
      this.changes.start(room);
    } catch (e) {
      if (this.closed) return;
      setText($('history-status'), '');
      setText($('chat-error'), e.code === 'forbidden' || e.code === 'not_found'
        ? 'You are not a member of this room.'
        : 'Could not load the room: ' + e.message);
      return;
    }
    // Live from here: the subscription resumes after the newest message
    // shown, so whatever was sent while the page loaded arrives too.
    app.live.openRoom(this.roomId, () => this.maxSeq);
    this.timesTimer = setInterval(() => refreshTimes(this.list), 30000);
    this.people.open();
    pins.attach(this); // the Pinned panel shows this room (pins.js)
    this.fillViewport();
    this.maybeMarkRead();
  }

  /** showTarget scrolls message seq into view and marks it; false when it is not shown. */
  showTarget(seq) {
    const el = this.list.querySelector(`li[data-seq="${seq}"]`);
    if (!el) return false;
    for (const o of this.list.querySelectorAll('.msg-target')) o.classList.remove('msg-target');
    el.classList.add('msg-target');
    el.scrollIntoView({ block: 'center' });
    this.pinned = true; // new messages do not scroll it away until the reader scrolls down
    return true;
  }

  /**
   * showFirstUnread: when the "New messages" line is above the screen
   * after scrolling to the newest, the room opens at the line instead,
   * and stays there (as at a search hit) until the reader scrolls down.
   */
  showFirstUnread() {
    const li = this.list.querySelector('.first-unread');
    if (!li) return;
    const top = li.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    if (top >= 0) return;
    this.scroller.scrollTop += top - 8;
    this.pinned = true;
  }

  /** markUnread draws the "New messages" line above the first message after the read position. */
  markUnread() {
    if (this.readBefore < 0) return;
    const me = this.app.me.id;
    let first = null;
    for (const li of this.list.querySelectorAll('li[data-seq]')) {
      if (Number(li.dataset.seq) > this.readBefore && li.dataset.sender !== me) { first = li; break; }
    }
    if (first) markFirstUnread(this.list, first);
  }

  close() {
    this.closed = true;
    composerReply.cancel();
    threads.close(this); // the thread panel shows this room's thread (threads.js)
    pins.close(this); // pins.js
    clearInterval(this.timesTimer);
    this.people.close();
    if (this.app.live) this.app.live.closeRoom(this.roomId);
    this.scroller.removeEventListener('scroll', this.onScroll);
    document.removeEventListener('visibilitychange', this.onVisible);
    window.removeEventListener('focus', this.onVisible);
    $('chat-view').hidden = true;
    this.list.replaceChildren();
  }

  /** showRoom fills the header: title and member count. */
  showRoom(room) {
    if (room) this.room = room;
    const r = this.room;
    setText($('chat-title'), r ? this.app.roomName(r) : '');
    let members = '';
    if (r && r.kind === 'direct') members = 'Direct chat';
    else if (r && r.capacity > 0) members = `${r.member_count} of ${r.capacity} seats taken`;
    else if (r) members = r.member_count === 1 ? '1 member' : `${r.member_count} members`;
    setText($('chat-members'), members);
    $('invite-button').hidden = !r || r.kind === 'direct';
  }

  /** refresh reloads the room info, e.g. after a reconnect. */
  async refresh() {
    try {
      const room = await this.app.api.room(this.roomId);
      if (this.closed || this.people.isGone) return;
      this.showRoom(room);
      this.people.load(); // presence and reads moved while the connection was down
      this.changes.catchUp(); // edits and deletions made while it was down
    } catch {
      // keep what is shown
    }
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 40;
  }

  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** onMessage takes a live message of this room (in seq order from the server). */
  onMessage(m) {
    const wasAtBottom = this.atBottom();
    const gap = this.maxSeq > 0 && m.seq > this.maxSeq + 1;
    const unseen = m.sender_id !== this.app.me.id && !this.msgs.has(m.seq) &&
      (document.visibilityState !== 'visible' || !wasAtBottom) && !this.list.querySelector('.first-unread');
    this.insert(m);
    if (unseen) markFirstUnread(this.list, this.list.querySelector(`li[data-seq="${m.seq}"]`));
    this.people.onMessage(m);
    setText($('history-status'), '');
    if (!this.pinned && (wasAtBottom || m.sender_id === this.app.me.id)) this.scrollToBottom();
    if (gap) this.fillGap();
    this.maybeMarkRead();
  }

  /** fillGap fetches what a hole in the seqs left out (the server promises none). */
  async fillGap() {
    let after = 0;
    for (let s = this.minSeq; s <= this.maxSeq; s++) {
      if (!this.msgs.has(s)) { after = s - 1; break; }
    }
    try {
      const page = await this.app.api.messages(this.roomId, { after, limit: 100 });
      if (!this.closed) for (const m of page.messages) this.insert(m);
    } catch {
      // the next reconnect resumes anyway
    }
  }

  /** insert places a confirmed message by seq; a duplicate is ignored. */
  insert(m) {
    const p = m.client_id && m.sender_id === this.app.me.id ? this.pending.get(m.client_id) : null;
    if (p) {
      p.el.remove();
      this.pending.delete(m.client_id);
    }
    if (this.msgs.has(m.seq)) {
      this.changes.apply(m); // a later version (a page read after an edit) replaces the shown one
      return;
    }
    this.msgs.set(m.seq, m);
    this.minSeq = this.minSeq === 0 ? m.seq : Math.min(this.minSeq, m.seq);
    this.maxSeq = Math.max(this.maxSeq, m.seq);
    const el = this.render(m);
    // Find the first confirmed element with a larger seq, from the end
    // (new messages are the common case), else the first pending one.
    let before = null;
    for (let c = this.list.lastElementChild; c; c = c.previousElementSibling) {
      if (c.dataset.seq === undefined) { before = c; continue; }
      if (Number(c.dataset.seq) > m.seq) before = c;
      else break;
    }
    this.list.insertBefore(el, before);
    regroup(el);
    threads.onMessage(this, m); // a reply of the open thread (threads.js)
  }

  /**
   * render draws one message: avatar, name and time (hidden on a message
   * that continues its sender's group, which shows its time on hover),
   * the body as formatted text (markdown.js), the toolbar (changes.js).
   */
  render(m, status) {
    const mine = m.sender_id === this.app.me.id;
    const name = mine ? this.app.me.name : m.sender_name || 'Someone';
    const attrs = { class: mine ? 'msg mine' : 'msg', dataset: { sender: m.sender_id, at: m.sent_at || '' } };
    if (m.seq) attrs.dataset.seq = String(m.seq);
    const el = h('li', attrs,
      h('div', { class: 'msg-gutter' },
        avatar(name),
        m.sent_at ? h('time', { class: 'msg-clock', datetime: m.sent_at, 'aria-hidden': 'true' }, clock(m.sent_at)) : null),
      h('div', { class: 'msg-main' },
        h('div', { class: 'msg-meta' },
          h('span', { class: 'msg-sender' }, name),
          isBot(m.sender_id) ? botBadge() : null,
          m.sent_at ? msgTime(m.sent_at) : null,
        ),
        h('div', { class: 'msg-body' }, ...highlightMentions(renderMarkdown(m.body || ''), m, this.app.me)),
        m.deleted_at ? null : renderFiles(this.app.api, m.files),
        status ? h('p', { class: 'msg-status' }, status) : null,
      ),
    );
    this.changes.decorate(el, m);
    return el;
  }

  /** send shows the message as sending and hands it to the live connection. */
  send(body, replyTo = 0, files = []) {
    const clientId = randomId();
    // A reply shows its quote while sending; the root is the one shown.
    const root = replyTo ? this.msgs.get(replyTo) : null;
    const ref = replyTo ? { seq: replyTo, sender_name: root ? root.sender_name : '', excerpt: root && !root.deleted_at ? excerptOf(root.body) : '' } : null;
    const el = this.render({ sender_id: this.app.me.id, body, reply_to: ref, files }, 'sending…');
    el.classList.add('pending');
    el.dataset.clientId = clientId;
    this.pending.set(clientId, { el, body, ref, files });
    this.list.append(el);
    regroup(el);
    setText($('history-status'), '');
    this.pinned = false;
    this.scrollToBottom();
    this.app.live.send(this.roomId, body, clientId, replyTo, files);
  }

  /** onSendResult settles a pending message; false when it is not this view's. */
  onSendResult(clientId, r) {
    const p = this.pending.get(clientId);
    if (!p) return false;
    if (r.error) {
      p.el.classList.remove('pending');
      p.el.classList.add('failed');
      const status = p.el.querySelector('.msg-status');
      status.replaceChildren(
        document.createTextNode('Not sent: ' + refusal(r.error)),
        h('button', { type: 'button', class: 'secondary', onclick: () => {
          p.el.remove();
          this.pending.delete(clientId);
        } }, 'Dismiss'),
      );
      status.setAttribute('role', 'alert');
      return true;
    }
    this.pending.delete(clientId);
    p.el.remove();
    // The RECEIPT may come before the MESSAGE: show it as sent now; the
    // MESSAGE with the same seq then replaces this stand-in (newer,
    // changes.js), which lacks the mentions the server resolved.
    this.insert({
      fromReceipt: true,
      id: r.messageId, room_id: this.roomId, seq: r.seq, sender_id: this.app.me.id,
      sender_name: this.app.me.name, body: p.body, client_id: clientId, sent_at: new Date().toISOString(),
      ...(p.ref ? { reply_to: p.ref } : {}),
      files: p.files && p.files.length ? p.files : undefined,
    });
    this.app.ownMessageStored(this.roomId, r.seq);
    this.maybeMarkRead();
    return true;
  }

  scrolled() {
    if (this.pinned && this.atBottom()) this.pinned = false; // the reader came down to the newest
    if (this.scroller.scrollTop < 80) this.loadOlder();
    this.maybeMarkRead();
  }

  updateOlderButton() {
    $('load-older').hidden = !this.hasOlder;
  }

  /** loadOlder prepends the page just older than the oldest shown (REST before=). */
  async loadOlder() {
    if (!this.hasOlder || this.loadingOlder || this.closed) return;
    this.loadingOlder = true;
    setText($('history-status'), 'Loading older messages…');
    try {
      const page = await this.app.api.messages(this.roomId, { before: this.minSeq, limit: pageSize });
      if (this.closed) return;
      const s = this.scroller;
      const fromBottom = s.scrollHeight - s.scrollTop;
      for (const m of page.messages) this.insert(m);
      s.scrollTop = s.scrollHeight - fromBottom; // keep what the reader was looking at in place
      this.hasOlder = page.messages.length === pageSize && this.minSeq > 1;
      setText($('history-status'), this.hasOlder ? '' : 'This is the start of the conversation.');
    } catch (e) {
      setText($('history-status'), 'Could not load older messages: ' + e.message);
    } finally {
      this.loadingOlder = false;
      this.updateOlderButton();
    }
  }

  /** fillViewport loads older pages until the list can scroll (so scrolling up can load more). */
  async fillViewport() {
    for (let i = 0; i < 5 && this.hasOlder && !this.closed; i++) {
      if (this.scroller.scrollHeight > this.scroller.clientHeight + 80) return;
      await this.loadOlder();
    }
  }

  /** maybeMarkRead sends the read position when the newest message is in view. */
  maybeMarkRead() {
    if (this.closed || document.visibilityState !== 'visible' || !this.atBottom()) return;
    const seq = this.maxSeq;
    if (seq <= this.readSent) return;
    this.readSent = seq;
    this.app.markedRead(this.roomId, seq);
    this.app.api.markRead(this.roomId, seq).catch(() => {
      if (this.readSent === seq) this.readSent = 0; // try again on the next scroll
    });
  }
}
