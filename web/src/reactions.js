// Reactions on messages (docs/api.md, "Reactions"): the chips under a
// message (each emoji, its count, pressed when the user is among those who
// put it; a click adds or takes the user's own back), the toolbar's React
// action with a small emoji picker, and the live `reaction` events. The
// server's events carry the counts only: whether the user reacted comes
// from the REST reads (`me`) and from the user's own events (header
// `user`), so no one else's state is ever guessed.

import { h } from './dom.js';
import { addMessageAction } from './actions.js';

const enc = encodeURIComponent;

export const reactionsApi = {
  put: (api, roomId, seq, emoji) => api.req('PUT', `/api/rooms/${enc(roomId)}/messages/${seq}/reactions/${enc(emoji)}`),
  remove: (api, roomId, seq, emoji) => api.req('DELETE', `/api/rooms/${enc(roomId)}/messages/${seq}/reactions/${enc(emoji)}`),
  users: (api, roomId, seq, emoji) => api.req('GET', `/api/rooms/${enc(roomId)}/messages/${seq}/reactions/${enc(emoji)}/users?limit=20`),
};

/** pickerEmojis are the picker's choices: a short list, as most chat pickers open with. */
export const pickerEmojis = ['👍', '❤️', '😂', '🎉', '😮', '😢', '🙏', '👀', '🔥', '✅', '👎', '🚀'];

/**
 * mergeReaction returns the message of a `reaction` event (its counts)
 * with `me` kept from the shown version old, and set for the event's
 * emoji when the event is the user's own.
 */
export function mergeReaction(old, m, ev, meId) {
  const mine = new Set(((old && old.reactions) || []).filter((r) => r.me).map((r) => r.emoji));
  if (ev && ev.user === meId && ev.headers && ev.headers.emoji) {
    if (ev.action === 'added') mine.add(ev.headers.emoji);
    else if (ev.action === 'removed') mine.delete(ev.headers.emoji);
  }
  const reactions = (m.reactions || []).map((r) => ({ emoji: r.emoji, count: r.count, me: mine.has(r.emoji) }));
  return { ...m, reactions };
}

/** chips draws a message's reactions under it; null when it has none. */
export function chips(m, ctx) {
  const rs = m.reactions || [];
  if (!rs.length || m.deleted_at) return null;
  const box = h('div', { class: 'msg-reactions', role: 'group', 'aria-label': 'Reactions' });
  for (const r of rs) {
    const b = h('button', {
      type: 'button', class: 'reaction' + (r.me ? ' me' : ''), 'aria-pressed': r.me ? 'true' : 'false',
      dataset: { emoji: r.emoji }, title: r.emoji,
      'aria-label': `${r.emoji} ${r.count}${r.me ? ', yours' : ''}: ${r.me ? 'take yours back' : 'react too'}`,
      onclick: (e) => {
        e.stopPropagation();
        toggle(ctx, m.seq, r.emoji, !r.me);
      },
    }, h('span', { class: 'reaction-emoji' }, r.emoji), h('span', { class: 'reaction-count' }, String(r.count)));
    // Who reacted is one call away: asked for once, when the chip is
    // looked at (hover or keyboard focus), and shown as its title.
    const who = () => {
      b.removeEventListener('mouseenter', who);
      b.removeEventListener('focus', who);
      reactionsApi.users(ctx.app.api, ctx.view.roomId, m.seq, r.emoji)
        .then((res) => { b.title = `${r.emoji} by ${res.users.map((u) => u.name).join(', ')}`; })
        .catch(() => {});
    };
    b.addEventListener('mouseenter', who);
    b.addEventListener('focus', who);
    box.append(b);
  }
  return box;
}

/** toggle adds (add) or takes back the user's emoji on message seq, and shows the answer. */
export async function toggle(ctx, seq, emoji, add) {
  const view = ctx.view;
  try {
    const m = add
      ? await reactionsApi.put(ctx.app.api, view.roomId, seq, emoji)
      : await reactionsApi.remove(ctx.app.api, view.roomId, seq, emoji);
    if (!view.closed) view.changes.apply(m);
  } catch (e) {
    const el = view.list.querySelector(`li[data-seq="${seq}"]`);
    if (el) view.changes.fail(el, 'Reaction not saved: ' + e.message);
  }
}

/**
 * openPicker shows the emoji picker beside button: a row of emoji
 * buttons, the first focused; arrows move, Enter or a click picks,
 * Escape (or a click elsewhere) closes and gives the focus back.
 */
export function openPicker(m, ctx, button) {
  closePicker();
  const grid = h('div', { class: 'emoji-picker', role: 'dialog', 'aria-label': 'Pick a reaction' });
  const mine = new Set((m.reactions || []).filter((r) => r.me).map((r) => r.emoji));
  const done = () => {
    closePicker();
    button.focus();
  };
  for (const e of pickerEmojis) {
    grid.append(h('button', {
      type: 'button', class: 'emoji-choice', dataset: { emoji: e }, 'aria-label': 'React with ' + e, title: e,
      onclick: (ev) => {
        ev.stopPropagation();
        done();
        toggle(ctx, m.seq, e, !mine.has(e));
      },
    }, e));
  }
  grid.addEventListener('keydown', (ev) => {
    const items = [...grid.querySelectorAll('button')];
    const i = items.indexOf(document.activeElement);
    if (ev.key === 'Escape') {
      ev.preventDefault();
      done();
    } else if (ev.key === 'ArrowRight' || ev.key === 'ArrowDown') {
      ev.preventDefault();
      items[(i + 1) % items.length].focus();
    } else if (ev.key === 'ArrowLeft' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      items[(i - 1 + items.length) % items.length].focus();
    }
  });
  const li = button.closest('li.msg');
  (li || document.body).append(grid);
  grid.querySelector('button').focus();
  setTimeout(() => document.addEventListener('click', outside), 0);
}

function outside(e) {
  if (!e.target.closest('.emoji-picker')) closePicker();
}

/** closePicker takes the open picker away, if any. */
export function closePicker() {
  document.removeEventListener('click', outside);
  for (const p of document.querySelectorAll('.emoji-picker')) p.remove();
}

addMessageAction({
  id: 'react', label: 'React', order: 20,
  when: (m) => !!m.seq && !m.deleted_at,
  run: (m, ctx, button) => openPicker(ctx.view.msgs.get(m.seq) || m, ctx, button),
});
