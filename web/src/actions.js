// The message toolbar: the actions on one message, shown on hover, on
// keyboard focus and, on a touch screen, on a long press or a tap. Each
// action is one entry of messageActions; adding one (reply, react, pin)
// is one line:
//
//   addMessageAction({ id: 'reply', label: 'Reply', order: 10, when: (m) => !!m.seq && !m.deleted_at, run: (m, ctx) => ctx.view.reply(m) });
//
// `when(m, ctx)` says whether the user may use it on m (ctx: {app, view,
// changes, role}); `run(m, ctx, button)` does it. The toolbar is drawn
// again when the user's role changes and when a message changes.

import { h, setText } from './dom.js';

/** messageActions are the toolbar's actions, drawn by order. */
export const messageActions = [];

export function addMessageAction(a) {
  messageActions.push(a);
  messageActions.sort((x, y) => (x.order || 0) - (y.order || 0));
}

/** messageLink is the address of message seq of a room (a route the page opens). */
export function messageLink(roomId, seq) {
  return location.origin + location.pathname + '#/room/' + encodeURIComponent(roomId) + '/m/' + seq;
}

/** copyText copies text to the clipboard; false when the page may not. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'visually-hidden', readonly: true });
    area.value = text;
    document.body.append(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    area.remove();
    return ok;
  }
}

addMessageAction({
  id: 'copy-link',
  label: 'Copy link',
  order: 50,
  when: (m) => !!m.seq && !m.deleted_at,
  run: async (m, ctx, button) => {
    const ok = await copyText(messageLink(ctx.view.roomId, m.seq));
    setText(button, ok ? 'Copied' : 'Not copied');
    setTimeout(() => setText(button, 'Copy link'), 2000);
  },
});

/** toolbar draws the actions the user may use on m; empty when none. */
export function toolbar(m, ctx) {
  const bar = h('div', { class: 'msg-actions', role: 'toolbar', 'aria-label': 'Message actions' });
  for (const a of messageActions) {
    if (!a.when(m, ctx)) continue;
    bar.append(h('button', {
      type: 'button', class: 'msg-action msg-' + a.id, dataset: { action: a.id }, title: a.label,
      onclick: (e) => {
        e.stopPropagation();
        a.run(m, ctx, e.currentTarget);
      },
    }, a.label));
  }
  return bar;
}

/**
 * bindTouch opens a message's toolbar on a touch screen: a long press
 * (contextmenu) or a tap on the message (not on a link or a button);
 * one message's toolbar at a time.
 */
export function bindTouch(list) {
  const open = (li) => {
    for (const o of list.querySelectorAll('.tools-open')) if (o !== li) o.classList.remove('tools-open');
    if (li) li.classList.toggle('tools-open');
  };
  list.addEventListener('contextmenu', (e) => {
    const li = e.target.closest('li.msg[data-seq]');
    if (!li || e.target.closest('a, button, textarea') || !li.querySelector('.msg-actions button')) return;
    e.preventDefault();
    li.classList.add('tools-open');
    open(null);
    li.classList.add('tools-open');
  });
  list.addEventListener('pointerup', (e) => {
    if (e.pointerType !== 'touch') return;
    const li = e.target.closest('li.msg[data-seq]');
    if (e.target.closest('a, button, textarea, .msg-edit-form')) return;
    open(li && li.querySelector('.msg-actions button') ? li : null);
  });
}
