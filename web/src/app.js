// Parley's browser client. The page (index.html) holds the structure; this
// script signs in, keeps the room list current from /user/queue/messages,
// and runs one chat view at a time. Routes live in the URL fragment:
// #/room/{id} opens a room, #/join/{id} is an invite link.

import { bindAccount, resumeDelete } from './account.js';
import { finishOIDC, showMethods } from './signin.js';
import { Api } from './api.js';
import { ChatView } from './chat.js';
import { Attachments } from './files.js';
import { $, h, setText, shortTime } from './dom.js';
import { Live } from './live.js';
import { preview } from './changes.js';
import { roomEvent, roomRefused } from './members.js';
import { Search } from './search.js';
import { ComposerLimit, copyInvite, fullText, isFull, unreadTitle } from './polish.js';
import { bindTouch } from './actions.js';
import { bindConfirm } from './confirm.js';
import { Notifier } from './notify.js';
import { panel } from './panel.js';
import { composerReply, threads } from './threads.js';
import { pins } from './pins.js';
import { Switcher } from './switcher.js';
import { MentionComplete, NotifySetting, mentionCount } from './mentions.js';

/** members says a member count in words: "1 member", "3 members". */
export function members(n) {
  return n === 1 ? '1 member' : `${n} members`;
}

const tokenKey = 'parley.token';

class App {
  constructor() {
    this.api = new Api(localStorage.getItem(tokenKey) || '');
    this.me = null;
    this.live = null;
    this.rooms = new Map(); // room id -> {room, last, readSeq}
    this.view = null; // the open ChatView
    this.peers = {}; // direct room id -> the other user's name, for rooms started here
    this.everConnected = false;
    this.refreshTimer = 0;
    this.roomsRequest = 0; // the latest room list load
  }

  async boot() {
    this.bindForms();
    window.addEventListener('hashchange', () => this.route());
    const oidc = await finishOIDC(this.api); // back from the OpenID provider (signin.js)
    if (oidc.token) {
      this.api.token = oidc.token;
      localStorage.setItem(tokenKey, oidc.token);
      this.startSession(oidc.user);
      resumeDelete(this); // a sign-in made to delete the account (account.js)
      return;
    }
    if (oidc.error) {
      this.showAuth(oidc.error);
      return;
    }
    if (this.api.token) {
      try {
        this.startSession(await this.api.me());
        return;
      } catch (e) {
        if (e.status !== 401) {
          this.showBanner('Could not reach the server: ' + e.message);
        }
      }
    }
    this.showAuth();
  }

  // ---- accounts

  showAuth(message = '') {
    $('chat-app').hidden = true;
    $('whoami').hidden = true;
    $('auth').hidden = false;
    setText($('auth-error'), message);
    this.setConn('offline');
    $('auth-name').focus();
    showMethods(this.api); // the OpenID button, the password form (signin.js)
  }

  async authenticate(action, name, password) {
    const err = $('auth-error');
    setText(err, '');
    if (!name || !password) {
      setText(err, 'Enter a user name and a password.');
      return;
    }
    try {
      if (action === 'signup') await this.api.register(name, password);
      const r = await this.api.login(name, password);
      this.api.token = r.token;
      localStorage.setItem(tokenKey, r.token);
      $('auth-password').value = '';
      this.startSession(r.user);
    } catch (e) {
      if (e.code === 'name_taken') setText(err, `The name “${name}” is taken: pick another, or log in.`);
      else if (e.status === 401 && action === 'login') setText(err, `Wrong user name or password. New here? Choose “Sign up” to create the account “${name}”.`);
      else if (e.status === 401) setText(err, 'Wrong user name or password.');
      else setText(err, e.message);
    }
  }

  startSession(me) {
    this.me = me;
    try {
      this.peers = JSON.parse(localStorage.getItem('parley.peers.' + me.id) || '{}');
    } catch {
      this.peers = {};
    }
    $('auth').hidden = true;
    $('chat-app').hidden = false;
    $('whoami').hidden = false;
    setText($('me-name'), me.name);
    this.live = new Live({
      token: this.api.token,
      onState: (s) => this.setConn(s),
      onConnected: () => this.connected(),
      onUserMessage: (m) => {
        this.noteMessage(m);
        this.notifier.onMessage(m);
      },
      onRoomMessage: (m) => {
        this.noteMessage(m);
        this.notifier.onMessage(m);
        if (this.view && this.view.roomId === m.room_id) this.view.onMessage(m);
      },
      onRoomError: (roomId, err) => {
        if (this.view && this.view.roomId === roomId) setText($('chat-error'), 'This room is closed to you: ' + err.text);
        roomRefused(this, roomId, err);
      },
      onEvent: (ev) => roomEvent(this, ev),
      onSendResult: (clientId, r) => {
        const mine = this.view && this.view.onSendResult(clientId, r);
        if (!mine && r.error) this.showBanner('A message was not sent: ' + r.error.text);
      },
      onError: (err) => this.showBanner(err.code === 'unavailable'
        ? 'The server is restarting: reconnecting…'
        : 'The server closed the connection (' + err.text + '): reconnecting…'),
      // After a logout (this.live gone) the stopped connection may still
      // read the server's ERROR that ended the session: the logout's own
      // message (an account deleted, say) stays.
      onAuthFailed: (err) => {
        if (this.live) this.logout('Your session has ended' + (err ? ' (' + err.text + ')' : '') + ': log in again.');
      },
    });
    this.live.start();
    this.loadLimits();
    this.loadRooms();
    this.route();
  }

  /** loadLimits reads the server's limits, so the composer checks before sending. */
  async loadLimits() {
    try {
      const c = await this.api.config();
      this.limit.setMax(c.max_body);
    } catch {
      // an older server: the server's refusal is the check
    }
  }

  /**
   * signOut is the Log out button: the page forgets the token at once, then
   * asks the server to revoke it, which also ends its sessions elsewhere.
   */
  async signOut() {
    const api = new Api(this.api.token);
    this.logout();
    try {
      await api.logout();
    } catch (e) {
      // 401: the token no longer works anyway.
      if (e.status !== 401) this.showAuth('Logged out on this page, but the server could not be told (' + e.message + '): the session ends when it expires.');
    }
  }

  /** logout ends the session on this page; it never throws, so the token is always forgotten. */
  logout(message = '') {
    localStorage.removeItem(tokenKey);
    this.api.token = '';
    this.me = null;
    // The open room first: it unsubscribes while the connection exists.
    if (this.view) this.view.close();
    this.view = null;
    $('chat-app').classList.remove('room-open');
    if (this.live) this.live.stop();
    this.live = null;
    this.roomsRequest++; // a room list still loading is dropped
    this.rooms.clear();
    this.renderRooms();
    this.everConnected = false;
    this.showAuth(message);
  }

  // ---- connection

  setConn(state) {
    const el = $('conn');
    el.dataset.state = state;
    setText(el, { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' }[state] || 'Offline');
    if (this.view && this.view.people) this.view.people.render(); // your own dot follows the connection
  }

  connected() {
    this.hideBanner();
    // The personal queue has no resume: reload the list, which covers
    // whatever happened before this subscription (the open room resumes
    // by itself with since-seq).
    this.loadRooms();
    if (this.everConnected && this.view) this.view.refresh();
    this.everConnected = true;
  }

  showBanner(text) {
    setText($('banner'), text);
    $('banner').hidden = false;
  }

  hideBanner() {
    $('banner').hidden = true;
  }

  // ---- room list

  async loadRooms() {
    const n = ++this.roomsRequest;
    try {
      const r = await this.api.rooms();
      if (n !== this.roomsRequest || !this.me) return; // a newer load is on its way
      const next = new Map();
      for (const e of r.rooms) {
        const old = this.rooms.get(e.room.id);
        const serverSeq = e.room.last_seq;
        let readSeq = e.room.last_seq - e.unread;
        let last = e.last_message;
        if (old) {
          readSeq = Math.max(readSeq, old.readSeq); // a read mark may be on its way
          if (old.last && (!last || old.last.seq > last.seq)) {
            last = old.last;
            e.room.last_seq = Math.max(e.room.last_seq, last.seq);
            e.room.last_activity_at = last.sent_at;
          }
        }
        // The server's mention count holds up to its last_seq; mention
        // events add to it (mentions.js).
        next.set(e.room.id, { room: e.room, last, readSeq, notifications: e.notifications || 'all',
          mentionBase: e.mentions || 0, mentionBaseSeq: serverSeq });
      }
      // A room created or joined here while the list was loading stays.
      for (const [id, e] of this.rooms) if (e.added && !next.has(id)) next.set(id, e);
      this.rooms = next;
      this.renderRooms();
      this.notifier.roomsLoaded();
    } catch (e) {
      if (e.status === 401 && this.me) this.logout('Your session has expired: log in again.');
    }
  }

  /** refreshRoomsSoon reloads the list once for a burst of unknown rooms. */
  refreshRoomsSoon() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = 0;
      this.loadRooms();
    }, 200);
  }

  addRoom(room) {
    if (!this.rooms.has(room.id)) this.rooms.set(room.id, { room, last: null, readSeq: room.last_seq, added: true });
    this.renderRooms();
  }

  /** noteMessage updates the room list with a live message. */
  noteMessage(m) {
    const e = this.rooms.get(m.room_id);
    if (!e) {
      this.refreshRoomsSoon(); // a room this list does not know yet: someone started it
      return;
    }
    if (!e.last || m.seq > e.last.seq) {
      e.last = m;
      e.room.last_activity_at = m.sent_at;
    }
    e.room.last_seq = Math.max(e.room.last_seq, m.seq);
    if (m.sender_id === this.me.id) e.readSeq = Math.max(e.readSeq, m.seq); // one's own message is read
    this.renderRooms();
  }

  /** messageChanged takes a message's new version (edited or deleted) for the room list. */
  messageChanged(m) {
    const e = this.rooms.get(m.room_id);
    if (!e) return;
    if ((m.change || 0) > (e.room.last_change || 0)) e.room.last_change = m.change;
    if (e.last && e.last.seq === m.seq && (m.change || 0) > (e.last.change || 0)) {
      e.last = m;
      this.renderRooms();
    }
  }

  ownMessageStored(roomId, seq) {
    const e = this.rooms.get(roomId);
    if (!e) return;
    e.room.last_seq = Math.max(e.room.last_seq, seq);
    e.readSeq = Math.max(e.readSeq, seq);
    this.renderRooms();
    this.notifier.sentFirst();
  }

  markedRead(roomId, seq) {
    const e = this.rooms.get(roomId);
    if (!e) return;
    e.readSeq = Math.max(e.readSeq, seq);
    this.renderRooms();
  }

  roomName(room, last) {
    if (room.title) return room.title;
    if (room.kind === 'direct') {
      if (room.peer && room.peer.name) return room.peer.name;
      if (this.peers[room.id]) return this.peers[room.id];
      if (last && this.me && last.sender_id !== this.me.id) return last.sender_name;
      return 'Direct chat';
    }
    return 'Untitled room';
  }

  renderRooms() {
    const list = $('room-list');
    const focused = document.activeElement && list.contains(document.activeElement)
      ? document.activeElement.dataset.room : null;
    const entries = [...this.rooms.values()].sort((a, b) =>
      Date.parse(b.room.last_activity_at) - Date.parse(a.room.last_activity_at) || (a.room.id < b.room.id ? -1 : 1));
    const current = this.view ? this.view.roomId : null;
    list.replaceChildren(...entries.map((e) => {
      const unread = Math.max(0, e.room.last_seq - e.readSeq);
      const mentions = mentionCount(e);
      const last = e.last;
      let text = 'No messages yet';
      if (last) text = (last.sender_id === this.me.id ? 'You' : last.sender_name) + ': ' + preview(last);
      const at = last ? last.sent_at : e.room.last_activity_at;
      return h('li', {},
        h('a', {
          href: '#/room/' + encodeURIComponent(e.room.id),
          'aria-current': e.room.id === current ? 'page' : null,
          dataset: { room: e.room.id },
        },
        h('span', { class: 'room-title' }, this.roomName(e.room, last)),
        h('time', { class: 'room-time', datetime: at }, shortTime(at)),
        h('span', { class: 'room-last' }, text),
        unread > 0 || mentions > 0 ? h('span', { class: 'badges' },
          unread > 0 ? h('span', { class: e.notifications === 'all' || !e.notifications ? 'badge' : 'badge badge-muted', title: unread + ' unread' },
            h('span', { 'aria-hidden': 'true' }, String(unread)),
            h('span', { class: 'visually-hidden' }, ', ' + unread + ' unread')) : null,
          mentions > 0 ? h('span', { class: 'badge mention-badge', title: mentions + (mentions === 1 ? ' mention' : ' mentions') },
            h('span', { 'aria-hidden': 'true' }, '@' + mentions),
            h('span', { class: 'visually-hidden' }, ', ' + mentions + (mentions === 1 ? ' mention' : ' mentions'))) : null) : null),
      );
    }));
    $('room-list-empty').hidden = entries.length > 0;
    this.updateTitle();
    if (focused) {
      const el = list.querySelector(`a[data-room="${CSS.escape(focused)}"]`);
      if (el) el.focus();
    }
  }

  /** updateTitle puts the number of unread messages (and mentions) over all rooms in the tab title. */
  updateTitle() {
    let unread = 0;
    let mentions = 0;
    for (const e of this.rooms.values()) {
      unread += Math.max(0, e.room.last_seq - e.readSeq);
      mentions += mentionCount(e);
    }
    document.title = unreadTitle(unread, 'Parley', mentions);
  }

  // ---- routes

  route() {
    if (!this.me) return;
    const hash = location.hash;
    if (hash !== '' && !hash.startsWith('#/')) return; // an in-page link, such as the skip link
    const m = /^#\/(room|join)\/([^/]+)(?:\/m\/(\d+))?$/.exec(hash);
    $('join-view').hidden = true;
    if (m && m[1] === 'room') {
      this.openRoom(decodeURIComponent(m[2]), Number(m[3] || 0));
      return;
    }
    this.closeRoom();
    if (m && m[1] === 'join') {
      this.showJoin(decodeURIComponent(m[2]));
      return;
    }
    $('pane-empty').hidden = false;
  }

  /** openRoom shows a room, at message target (a search hit) when given. */
  openRoom(id, target = 0) {
    if (this.view && this.view.roomId === id) {
      // Already open: a hit it shows is scrolled to, else the room opens again around it.
      if (!target || this.view.showTarget(target)) return;
    }
    this.closeRoom();
    $('pane-empty').hidden = true;
    $('chat-app').classList.add('room-open');
    this.view = new ChatView(this, id, target);
    this.view.open();
    this.notifySetting.show(id);
    this.renderRooms();
  }

  closeRoom() {
    if (this.attachments) this.attachments.clear();
    if (this.view) this.view.close();
    this.view = null;
    $('chat-app').classList.remove('room-open');
    this.renderRooms();
  }

  /** showJoin previews an invite link's room with a Join button. */
  async showJoin(id) {
    if (this.rooms.has(id)) {
      location.replace('#/room/' + encodeURIComponent(id));
      return;
    }
    $('pane-empty').hidden = true;
    $('chat-app').classList.add('room-open');
    const view = $('join-view');
    setText($('join-title'), 'Loading…');
    setText($('join-info'), '');
    setText($('join-error'), '');
    $('join-button').hidden = true;
    view.hidden = false;
    this.joinId = id;
    try {
      const room = await this.api.room(id);
      if (this.joinId !== id) return;
      setText($('join-title'), 'Join “' + this.roomName(room) + '”');
      const seats = room.capacity > 0 ? `${room.member_count} of ${room.capacity} seats taken` : members(room.member_count);
      setText($('join-info'), seats);
      $('join-button').hidden = false;
      $('join-button').disabled = isFull(room);
      if (isFull(room)) setText($('join-error'), fullText(room));
      else $('join-button').focus();
    } catch (e) {
      setText($('join-title'), 'Invite link');
      setText($('join-error'), e.code === 'not_found' ? 'This room does not exist, or is not open to you.' : e.message);
    }
  }

  async joinRoom(id) {
    setText($('join-error'), '');
    try {
      const room = await this.api.join(id);
      this.addRoom(room);
      location.replace('#/room/' + encodeURIComponent(id));
    } catch (e) {
      if (e.code === 'room_full') {
        let detail = '';
        try {
          const room = await this.api.room(id);
          detail = fullText(room);
          setText($('join-info'), `${room.member_count} of ${room.capacity} seats taken`);
          $('join-button').disabled = true;
        } catch {
          // the message alone will do
        }
        setText($('join-error'), detail || 'This room is full.');
      } else {
        setText($('join-error'), 'Could not join: ' + e.message);
      }
    }
  }

  // ---- keyboard

  /** globalKey: Ctrl/Cmd+K switches room; Escape closes the panel (a dialog and an edit take their own). */
  globalKey(ev) {
    if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && (ev.key === 'k' || ev.key === 'K')) {
      ev.preventDefault();
      this.switcher.open();
      return;
    }
    if (ev.key === 'Escape' && !ev.defaultPrevented && !document.querySelector('dialog[open]')) {
      if (panel.close()) ev.preventDefault();
    }
  }

  // ---- forms

  bindForms() {
    this.search = new Search(this); // the search box over every room (search.js)
    panel.bind(); // the panel beside the timeline (panel.js)
    threads.bind(); // the thread panel and the reply quote (threads.js)
    pins.bind(); // the Pinned panel (pins.js)
    bindConfirm(); // the confirmation dialog (confirm.js)
    bindTouch($('messages')); // the message toolbar on a touch screen (actions.js)
    this.notifier = new Notifier(this); // desktop notifications (notify.js)
    this.switcher = new Switcher(this); // Ctrl+K (switcher.js)
    document.addEventListener('keydown', (ev) => this.globalKey(ev));
    $('auth-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const action = ev.submitter && ev.submitter.value === 'signup' ? 'signup' : 'login';
      this.authenticate(action, $('auth-name').value.trim(), $('auth-password').value);
    });
    $('logout').addEventListener('click', () => this.signOut());
    bindAccount(this); // Download my data, Delete my account (account.js)

    const newRoomError = $('new-room-error');
    $('group-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      setText(newRoomError, '');
      const title = $('group-title').value.trim();
      const capacity = Number($('group-capacity').value || 0);
      if (!title) { setText(newRoomError, 'Give the room a title.'); return; }
      try {
        const room = await this.api.createGroup(title, capacity);
        ev.target.reset();
        $('new-room').open = false;
        this.addRoom(room);
        location.hash = '#/room/' + encodeURIComponent(room.id);
      } catch (e) {
        setText(newRoomError, 'Could not create the room: ' + e.message);
      }
    });

    $('direct-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      setText(newRoomError, '');
      const name = $('direct-name').value.trim();
      if (!name) return;
      try {
        const user = await this.api.userByName(name);
        const room = await this.api.createDirect(user.id);
        this.peers[room.id] = user.name;
        localStorage.setItem('parley.peers.' + this.me.id, JSON.stringify(this.peers));
        ev.target.reset();
        $('new-room').open = false;
        this.addRoom(room);
        location.hash = '#/room/' + encodeURIComponent(room.id);
      } catch (e) {
        setText(newRoomError, e.code === 'not_found' ? `No user is called “${name}”.` : 'Could not start the chat: ' + e.message);
      }
    });

    $('join-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      setText(newRoomError, '');
      const link = $('join-link').value.trim();
      const m = /#\/(?:join|room)\/([^/?#\s]+)/.exec(link) || /^([A-Za-z0-9_-]+)$/.exec(link);
      if (!m) { setText(newRoomError, 'That is not an invite link.'); return; }
      ev.target.reset();
      $('new-room').open = false;
      location.hash = '#/join/' + m[1];
    });
    $('join-button').addEventListener('click', () => this.joinRoom(this.joinId));

    $('invite-button').addEventListener('click', () => {
      if (!this.view) return;
      if (panel.isOpen('invite')) {
        panel.close('invite');
        return;
      }
      const input = $('invite-link');
      input.value = location.origin + location.pathname + '#/join/' + encodeURIComponent(this.view.roomId);
      panel.show('invite', 'Invite people', { focus: false });
      input.focus();
      input.select();
    });
    $('invite-copy').addEventListener('click', () => copyInvite($('invite-link'), $('invite-copy')));

    const input = $('composer-input');
    this.mentionComplete = new MentionComplete(this, input, $('mention-list')); // @name in the composer (mentions.js)
    this.notifySetting = new NotifySetting(this); // the room's notification level (mentions.js)
    this.limit = new ComposerLimit(input, $('composer-count'), $('composer').querySelector('button[type=submit]'));
    this.attachments = new Attachments(this);
    const submit = () => {
      const body = input.value;
      if (!this.view || !this.limit.update() || this.attachments.busy()) return;
      const files = this.attachments.take(this.view.roomId);
      if (!body.trim() && files.length === 0) return;
      input.value = '';
      this.limit.update();
      autosize();
      this.view.send(body.trim() ? body : '', composerReply.take(), files);
    };
    const autosize = () => {
      input.style.height = 'auto';
      input.style.height = Math.min(input.scrollHeight + 2, 160) + 'px';
    };
    $('composer').addEventListener('submit', (ev) => {
      ev.preventDefault();
      submit();
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        submit();
      } else if (ev.key === 'ArrowUp' && !input.value && this.view && !ev.isComposing) {
        // Up in an empty composer edits my last message.
        if (this.view.changes.editLast()) ev.preventDefault();
      }
    });
    input.addEventListener('input', autosize);
    $('load-older').addEventListener('click', () => this.view && this.view.loadOlder());
  }
}

new App().boot();
