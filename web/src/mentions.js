// Mentions (issue 31 part 3, issue 32 part 4): the server resolves a
// message's @names into its `mentions` (user ids, "@room"; docs/api.md
// "Mentions and notifications"). Here: the composer's autocomplete of the
// room's members after "@", the highlight of @names in a message that
// mentions someone (stronger for the reader's own name and @room), the
// room's mention count (the room list's `mentions`, then the `mention`
// events of /user/queue/events), and the per-room notification level in
// the room's panel.

import { $, h } from './dom.js';

/** The name characters of the server's grammar (chat: A-Z a-z 0-9 _ . -). */
const nameChar = /[A-Za-z0-9_.-]/;

/** mentionBefore returns the "@prefix" being typed at the end of text, or null. */
export function mentionBefore(text) {
  const m = /(^|[^A-Za-z0-9_.@-])@([A-Za-z0-9_.-]{0,32})$/.exec(text);
  return m ? m[2] : null;
}

/** matchNames returns the names that complete prefix, case-insensitively, at most max, the exact case first. */
export function matchNames(names, prefix, max = 8) {
  const p = prefix.toLowerCase();
  const out = names.filter((n) => n.toLowerCase().startsWith(p));
  out.sort((a, b) => (b.startsWith(prefix) - a.startsWith(prefix)) || a.localeCompare(b));
  return out.slice(0, max);
}

/** mentionsMe reports whether message m mentions user me (by id or @room). */
export function mentionsMe(m, me) {
  return !!(m && me && Array.isArray(m.mentions) && m.mentions.some((x) => x === me.id || x === '@room'));
}

/**
 * highlightMentions wraps the @names in the text of rendered nodes (not in
 * code or links) in <span class="mention">, "mention mention-me" for the
 * reader's own name and @room. Only a message the server found mentions in
 * is highlighted: an @word that is no member stays text.
 */
export function highlightMentions(nodes, m, me) {
  if (!m || !Array.isArray(m.mentions) || m.mentions.length === 0) return nodes;
  const mine = (name) => (name === 'room' && m.mentions.includes('@room')) || (me && name === me.name && m.mentions.includes(me.id));
  for (const root of nodes) {
    if (!(root instanceof Element)) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const texts = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement.closest('code, pre, a')) texts.push(n);
    }
    for (const t of texts) split(t, mine);
  }
  return nodes;
}

/** split replaces text node t by text and mention spans. */
function split(t, mine) {
  const s = t.data;
  const parts = [];
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== '@' || (i > 0 && (nameChar.test(s[i - 1]) || s[i - 1] === '@'))) continue;
    let j = i + 1;
    while (j < s.length && nameChar.test(s[j])) j++;
    let name = s.slice(i + 1, j);
    while (name.endsWith('.')) name = name.slice(0, -1);
    if (name.length < 3 || name.length > 32) continue;
    if (i > last) parts.push(s.slice(last, i));
    parts.push(h('span', { class: mine(name) ? 'mention mention-me' : 'mention' }, '@' + name));
    last = i + 1 + name.length;
    i = last - 1;
  }
  if (parts.length === 0) return;
  if (last < s.length) parts.push(s.slice(last));
  t.replaceWith(...parts);
}

/**
 * Mention counts of one room-list entry: the server's count at the last
 * load (base, all at or below baseSeq), then the seqs of the mention
 * events since. Reading past them clears them.
 */
export function mentionCount(e) {
  if (!e || e.notifications === 'none') return 0;
  let n = e.readSeq >= (e.mentionBaseSeq || 0) ? 0 : e.mentionBase || 0;
  for (const seq of e.mentionSeqs || []) if (seq > e.readSeq) n++;
  return n;
}

/** noteMention takes a `mention` event (events.js eventOf) for the room list. */
export function noteMention(app, ev) {
  const e = app.rooms.get(ev.roomId);
  const seq = Number(ev.headers && ev.headers.seq) || (ev.body && ev.body.seq) || 0;
  if (!e) {
    app.refreshRoomsSoon();
    return;
  }
  if (!seq || seq <= e.readSeq || e.notifications === 'none') return;
  if (!e.mentionSeqs) e.mentionSeqs = new Set();
  e.mentionSeqs.add(seq);
  app.renderRooms();
}

/** MentionComplete is the composer's autocomplete of the open room's members after "@". */
export class MentionComplete {
  constructor(app, input, list) {
    this.app = app;
    this.input = input;
    this.list = list;
    this.names = new Map(); // room id -> member names (a promise while loading)
    this.items = [];
    this.active = -1;
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-controls', list.id);
    input.setAttribute('aria-expanded', 'false');
    input.addEventListener('input', () => this.update());
    input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    // Capture on the form: before the composer's own Enter (send) and
    // the page's Esc (close the panel).
    input.form.addEventListener('keydown', (ev) => this.key(ev), true);
    list.addEventListener('mousedown', (ev) => {
      const li = ev.target.closest('li[data-name]');
      if (!li) return;
      ev.preventDefault();
      this.pick(li.dataset.name);
    });
  }

  /** namesOf loads the names of a room's members once (the first 100). */
  namesOf(roomId) {
    if (!this.names.has(roomId)) {
      const p = this.app.api.req('GET', `/api/rooms/${encodeURIComponent(roomId)}/members?limit=100`)
        .then((r) => (r.members || []).map((x) => x.user.name))
        .catch(() => []);
      this.names.set(roomId, p);
    }
    return this.names.get(roomId);
  }

  /** forget drops a room's names (a member joined or left). */
  forget(roomId) {
    this.names.delete(roomId);
  }

  async update() {
    const view = this.app.view;
    const caret = this.input.selectionStart;
    const prefix = view && caret === this.input.selectionEnd ? mentionBefore(this.input.value.slice(0, caret)) : null;
    if (prefix === null) {
      this.close();
      return;
    }
    const roomId = view.roomId;
    const names = await this.namesOf(roomId);
    if (!this.app.view || this.app.view.roomId !== roomId || mentionBefore(this.input.value.slice(0, this.input.selectionStart)) !== prefix) return;
    const me = this.app.me ? this.app.me.name : '';
    const room = this.app.rooms.get(roomId);
    const all = names.filter((n) => n !== me);
    if (room && room.room.kind === 'group') all.push('room');
    this.show(matchNames(all, prefix));
  }

  show(items) {
    this.items = items;
    this.active = items.length > 0 ? 0 : -1;
    if (items.length === 0) {
      this.close();
      return;
    }
    this.list.replaceChildren(...items.map((name, i) => h('li', {
      id: 'mention-option-' + i, role: 'option', dataset: { name }, 'aria-label': name === 'room' ? 'room: everyone here' : name, 'aria-selected': i === this.active ? 'true' : 'false',
    }, '@' + name, name === 'room' ? h('span', { class: 'hint' }, ' everyone here') : null)));
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.input.setAttribute('aria-activedescendant', 'mention-option-0');
  }

  get open() {
    return !this.list.hidden && this.items.length > 0;
  }

  close() {
    this.items = [];
    this.active = -1;
    this.list.hidden = true;
    this.list.replaceChildren();
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }

  move(d) {
    this.active = (this.active + d + this.items.length) % this.items.length;
    [...this.list.children].forEach((li, i) => li.setAttribute('aria-selected', i === this.active ? 'true' : 'false'));
    this.input.setAttribute('aria-activedescendant', 'mention-option-' + this.active);
  }

  key(ev) {
    if (!this.open || ev.target !== this.input || ev.isComposing) return;
    const stop = () => {
      ev.preventDefault();
      ev.stopPropagation();
    };
    if (ev.key === 'ArrowDown') { stop(); this.move(1); } else if (ev.key === 'ArrowUp') { stop(); this.move(-1); } else if (ev.key === 'Enter' || ev.key === 'Tab') {
      stop();
      this.pick(this.items[this.active]);
    } else if (ev.key === 'Escape') { stop(); this.close(); }
  }

  /** pick puts "@name " in place of the "@prefix" before the caret. */
  pick(name) {
    const caret = this.input.selectionStart;
    const before = this.input.value.slice(0, caret);
    const prefix = mentionBefore(before);
    if (prefix === null || !name) return;
    const start = caret - prefix.length;
    this.input.value = before.slice(0, start) + name + ' ' + this.input.value.slice(caret);
    const at = start + name.length + 1;
    this.input.setSelectionRange(at, at);
    this.close();
    this.input.dispatchEvent(new Event('input')); // the composer's size and count
    this.input.focus();
  }
}

/** NotifySetting is the room's notification level (All, Mentions, Off) in its panel. */
export class NotifySetting {
  constructor(app) {
    this.app = app;
    this.select = $('notify-level');
    this.select.addEventListener('change', () => this.change());
  }

  /** show sets the control for the open room (the room list's entry). */
  show(roomId) {
    const e = this.app.rooms.get(roomId);
    this.roomId = roomId;
    this.select.value = (e && e.notifications) || 'all';
    $('notify-setting').hidden = false;
  }

  async change() {
    const roomId = this.roomId;
    const level = this.select.value;
    const status = $('notify-level-status');
    // A sensible moment to ask for desktop notifications: the user is
    // choosing what to be told of.
    if (level !== 'none' && this.app.notifier.permission === 'default') this.app.notifier.ask();
    try {
      await this.app.api.req('PUT', `/api/rooms/${encodeURIComponent(roomId)}/notifications`, { level });
      const e = this.app.rooms.get(roomId);
      if (e) e.notifications = level;
      status.textContent = level === 'none' ? 'Off: no mention badge, no notification.' : level === 'mentions' ? 'Mentions only.' : 'All messages.';
      this.app.renderRooms();
    } catch (err) {
      status.textContent = 'Could not save: ' + err.message;
    }
  }
}
