// Replies and threads (docs/api.md, "Replies and threads"): the toolbar's
// Reply action and the quote above the composer, the quote a reply shows
// of its root, the "N replies" link under a root, and the thread panel
// beside the timeline: the root, its replies (paged from the server, then
// live) and a composer of its own. Threads are one level: a reply to a
// reply joins its root's thread, as the server does.

import { $, h, setText } from './dom.js';
import { addMessageAction } from './actions.js';
import { panel } from './panel.js';
import { renderMarkdown } from './markdown.js';
import { highlightMentions } from './mentions.js';
import { msgTime, relTime } from './timeline.js';
import { chips } from './reactions.js';

const enc = encodeURIComponent;

export const threadsApi = {
  replies: (api, roomId, root, after = 0, limit = 100) =>
    api.req('GET', `/api/rooms/${enc(roomId)}/messages/${root}/replies?after=${after}&limit=${limit}`),
};

/** maxExcerpt is the server's excerpt length, in characters. */
const maxExcerpt = 100;

/** excerptOf is what a reply quotes of its root's text: its first 100 characters. */
export function excerptOf(body) {
  return [...String(body || '')].slice(0, maxExcerpt).join('');
}

/** rootOf is the seq of the thread m belongs to (0: none); a root is its own. */
export function rootOf(m) {
  if (m.reply_to && m.reply_to.seq) return m.reply_to.seq;
  return m.thread ? m.seq : 0;
}

/** quoteText is one line of a quote: "alice: the text" (or "message deleted"). */
function quoteText(r) {
  const text = r.excerpt ? r.excerpt.replace(/\s+/g, ' ') : 'message deleted';
  return `${r.sender_name || 'Someone'}: ${text}`;
}

/** quote is the reply's quote of its root, a button that opens the thread; null for no reply. */
export function quote(m, ctx) {
  const r = m.reply_to;
  if (!r || !r.seq) return null;
  return h('button', {
    type: 'button', class: 'msg-quote', dataset: { root: String(r.seq) },
    'aria-label': 'In reply to ' + quoteText(r) + '. Open the thread',
    onclick: (e) => {
      e.stopPropagation();
      threads.open(ctx.view, r.seq);
    },
  }, h('span', { class: 'msg-quote-text' }, quoteText(r)));
}

/** threadLink is the "N replies" under a root, a button that opens its thread; null without replies. */
export function threadLink(m, ctx) {
  const t = m.thread;
  if (!t || !t.replies) return null;
  const label = t.replies === 1 ? '1 reply' : `${t.replies} replies`;
  return h('button', {
    type: 'button', class: 'msg-thread', dataset: { replies: String(t.replies) },
    'aria-label': `${label}, the last ${relTime(t.last_reply_at)}. Open the thread`,
    onclick: (e) => {
      e.stopPropagation();
      threads.open(ctx.view, m.seq);
    },
  }, h('span', { class: 'msg-thread-count' }, label), ' · last ', h('span', {}, relTime(t.last_reply_at)));
}

/**
 * The thread panel: one thread at a time, of the open room. Live messages
 * that reply to its root are appended; a message it shows that changes
 * (an edit, a deletion, reactions, the root's count) is drawn again.
 */
class ThreadPanel {
  constructor() {
    this.view = null;
    this.root = 0;
    this.msgs = new Map(); // seq -> message shown
    this.gen = 0;
  }

  bind() {
    $('thread-composer').addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    $('thread-input').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
    panel.onChange((cur) => {
      if (cur !== 'thread') this.root = 0;
    });
    $('reply-cancel').addEventListener('click', () => composerReply.cancel());
    $('composer-input').addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && composerReply.seq) {
        e.preventDefault();
        composerReply.cancel();
      }
    });
  }

  isOpen(view) {
    return !!this.root && this.view === view && panel.isOpen('thread');
  }

  /** open shows the thread of root in the panel, and reads its replies. */
  async open(view, root) {
    const gen = ++this.gen;
    this.view = view;
    this.root = root;
    this.msgs.clear();
    $('thread-list').replaceChildren();
    setText($('thread-status'), 'Loading…');
    panel.show('thread', 'Thread', { focus: false });
    const known = view.msgs.get(root);
    if (known) this.put(known);
    try {
      if (!known) {
        const page = await view.app.api.messages(view.roomId, { after: root - 1, limit: 1 });
        if (gen !== this.gen) return;
        if (page.messages[0]) this.put(page.messages[0]);
      }
      for (let after = 0, i = 0; i < 10; i++) { // at most 1,000 replies at once
        const page = await threadsApi.replies(view.app.api, view.roomId, root, after);
        if (gen !== this.gen) return;
        for (const m of page.messages) this.put(m);
        if (page.messages.length < 100) break;
        after = page.messages[page.messages.length - 1].seq;
      }
      setText($('thread-status'), '');
    } catch (e) {
      if (gen === this.gen) setText($('thread-status'), 'Could not load the thread: ' + e.message);
    }
    if (gen === this.gen) $('thread-input').focus({ preventScroll: true });
  }

  /** put shows m (the root or a reply) in order, or draws it again when newer. */
  put(m) {
    const old = this.msgs.get(m.seq);
    if (old && (old.change || 0) > (m.change || 0)) return;
    this.msgs.set(m.seq, m);
    const el = this.render(m);
    const list = $('thread-list');
    const shown = list.querySelector(`li[data-seq="${m.seq}"]`);
    if (shown) {
      shown.replaceWith(el);
      return;
    }
    let before = null;
    for (const c of list.children) {
      if (Number(c.dataset.seq) > m.seq) {
        before = c;
        break;
      }
    }
    list.insertBefore(el, before);
  }

  render(m) {
    const ctx = this.view.changes.ctx;
    const deleted = !!m.deleted_at;
    return h('li', { class: 'thread-msg' + (m.seq === this.root ? ' thread-root' : ''), dataset: { seq: String(m.seq) } },
      h('div', { class: 'msg-meta' },
        h('span', { class: 'msg-sender' }, m.sender_id === this.view.app.me.id ? this.view.app.me.name : m.sender_name || 'Someone'),
        m.sent_at ? msgTime(m.sent_at) : null),
      deleted ? h('p', { class: 'msg-body msg-deleted' }, 'message deleted') : h('div', { class: 'msg-body' }, ...highlightMentions(renderMarkdown(m.body || ''), m, this.view.app.me)),
      m.seq === this.root && m.thread ? h('p', { class: 'hint thread-count' }, m.thread.replies === 1 ? '1 reply' : `${m.thread.replies} replies`) : null,
      chips(m, ctx),
    );
  }

  /** close takes the panel away when it shows a thread of view (its room closes). */
  close(view) {
    if (this.view !== view) return;
    if (this.isOpen(view)) panel.close('thread');
    this.view = null;
    this.root = 0;
    this.msgs.clear();
  }

  /** onMessage takes a message of the view's room: a reply of the open thread is shown. */
  onMessage(view, m) {
    if (this.isOpen(view) && m.reply_to && m.reply_to.seq === this.root) this.put(m);
  }

  /** changed takes a message's new version: shown in the thread, it is drawn again. */
  changed(view, m) {
    if (this.isOpen(view) && this.msgs.has(m.seq)) this.put(m);
  }

  submit() {
    const input = $('thread-input');
    const body = input.value;
    if (!body.trim() || !this.view || !this.root || this.view.closed) return;
    input.value = '';
    this.view.send(body, this.root);
  }
}

export const threads = new ThreadPanel();

/** composerReply is the reply the room's composer is writing: the quote above it. */
export const composerReply = {
  seq: 0,
  set(m) {
    this.seq = rootOf(m) || m.seq;
    const root = m.reply_to && m.reply_to.seq ? m.reply_to : { seq: m.seq, sender_name: m.sender_name, excerpt: excerptOf(m.body) };
    setText($('reply-quote'), 'Replying to ' + quoteText(root));
    $('reply-bar').hidden = false;
    $('composer-input').focus();
  },
  cancel() {
    this.seq = 0;
    $('reply-bar').hidden = true;
  },
  /** take returns the seq to reply to and clears the quote (0: none). */
  take() {
    const seq = this.seq;
    this.cancel();
    return seq;
  },
};

/**
 * rootChanged shows a root's edit or deletion in the quotes of its replies
 * the view shows: the server rewrites their excerpt, but tells no one of
 * each reply.
 */
export function rootChanged(view, m) {
  if (!m.thread) return;
  const excerpt = m.deleted_at ? '' : excerptOf(m.body);
  for (const r of view.msgs.values()) {
    if (!r.reply_to || r.reply_to.seq !== m.seq || r.reply_to.excerpt === excerpt) continue;
    r.reply_to = { ...r.reply_to, excerpt };
    const el = view.list.querySelector(`li[data-seq="${r.seq}"] .msg-quote`);
    const q = quote(r, view.changes.ctx);
    if (el && q) el.replaceWith(q);
  }
}

addMessageAction({
  id: 'reply', label: 'Reply', order: 10,
  when: (m) => !!m.seq && !m.deleted_at,
  run: (m) => composerReply.set(m),
});
