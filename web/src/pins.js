// Pinned messages (docs/api.md, "Pinned messages"): the toolbar's Pin and
// Unpin (the room's owner and admins; either member of a direct room), a
// "Pinned" marker on a pinned message, and the Pinned panel beside the
// timeline: the room's pins, newest first, each with who pinned it and a
// button that jumps to the message. A pin or unpin by anyone arrives as a
// `pin` event (body: the message in its new version), and through
// changed_after after a reconnect (changes.js), so the marker and the
// open panel follow it live.

import { $, h, setText } from './dom.js';
import { addMessageAction } from './actions.js';
import { panel, narrow } from './panel.js';
import { msgTime } from './timeline.js';

const enc = encodeURIComponent;

export const pinsApi = {
  pin: (api, roomId, seq) => api.req('PUT', `/api/rooms/${enc(roomId)}/messages/${seq}/pin`),
  unpin: (api, roomId, seq) => api.req('DELETE', `/api/rooms/${enc(roomId)}/messages/${seq}/pin`),
  list: (api, roomId, before = 0) =>
    api.req('GET', `/api/rooms/${enc(roomId)}/pins?limit=50` + (before ? `&before=${before}` : '')),
};

/** mayPin: the owner or an admin of a group room, either member of a direct room (as the server decides). */
export function mayPin(role, kind) {
  return kind === 'direct' || role === 'owner' || role === 'admin';
}

/** pinnerName is who pinned, as the page knows them: "you", a member's name, else "someone". */
export function pinnerName(view, id) {
  if (id === view.app.me.id) return 'you';
  const m = view.people && view.people.members && view.people.members.get(id);
  return (m && m.user && m.user.name) || 'someone';
}

/** pinMarker is the "Pinned" mark of a pinned message; null for any other. */
export function pinMarker(m, ctx) {
  const p = m.pinned;
  if (!p || m.deleted_at) return null;
  const by = pinnerName(ctx.view, p.by);
  return h('span', { class: 'pin-mark', title: `Pinned by ${by}, ${new Date(p.at).toLocaleString()}` }, '📌 Pinned');
}

/** setPin pins (pin) or unpins message seq of the view's room, and shows the answer. */
export async function setPin(ctx, seq, pin) {
  const view = ctx.view;
  try {
    const m = pin ? await pinsApi.pin(ctx.app.api, view.roomId, seq) : await pinsApi.unpin(ctx.app.api, view.roomId, seq);
    if (!view.closed) view.changes.apply(m);
  } catch (e) {
    const el = view.list.querySelector(`li[data-seq="${seq}"]`);
    if (el) view.changes.fail(el, (pin ? 'Not pinned: ' : 'Not unpinned: ') + e.message);
  }
}

const pinnable = (m, ctx) => !!m.seq && !m.deleted_at && mayPin(ctx.changes.role, ctx.view.room ? ctx.view.room.kind : '');

addMessageAction({ id: 'pin', label: 'Pin', order: 30, when: (m, ctx) => !m.pinned && pinnable(m, ctx), run: (m, ctx) => setPin(ctx, m.seq, true) });
addMessageAction({ id: 'unpin', label: 'Unpin', order: 30, when: (m, ctx) => !!m.pinned && pinnable(m, ctx), run: (m, ctx) => setPin(ctx, m.seq, false) });

/**
 * The Pinned panel: the pins of the open room. It reads the list when it
 * opens and again whenever a message of the room is pinned or unpinned
 * (or a pinned one changes), so it shows the server's order and versions.
 */
class PinPanel {
  constructor() {
    this.view = null;
    this.gen = 0;
  }

  bind() {
    $('pins-button').addEventListener('click', () => {
      if (panel.isOpen('pins')) panel.close('pins');
      else if (this.view) this.show();
    });
  }

  /** attach makes view (an opened ChatView) the room the panel shows. */
  attach(view) {
    this.view = view;
    $('pins-button').hidden = false;
  }

  /** close takes the panel away when it shows view's room (it closes). */
  close(view) {
    if (this.view !== view) return;
    panel.close('pins');
    this.view = null;
    this.gen++;
    $('pins-button').hidden = true;
    $('pins-list').replaceChildren();
  }

  isOpen(view) {
    return this.view === view && panel.isOpen('pins');
  }

  show() {
    panel.show('pins', 'Pinned', { focus: false });
    this.load();
  }

  /** load reads the room's pins (up to 200, four pages) and draws them. */
  async load() {
    const view = this.view;
    const gen = ++this.gen;
    if (!$('pins-list').children.length) setText($('pins-status'), 'Loading…');
    try {
      const entries = [];
      for (let before = 0, i = 0; i < 4; i++) {
        const page = await pinsApi.list(view.app.api, view.roomId, before);
        if (gen !== this.gen) return;
        entries.push(...page.pins);
        if (!page.next_before) break;
        before = page.next_before;
      }
      $('pins-list').replaceChildren(...entries.map((e) => this.render(e)));
      setText($('pins-status'), entries.length ? '' : 'No pinned messages yet.');
    } catch (e) {
      if (gen === this.gen) setText($('pins-status'), 'Could not load the pins: ' + e.message);
    }
  }

  render(e) {
    const view = this.view;
    const m = e.message;
    const name = m.sender_id === view.app.me.id ? view.app.me.name : m.sender_name || 'Someone';
    const text = [...String(m.body || '')].slice(0, 200).join('').replace(/\s+/g, ' ');
    return h('li', { class: 'pin-entry', dataset: { seq: String(m.seq) } },
      h('div', { class: 'msg-meta' }, h('span', { class: 'msg-sender' }, name), m.sent_at ? msgTime(m.sent_at) : null),
      h('p', { class: 'pin-text' }, text || '(no text)'),
      h('p', { class: 'hint pin-by' }, `Pinned by ${pinnerName(view, e.pinned_by)}, ${new Date(e.pinned_at).toLocaleString()}`),
      h('button', {
        type: 'button', class: 'link-button pin-jump', 'aria-label': `Jump to ${name}'s pinned message`,
        onclick: () => this.jump(m.seq),
      }, 'Jump to message'),
    );
  }

  /** jump opens the room at message seq (as a search hit does); on a phone the panel gives way. */
  jump(seq) {
    const view = this.view;
    if (!view) return;
    if (narrow()) panel.close('pins');
    const link = '#/room/' + enc(view.roomId) + '/m/' + seq;
    if (location.hash === link) view.app.openRoom(view.roomId, seq);
    else location.hash = link;
  }

  /** changed takes a message's new version: a pin, an unpin or a pinned message's change reloads the list. */
  changed(view, m) {
    if (!this.isOpen(view)) return;
    if (m.pinned || $('pins-list').querySelector(`li[data-seq="${m.seq}"]`)) this.load();
  }
}

export const pins = new PinPanel();
