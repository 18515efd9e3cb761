// Edits and deletions of messages (docs/api.md, "Edit, delete and search"): the
// Edit and Delete controls of a message, "edited" and "message deleted"
// shown in place, and keeping the open room's copy current. A change
// arrives as a live `edited`/`deleted` event when the server sends them,
// and in any case through GET …/messages?changed_after=N after every
// (re)connect, N being the highest change number this page has seen in the
// room: a change made while the connection was down is never missed.

import { h, setText, randomId } from './dom.js';
import { regroup } from './timeline.js';
import { addMessageAction, toolbar } from './actions.js';
import { confirmAction } from './confirm.js';
import { chips, mergeReaction } from './reactions.js';
import { quote, rootChanged, threadLink, threads } from './threads.js';
import { pinMarker, pins } from './pins.js';

const enc = encodeURIComponent;

export const changesApi = {
  // clientId makes a retry safe: the server applies a change once per key
  // (design §5) and answers a repeat with the message as it is, so a
  // request whose answer was lost is sent again with the same key.
  edit: (api, roomId, seq, body, clientId) =>
    resent(() => api.req('PATCH', `/api/rooms/${enc(roomId)}/messages/${seq}`, { body, client_id: clientId })),
  remove: (api, roomId, seq, clientId) =>
    resent(() => api.req('DELETE', `/api/rooms/${enc(roomId)}/messages/${seq}`, { client_id: clientId })),
  changedAfter: (api, roomId, change, limit = 100) =>
    api.req('GET', `/api/rooms/${enc(roomId)}/messages?changed_after=${change}&limit=${limit}`),
};

/**
 * resent runs a keyed request, and again after a network failure (no
 * answer: it may or may not have been applied), twice at most, 0.5 s and
 * then 1.5 s later. An answer of the server, error or not, is final.
 */
export async function resent(request, pauses = [500, 1500]) {
  for (let i = 0; ; i++) {
    try {
      return await request();
    } catch (e) {
      if (e.status !== 0 || i >= pauses.length) throw e;
      await new Promise((ok) => setTimeout(ok, pauses[i]));
    }
  }
}

/** The highest change number seen per room, for the page's lifetime (room id -> change). */
const seenChange = new Map();

/** isDeleted tells a tombstone. */
export function isDeleted(m) {
  return !!m.deleted_at;
}

/** mayDelete: the sender, or the owner or an admin of a group room (design §3a). */
export function mayDelete(m, me, role, kind) {
  if (!m.seq || isDeleted(m)) return false;
  if (m.sender_id === me) return true;
  return kind === 'group' && (role === 'owner' || role === 'admin');
}

/** mayEdit: only the sender, and not a deleted message. */
export function mayEdit(m, me) {
  return !!m.seq && !isDeleted(m) && m.sender_id === me;
}

/** preview is a message's text as the room list shows it. */
export function preview(m) {
  return isDeleted(m) ? 'message deleted' : m.body;
}

/**
 * newer reports whether b is a later version of the same message than a.
 * A stand-in made from a send's RECEIPT (fromReceipt: chat.js) is older
 * than the server's own copy of the same change: it lacks what only the
 * server knows (the mentions it resolved, the time it stored).
 */
export function newer(a, b) {
  const ca = a.change || 0, cb = b.change || 0;
  return cb > ca || (cb === ca && !!a.fromReceipt && !b.fromReceipt);
}

// The toolbar's Edit and Delete (actions.js), for whom may use them.
addMessageAction({ id: 'edit', label: 'Edit', order: 40, when: (m, ctx) => mayEdit(m, ctx.app.me.id), run: (m, ctx) => ctx.changes.startEdit(m.seq) });
addMessageAction({
  id: 'delete', label: 'Delete', order: 90,
  when: (m, ctx) => mayDelete(m, ctx.app.me.id, ctx.changes.role, ctx.view.room ? ctx.view.room.kind : ''),
  run: (m, ctx) => ctx.changes.askDelete(m.seq),
});

/**
 * Changes keeps one open room's messages current and draws their change
 * state and controls. view is the ChatView (msgs, list, room, people).
 */
export class Changes {
  constructor(app, view) {
    this.app = app;
    this.view = view;
    this.roomId = view.roomId;
    this.before = seenChange.get(this.roomId); // what this page saw of the room before opening it
    this.role = '';
    this.catching = null; // the catch-up in progress
    this.again = false; // another catch-up was asked for meanwhile
    this.deleteKeys = new Map(); // seq -> client_id of its deletion, for a retry
  }

  /** ctx is what the toolbar's actions get. */
  get ctx() {
    return { app: this.app, view: this.view, changes: this, role: this.role };
  }

  get lastChange() {
    return seenChange.get(this.roomId) || 0;
  }

  saw(change) {
    if (change > this.lastChange) seenChange.set(this.roomId, change);
  }

  /**
   * start is called once the first page is shown: room is the room as read
   * with it. The catch-up starts from the lowest of what this page had seen
   * before opening the room, the room list's last_change and the room's:
   * a change made between reading the page and the room (or announced
   * while the page loaded) is fetched too; applying one twice changes
   * nothing.
   */
  start(room) {
    const listed = this.app.rooms.get(this.roomId);
    const from = [this.before, listed && listed.room.last_change, room && room.last_change]
      .filter((c) => typeof c === 'number')
      .reduce((a, b) => Math.min(a, b), Infinity);
    seenChange.set(this.roomId, Number.isFinite(from) ? from : 0);
    return this.catchUp();
  }

  /** catchUp reads every change after the last seen one and applies it. */
  catchUp() {
    if (this.catching) {
      this.again = true;
      return this.catching;
    }
    this.catching = (async () => {
      try {
        do {
          this.again = false;
          for (let i = 0; i < 100 && !this.view.closed; i++) {
            const page = await changesApi.changedAfter(this.app.api, this.roomId, this.lastChange);
            if (this.view.closed) return;
            for (const m of page.messages) this.apply(m);
            if (page.messages.length < 100) break;
          }
        } while (this.again && !this.view.closed);
      } catch {
        // the next reconnect asks again
      } finally {
        this.catching = null;
      }
    })();
    return this.catching;
  }

  /** onEvent takes a live `edited`, `deleted`, `reaction`, `thread` or `pin` event of this room. */
  onEvent(ev) {
    let m = ev.body;
    if (!m || typeof m !== 'object' || !m.seq) return;
    // A reaction event carries the counts; `me` stays the user's own.
    if (ev.kind === 'reaction') m = mergeReaction(this.view.msgs.get(m.seq), m, ev, this.app.me.id);
    if (!m.change && ev.headers && ev.headers.change) m.change = Number(ev.headers.change);
    if (ev.kind === 'deleted' && !m.deleted_at) m.deleted_at = new Date().toISOString();
    // A gap in the change numbers (an event missed) is filled over REST.
    const gap = m.change > this.lastChange + 1;
    this.apply(m);
    if (gap) this.catchUp();
  }

  /** apply takes a message's new version: the shown one is drawn again in place. */
  apply(m) {
    this.saw(m.change || 0);
    this.app.messageChanged(m);
    threads.changed(this.view, m); // the thread panel shows it (threads.js)
    pins.changed(this.view, m); // the Pinned panel follows pins (pins.js)
    const old = this.view.msgs.get(m.seq);
    if (!old || !newer(old, m)) return;
    this.view.msgs.set(m.seq, m);
    rootChanged(this.view, m);
    const el = this.view.list.querySelector(`li[data-seq="${m.seq}"]`);
    if (!el) return;
    const next = this.view.render(m);
    if (el.classList.contains('msg-target')) next.classList.add('msg-target');
    el.replaceWith(next);
    regroup(next);
  }

  /** rolesChanged draws the toolbars again when the user's role here changed. */
  rolesChanged(role) {
    if (role === this.role) return;
    this.role = role;
    this.view.list.dataset.role = role;
    for (const el of this.view.list.querySelectorAll('li[data-seq]')) {
      const m = this.view.msgs.get(Number(el.dataset.seq));
      if (!m) continue;
      const bar = el.querySelector('.msg-actions');
      if (bar) bar.replaceWith(this.actions(m));
    }
  }

  /**
   * decorate adds a rendered message's change state ("edited", "message
   * deleted") and its toolbar (actions.js).
   */
  decorate(el, m) {
    const foot = h('div', { class: 'msg-foot' });
    if (isDeleted(m)) {
      el.classList.add('deleted');
      el.querySelector('.msg-body').replaceWith(h('p', { class: 'msg-body msg-deleted' }, 'message deleted'));
    } else if (m.edited_at) {
      el.classList.add('edited');
      foot.append(h('span', { class: 'msg-edited', title: 'edited ' + new Date(m.edited_at).toLocaleString() }, 'edited'));
    }
    const pm = m.seq ? pinMarker(m, this.ctx) : null; // pins.js
    if (pm) {
      el.classList.add('pinned');
      foot.prepend(pm);
    }
    el.querySelector('.msg-body').after(foot);
    const q = quote(m, this.ctx); // threads.js
    if (q) el.querySelector('.msg-body').before(q);
    const rs = m.seq ? chips(m, this.ctx) : null; // reactions.js
    if (rs) foot.after(rs);
    const tl = m.seq ? threadLink(m, this.ctx) : null;
    if (tl) (rs || foot).after(tl);
    if (m.seq) el.append(this.actions(m));
  }

  /** actions is the toolbar of the actions the user may use on m (empty when none). */
  actions(m) {
    return toolbar(m, this.ctx);
  }

  /** askDelete confirms in a small dialog, then deletes. */
  async askDelete(seq) {
    const m = this.view.msgs.get(seq);
    const mine = m && m.sender_id === this.app.me.id;
    const ok = await confirmAction({
      title: 'Delete this message?',
      text: mine ? 'It is deleted for everyone in the room. This cannot be undone.'
        : `This deletes ${m ? m.sender_name : 'someone'}’s message for everyone in the room. This cannot be undone.`,
      ok: 'Delete',
    });
    if (ok && !this.view.closed) await this.remove(seq);
  }

  async remove(seq) {
    // One key per message: a Delete confirmed again after a failure
    // (whose answer may have been lost) is the same deletion.
    if (!this.deleteKeys.has(seq)) this.deleteKeys.set(seq, randomId());
    try {
      await changesApi.remove(this.app.api, this.roomId, seq, this.deleteKeys.get(seq));
      // 204 has no body: read the tombstone with the room's other changes.
      await this.catchUp();
    } catch (e) {
      this.fail(this.view.list.querySelector(`li[data-seq="${seq}"]`), 'Not deleted: ' + e.message);
    }
  }

  /** editLast starts editing the user's newest message that may be edited (Up in an empty composer). */
  editLast() {
    const me = this.app.me.id;
    let best = null;
    for (const [seq, m] of this.view.msgs) if (mayEdit(m, me) && (!best || seq > best.seq)) best = m;
    if (!best) return false;
    this.startEdit(best.seq);
    return true;
  }

  /** startEdit puts the message's text into a small form in place of its body. */
  startEdit(seq) {
    const m = this.view.msgs.get(seq);
    const el = this.view.list.querySelector(`li[data-seq="${seq}"]`);
    if (!m || !el || el.querySelector('.msg-edit-form')) return;
    const body = el.querySelector('.msg-body');
    el.classList.add('editing'); // only Save and Cancel while editing
    el.classList.remove('tools-open');
    const input = h('textarea', { class: 'msg-edit-input', rows: '2', 'aria-label': 'Edit message' });
    input.value = m.body;
    const cancel = () => {
      const cur = this.view.msgs.get(seq) || m;
      const fresh = this.view.render(cur);
      el.replaceWith(fresh);
      regroup(fresh);
    };
    const form = h('form', { class: 'msg-edit-form' }, input,
      h('span', { class: 'buttons' },
        h('button', { type: 'submit', class: 'small' }, 'Save'),
        h('button', { type: 'button', class: 'secondary small', onclick: cancel }, 'Cancel')));
    let attempt = { text: null, id: '' }; // a Save pressed again with the same text is the same edit
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const text = input.value;
      if (!text.trim() || text === m.body) {
        cancel();
        return;
      }
      if (attempt.text !== text) attempt = { text, id: randomId() };
      form.querySelectorAll('button').forEach((b) => { b.disabled = true; });
      try {
        const updated = await changesApi.edit(this.app.api, this.roomId, seq, text, attempt.id);
        this.apply(updated);
        if (el.isConnected) cancel(); // not newer than what is shown: draw it again anyway
      } catch (err) {
        form.querySelectorAll('button').forEach((b) => { b.disabled = false; });
        this.fail(el, 'Not saved: ' + err.message);
      }
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey) {
        e.preventDefault();
        form.requestSubmit();
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation(); // Escape cancels the edit, not the panel
        cancel();
        document.getElementById('composer-input')?.focus();
      }
    });
    body.replaceWith(form);
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
    el.scrollIntoView({ block: 'nearest' });
  }

  fail(el, text) {
    if (!el) return;
    let status = el.querySelector('.msg-status');
    if (!status) {
      status = h('p', { class: 'msg-status', role: 'alert' });
      el.append(status);
    }
    setText(status, text);
  }
}
