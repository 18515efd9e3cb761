// People in a room (design §3a, §4 room events): the members panel of the
// open room (online dot, role, name), "Seen by …" under the last message
// the user sent, "… is typing", the live seat count, Leave, and the
// owner's and admins' controls (rename, seats, remove, ban, unban, make or
// take admin), each shown only to those the server allows.

import { $, h, setText, fullTime } from './dom.js';
import { Recent, Typists, TypingThrottle, typingText } from './events.js';
import { confirmAction } from './confirm.js';
import { panel, narrow } from './panel.js';
import { botBadge, isBot } from './timeline.js';
import { noteMention } from './mentions.js';

const enc = encodeURIComponent;

/** Rooms with more members than this get no read events: no "Seen". */
export const seenMaxMembers = 100;

const pageSize = 100;

// The REST calls of §3a, on the page's Api (its token and error handling).
export const peopleApi = {
  members(api, roomId, cursor) {
    const q = new URLSearchParams({ limit: String(pageSize) });
    if (cursor) q.set('cursor', cursor);
    return api.req('GET', `/api/rooms/${enc(roomId)}/members?` + q);
  },
  update: (api, roomId, patch) => api.req('PATCH', `/api/rooms/${enc(roomId)}`, patch),
  add: (api, roomId, userId) => api.req('POST', `/api/rooms/${enc(roomId)}/members/${enc(userId)}`),
  setRole: (api, roomId, userId, role) => api.req('PUT', `/api/rooms/${enc(roomId)}/members/${enc(userId)}`, { role }),
  remove: (api, roomId, userId, ban) => api.req('DELETE', `/api/rooms/${enc(roomId)}/members/${enc(userId)}` + (ban ? '?ban=true' : '')),
  leave: (api, roomId) => api.req('DELETE', `/api/rooms/${enc(roomId)}/members/me`),
  bans: (api, roomId) => api.req('GET', `/api/rooms/${enc(roomId)}/bans`),
  unban: (api, roomId, userId) => api.req('DELETE', `/api/rooms/${enc(roomId)}/bans/${enc(userId)}`),
};

const goneActions = new Set(['left', 'removed', 'banned']);
const recentEvents = new Recent();

/** can says what a user of role mine may do to a member of role theirs in a group room. */
export function can(mine, theirs, self) {
  const owner = mine === 'owner';
  const admin = mine === 'admin';
  return {
    rename: owner || admin,
    remove: !self && (owner ? theirs !== 'owner' : admin && theirs === 'member'),
    setRole: !self && owner && theirs !== 'owner',
    seeBans: owner || admin,
    add: owner || admin,
  };
}

/** seenText names the members who read a message: "Seen by bob, carol and 2 others". */
export function seenText(names) {
  if (names.length === 0) return '';
  if (names.length === 1) return `Seen by ${names[0]}`;
  if (names.length <= 3) return `Seen by ${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  return `Seen by ${names[0]}, ${names[1]} and ${names.length - 2} others`;
}

/** byPresence sorts as the server does: online members first, then by name. */
function byPresence(a, b) {
  if (a.online !== b.online) return a.online ? -1 : 1;
  return a.user.name < b.user.name ? -1 : a.user.name > b.user.name ? 1 : (a.user.id < b.user.id ? -1 : 1);
}

/**
 * roomEvent takes a room event of any of the user's rooms: it keeps the
 * room list's info current (title, seats), ends a room the user is no
 * longer in, and hands the open room's events to its panel.
 */
export function roomEvent(app, ev) {
  if (!app.me || !ev.roomId || !recentEvents.add(ev.id)) return;
  const entry = app.rooms.get(ev.roomId);
  if (ev.kind === 'member') {
    if (ev.room && entry) {
      entry.room = mergeRoom(entry.room, ev.room);
      app.renderRooms();
    }
    if (ev.user === app.me.id && goneActions.has(ev.action)) {
      roomGone(app, ev.roomId, goneText(ev.action));
      return;
    }
    if (ev.user === app.me.id && ev.action === 'joined' && !entry) app.refreshRoomsSoon();
  }
  const view = app.view;
  if (ev.kind === 'mention') {
    noteMention(app, ev); // mentions.js
    return;
  }
  if (ev.kind === 'member' && app.mentionComplete) app.mentionComplete.forget(ev.roomId);
  if (ev.kind === 'edited' || ev.kind === 'deleted' || ev.kind === 'reaction' || ev.kind === 'thread' || ev.kind === 'pin') {
    if (view && view.roomId === ev.roomId && view.changes) view.changes.onEvent(ev);
    else if (ev.body && ev.body.seq) app.messageChanged(ev.body); // the room list's last message
    return;
  }
  if (view && view.roomId === ev.roomId && view.people) view.people.onEvent(ev);
}

function goneText(action) {
  if (action === 'removed') return 'You were removed from this room.';
  if (action === 'banned') return 'You were removed from this room and banned from joining it again.';
  return 'You left this room.';
}

/** mergeRoom takes a room's new info (title, seats, retention) without moving its last message back. */
function mergeRoom(old, info) {
  const r = { ...old };
  for (const k of ['title', 'capacity', 'member_count', 'kind', 'retention_seconds']) if (k in info) r[k] = info[k];
  if (info.last_seq > (old.last_seq || 0)) r.last_seq = info.last_seq;
  return r;
}

const retentionNames = new Map([[0, 'Server default'], [86400, '1 day'], [604800, '7 days'], [2592000, '30 days'], [31536000, '1 year']]);

/**
 * retentionText names a room's retention_seconds: the settings' choices by
 * their names, any other value (set over the API) in days or seconds.
 */
export function retentionText(secs) {
  const n = Number(secs) || 0;
  if (retentionNames.has(n)) return retentionNames.get(n);
  if (n % 86400 === 0) return `${n / 86400} days`;
  return n === 1 ? '1 second' : `${n} seconds`;
}

/**
 * roomRefused takes the refusal of a room's subscription: forbidden or
 * not_found means the user is no longer a member (removed or banned
 * while the connection was down, or the ERROR that ended the session
 * came before the member event). The server's words name the room by id:
 * the page says its title.
 */
export function roomRefused(app, roomId, err) {
  if (err.code !== 'forbidden' && err.code !== 'not_found') return;
  const room = app.view && app.view.roomId === roomId ? app.view.room : null;
  const text = room && room.title ? err.text.replace(roomId, '“' + room.title + '”') : err.text;
  roomGone(app, roomId, 'You are no longer a member of this room: ' + text + '.');
}

/**
 * roomGone forgets a room the user is no longer in (left here or
 * elsewhere, removed, banned): out of the list, and the open view says why
 * and takes no more messages.
 */
export function roomGone(app, roomId, text) {
  if (app.rooms.delete(roomId)) app.renderRooms();
  const view = app.view;
  if (view && view.roomId === roomId) {
    if (app.live) app.live.closeRoom(roomId);
    if (view.people) view.people.gone(text);
  }
}

/** People is the members panel and the presence hints of one open room. */
export class People {
  constructor(app, view) {
    this.app = app;
    this.view = view;
    this.roomId = view.roomId;
    this.members = new Map(); // user id -> member, as GET .../members gives it
    this.cursor = null; // next page of members, null when all are here
    this.loaded = false;
    this.loadFailed = false;
    this.loads = 0; // the latest members load
    // Presence heard from online and offline events, by user, numbered:
    // a listing read before an event is older than it (the server lists
    // presence as the events announce it), so a load re-applies the
    // events heard since it began, and one for a member not yet listed is
    // kept for the load on its way.
    this.heard = new Map(); // user id -> {online, last_seen_at, n}
    this.heardN = 0;
    this.reloadTimer = 0;
    this.bans = [];
    this.closed = false;
    this.isGone = false;
    this.typists = new Typists(() => this.renderTyping());
    this.throttle = new TypingThrottle(() => app.live && app.live.typing(this.roomId));
    this.seenEl = h('p', { class: 'msg-seen' });
    this.seenQueued = false;

    this.onInput = () => {
      if (!this.isGone && $('composer-input').value.trim()) this.throttle.poke();
    };
    this.onToggle = () => this.toggle();
    this.onLeave = () => this.leave();
    this.onSettings = (ev) => {
      ev.preventDefault();
      this.saveSettings();
    };
    this.onRetention = () => this.saveSettings();
    this.onAdd = (ev) => {
      ev.preventDefault();
      this.addByName();
    };
    this.onMore = () => this.load(this.cursor);
    this.observer = new MutationObserver(() => this.queueSeen());
  }

  /** open loads the members; it runs once the room itself has loaded. */
  open() {
    $('composer-input').addEventListener('input', this.onInput);
    $('people-button').addEventListener('click', this.onToggle);
    $('leave-button').addEventListener('click', this.onLeave);
    $('room-settings').addEventListener('submit', this.onSettings);
    $('add-member').addEventListener('submit', this.onAdd);
    $('settings-retention').addEventListener('change', this.onRetention);
    $('members-more').addEventListener('click', this.onMore);
    this.observer.observe($('messages'), { childList: true });
    $('people-button').hidden = false;
    setText($('people-error'), '');
    setText($('typing'), '');
    $('composer-input').disabled = false;
    $('composer').querySelector('button[type=submit]').disabled = false;
    // Open or closed is remembered; a phone opens the room, not the panel over it.
    this.offPanel = panel.onChange((cur, was) => {
      if (was === 'people' && !this.closed) localStorage.setItem('parley.people', 'closed');
    });
    this.showPanel(localStorage.getItem('parley.people') === 'open' && !narrow(), false);
    this.load();
  }

  close() {
    this.closed = true;
    clearTimeout(this.reloadTimer);
    this.typists.clear();
    this.observer.disconnect();
    $('composer-input').removeEventListener('input', this.onInput);
    $('people-button').removeEventListener('click', this.onToggle);
    $('leave-button').removeEventListener('click', this.onLeave);
    $('room-settings').removeEventListener('submit', this.onSettings);
    $('add-member').removeEventListener('submit', this.onAdd);
    $('settings-retention').removeEventListener('change', this.onRetention);
    $('members-more').removeEventListener('click', this.onMore);
    $('member-list').replaceChildren();
    $('ban-list').replaceChildren();
    setText($('typing'), '');
    setText($('people-button'), 'People');
    for (const id of ['people', 'room-settings', 'add-member', 'room-retention', 'bans', 'leave-button', 'members-more']) $(id).hidden = true;
    this.seenEl.remove();
    if (this.offPanel) this.offPanel();
    panel.close('people');
    panel.close('invite');
  }

  get room() {
    return this.view.room;
  }

  get direct() {
    return this.room && this.room.kind === 'direct';
  }

  /** myRole is the user's role here ('' until the members are loaded). */
  get myRole() {
    const me = this.members.get(this.app.me.id);
    return me ? me.role : '';
  }

  toggle() {
    const open = !panel.isOpen('people');
    localStorage.setItem('parley.people', open ? 'open' : 'closed');
    this.showPanel(open, true);
  }

  showPanel(open, focus) {
    if (open) panel.show('people', 'People', { focus });
    else panel.close('people');
  }

  /** load reads the members from the first page (or cursor's page on). */
  async load(cursor) {
    if (this.closed || this.isGone) return;
    const n = ++this.loads;
    const from = this.heardN;
    try {
      const page = await peopleApi.members(this.app.api, this.roomId, cursor);
      if (this.closed || n !== this.loads) return;
      if (!cursor) this.members.clear();
      for (const m of page.members) this.members.set(m.user.id, m);
      for (const [id, p] of this.heard) {
        const m = this.members.get(id);
        if (p.n > from && m) Object.assign(m, { online: p.online, last_seen_at: p.last_seen_at });
        if (p.n <= from) this.heard.delete(id); // the listing has it
      }
      this.cursor = page.next_cursor || null;
      this.loaded = true;
      if (this.loadFailed) setText($('people-error'), ''); // keep the reason of a refused action
      this.loadFailed = false;
      this.render();
      if (can(this.myRole, '').seeBans && !this.direct) this.loadBans();
    } catch (e) {
      if (this.closed || n !== this.loads) return;
      this.loadFailed = true;
      setText($('people-error'), 'Could not load the members: ' + e.message);
    }
  }

  /** reloadSoon reads the members again once for a burst of changes. */
  reloadSoon() {
    clearTimeout(this.reloadTimer);
    this.reloadTimer = setTimeout(() => {
      if (!this.closed && !this.isGone) this.load();
    }, 150);
  }

  async loadBans() {
    try {
      const r = await peopleApi.bans(this.app.api, this.roomId);
      if (this.closed) return;
      this.bans = (r && (r.bans || r.users || r.members)) || [];
    } catch {
      this.bans = [];
    }
    this.renderBans();
  }

  /** onEvent takes a room event of this room (events.js eventOf). */
  onEvent(ev) {
    if (this.closed || this.isGone) return;
    const me = this.app.me.id;
    switch (ev.kind) {
      case 'typing':
        if (ev.user && ev.user !== me) this.typists.saw(ev.user);
        break;
      case 'read': {
        // A coalesced event lists every position that moved (body.reads);
        // its headers name the last one.
        const reads = ev.body && Array.isArray(ev.body.reads) ? ev.body.reads : [{ user: ev.user, seq: ev.seq }];
        for (const r of reads) {
          const m = this.members.get(r.user || r.user_id);
          if (m && Number(r.seq) > m.read_seq) m.read_seq = Number(r.seq);
        }
        this.queueSeen();
        break;
      }
      case 'online':
      case 'offline': {
        const online = ev.kind === 'online';
        const p = { online, last_seen_at: online ? null : (ev.body && ev.body.last_seen_at) || new Date().toISOString(), n: ++this.heardN };
        this.heard.set(ev.user, p);
        const m = this.members.get(ev.user);
        if (!m) break; // a load on its way lists them, and re-applies this
        m.online = p.online;
        if (!online) m.last_seen_at = p.last_seen_at;
        this.render();
        break;
      }
      case 'member':
        if (ev.room) this.view.showRoom(mergeRoom(this.room || ev.room, ev.room));
        if (goneActions.has(ev.action)) {
          this.typists.stop(ev.user);
          if (this.members.delete(ev.user)) this.render();
          if (ev.action === 'banned' && can(this.myRole, '').seeBans) this.loadBans();
        } else if (ev.action === 'role' && ev.role && this.members.has(ev.user)) {
          this.members.get(ev.user).role = ev.role;
          this.render();
          if (ev.user === me && can(ev.role, '').seeBans) this.loadBans();
        } else if (ev.action === 'room') {
          this.render(); // the settings and the retention show the new info
        } else {
          this.reloadSoon(); // joined, or news of a kind this page does not know: read the list again
        }
        break;
      default:
        break;
    }
  }

  /** onMessage: a live message of this room; its sender is no longer typing. */
  onMessage(m) {
    this.typists.stop(m.sender_id);
  }

  /** gone ends the panel: the user is no longer a member. */
  gone(text) {
    this.isGone = true;
    this.typists.clear();
    this.members.clear();
    this.render();
    panel.close('people');
    panel.close('invite');
    for (const id of ['people-button', 'invite-button']) $(id).hidden = true;
    setText($('chat-error'), text);
    $('composer-input').disabled = true;
    $('composer').querySelector('button[type=submit]').disabled = true;
  }

  nameOf(userId) {
    const m = this.members.get(userId);
    return m ? m.user.name : 'Someone';
  }

  renderTyping() {
    setText($('typing'), typingText(this.typists.ids().map((id) => this.nameOf(id))));
  }

  render() {
    if (this.closed) return;
    const meId = this.app.me.id;
    const mine = this.myRole;
    if (this.view.changes) this.view.changes.rolesChanged(mine); // who may delete which message
    // You are online while this page is connected: the server never sends
    // you your own presence events, and its listing shows a fresh
    // connection as it was last announced (offline for the first 5 s).
    const me = this.members.get(meId);
    if (me && this.app.live) me.online = this.app.live.live;
    const list = [...this.members.values()].sort(byPresence);
    const online = list.filter((m) => m.online).length;
    const count = this.room ? this.room.member_count : list.length;
    $('people-button').replaceChildren('People', h('span', { class: 'head-count' }, ` (${online} online)`));
    setText($('people-heading'), count === 1 ? '1 member' : `${count} members`);
    $('member-list').replaceChildren(...list.map((m) => this.renderMember(m, mine, m.user.id === meId)));
    $('members-more').hidden = !this.cursor;
    const allowed = can(mine, '', true);
    $('room-settings').hidden = this.isGone || this.direct || !allowed.rename;
    $('add-member').hidden = this.isGone || this.direct || !allowed.add;
    // Every member sees how long the room keeps its messages; owners and
    // admins change it in the settings.
    const retention = (this.room && this.room.retention_seconds) || 0;
    $('room-retention').hidden = this.isGone || this.direct || !this.room;
    setText($('room-retention'), 'Keep messages: ' + retentionText(retention));
    if (!$('room-settings').hidden && document.activeElement?.closest('#room-settings') == null) {
      $('settings-title').value = this.room ? this.room.title : '';
      $('settings-capacity').value = this.room && this.room.capacity > 0 ? String(this.room.capacity) : '';
      const select = $('settings-retention');
      if (![...select.options].some((o) => Number(o.value) === retention)) {
        select.append(h('option', { value: String(retention) }, retentionText(retention)));
      }
      select.value = String(retention);
    }
    $('leave-button').hidden = this.isGone || !this.loaded;
    if (!allowed.seeBans || this.direct) $('bans').hidden = true;
    this.renderTyping();
    this.queueSeen();
  }

  renderMember(m, mine, self) {
    const allowed = this.direct ? {} : can(mine, m.role, self);
    const state = m.online ? 'online' : m.last_seen_at ? 'last seen ' + fullTime(m.last_seen_at) : 'offline';
    const actions = [];
    if (allowed.setRole) {
      const next = m.role === 'admin' ? 'member' : 'admin';
      actions.push(h('button', {
        type: 'button', class: 'secondary small', dataset: { action: 'role' },
        onclick: () => this.act(peopleApi.setRole(this.app.api, this.roomId, m.user.id, next)),
      }, next === 'admin' ? 'Make admin' : 'Take admin'));
    }
    if (allowed.remove) {
      actions.push(h('button', {
        type: 'button', class: 'secondary small', dataset: { action: 'remove' },
        onclick: () => this.confirmed({ title: `Remove ${m.user.name}?`, text: `${m.user.name} leaves the room and may join again by its link.`, ok: 'Remove' },
          () => peopleApi.remove(this.app.api, this.roomId, m.user.id, false)),
      }, 'Remove'));
      actions.push(h('button', {
        type: 'button', class: 'secondary small danger', dataset: { action: 'ban' },
        onclick: () => this.confirmed({ title: `Ban ${m.user.name}?`, text: `${m.user.name} leaves the room and may not join again until unbanned.`, ok: 'Ban' },
          () => peopleApi.remove(this.app.api, this.roomId, m.user.id, true)),
      }, 'Ban'));
    }
    return h('li', { class: 'member', dataset: { user: m.user.id, online: String(!!m.online), role: m.role } },
      h('span', { class: 'dot', title: state, 'aria-hidden': 'true' }),
      h('span', { class: 'member-name' }, self ? m.user.name + ' (you)' : m.user.name),
      m.user.bot || isBot(m.user.id) ? botBadge() : null,
      h('span', { class: 'visually-hidden' }, ', ' + state),
      m.role !== 'member' ? h('span', { class: 'role' }, m.role) : null,
      actions.length ? h('span', { class: 'member-actions' }, ...actions) : null,
    );
  }

  renderBans() {
    if (this.closed) return;
    const allowed = can(this.myRole, '', true);
    $('bans').hidden = this.direct || !allowed.seeBans || this.bans.length === 0;
    $('ban-list').replaceChildren(...this.bans.map((b) => {
      const user = b.user || { id: b.user_id, name: b.name };
      return h('li', { class: 'member', dataset: { user: user.id } },
        h('span', { class: 'member-name' }, user.name || user.id),
        h('span', { class: 'member-actions' },
          h('button', {
            type: 'button', class: 'secondary small', dataset: { action: 'unban' },
            onclick: () => this.act(peopleApi.unban(this.app.api, this.roomId, user.id), () => this.loadBans()),
          }, 'Unban')));
    }));
  }

  /** confirmed asks in the small dialog, then runs the request. */
  async confirmed(question, request) {
    if (!(await confirmAction(question)) || this.closed) return;
    await this.act(request());
  }

  /** act runs a moderation request; a refusal shows the server's reason as text. */
  async act(request, then = () => this.reloadSoon()) {
    setText($('people-error'), '');
    try {
      await request;
      if (!this.closed) then();
    } catch (e) {
      if (!this.closed) setText($('people-error'), e.message);
    }
  }

  /** addByName adds the user of the form's name to the room (owners and admins). */
  async addByName() {
    const input = $('add-member-name');
    const name = input.value.trim();
    if (!name) return;
    await this.act((async () => {
      const user = await this.app.api.userByName(name);
      await peopleApi.add(this.app.api, this.roomId, user.id);
    })(), () => {
      input.value = '';
      this.reloadSoon();
    });
  }

  async saveSettings() {
    const patch = {};
    const title = $('settings-title').value.trim();
    const seats = $('settings-capacity').value.trim();
    if (title && (!this.room || title !== this.room.title)) patch.title = title;
    const capacity = seats === '' ? 0 : Number(seats); // empty: unlimited
    if (!this.room || capacity !== this.room.capacity) patch.capacity = capacity;
    const retention = Number($('settings-retention').value);
    if (!this.room || retention !== (this.room.retention_seconds || 0)) patch.retention_seconds = retention;
    setText($('people-error'), '');
    if (Object.keys(patch).length === 0) return;
    try {
      const room = await peopleApi.update(this.app.api, this.roomId, patch);
      if (this.closed) return;
      this.view.showRoom(mergeRoom(this.room || room, room));
      const entry = this.app.rooms.get(this.roomId);
      if (entry) {
        entry.room = mergeRoom(entry.room, room);
        this.app.renderRooms();
      }
      document.activeElement?.blur();
      this.render();
    } catch (e) {
      if (!this.closed) setText($('people-error'), e.message);
    }
  }

  async leave() {
    const title = this.room ? this.app.roomName(this.room) : 'this room';
    const ok = await confirmAction({
      title: `Leave “${title}”?`,
      text: this.direct ? 'The chat leaves your list.' : 'You may join again by its invite link, if there is a free seat.',
      ok: 'Leave',
    });
    if (!ok || this.closed) return;
    setText($('people-error'), '');
    try {
      await peopleApi.leave(this.app.api, this.roomId);
    } catch (e) {
      if (!this.closed) setText($('people-error'), 'Could not leave: ' + e.message);
      return;
    }
    roomGone(this.app, this.roomId, goneText('left'));
    location.hash = '#/';
  }

  queueSeen() {
    if (this.seenQueued) return;
    this.seenQueued = true;
    queueMicrotask(() => {
      this.seenQueued = false;
      this.renderSeen();
    });
  }

  /** renderSeen puts "Seen by …" under the last message the user sent, in rooms up to seenMaxMembers. */
  renderSeen() {
    if (this.closed) return;
    const meId = this.app.me.id;
    const room = this.room;
    let last = 0;
    for (const [seq, m] of this.view.msgs) if (m.sender_id === meId && seq > last) last = seq;
    const readers = [];
    if (last > 0 && !this.isGone && room && room.member_count <= seenMaxMembers) {
      for (const m of [...this.members.values()].sort(byPresence)) {
        if (m.user.id !== meId && m.read_seq >= last) readers.push(m.user.name);
      }
    }
    const li = last > 0 ? $('messages').querySelector(`li[data-seq="${last}"]`) : null;
    if (!li || readers.length === 0) {
      this.seenEl.remove();
      return;
    }
    setText(this.seenEl, seenText(readers));
    this.seenEl.dataset.seq = String(last);
    if (this.seenEl.parentNode !== li) li.append(this.seenEl);
  }
}
