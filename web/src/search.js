// The search box over every room of the user (GET /api/me/search): hits
// newest first, each a link to its message in its room (#/room/{id}/m/{seq},
// which opens the page that ends with it), and "More results" following
// next_cursor. Every hit's text enters the page as text.

import { $, h, setText, shortTime, fullTime } from './dom.js';
import { panel, narrow } from './panel.js';

export const searchApi = {
  search: (api, q, cursor) => {
    const p = new URLSearchParams({ q, limit: '20' });
    if (cursor) p.set('cursor', cursor);
    return api.req('GET', '/api/me/search?' + p);
  },
};

/** hitLink is the route of a hit: its room, opened at its seq. */
export function hitLink(roomId, seq) {
  return '#/room/' + encodeURIComponent(roomId) + '/m/' + seq;
}

export class Search {
  constructor(app) {
    this.app = app;
    this.q = '';
    this.cursor = null;
    this.n = 0; // the latest request: an older answer is dropped
    $('search-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.run($('search-input').value.trim());
    });
    $('search-more').addEventListener('click', () => this.more());
    $('search-close').addEventListener('click', () => this.close());
    // The panel's own close (×, Back, Escape) ends the search too.
    panel.onChange((cur, was) => {
      if (was === 'search' && cur !== 'search') this.reset();
    });
    // On a phone a hit opens its room in place of the results.
    $('search-results').addEventListener('click', (e) => {
      if (e.target.closest('a') && narrow()) panel.close('search');
    });
  }

  /** run starts a search for q (words; the server ignores every other character). */
  async run(q) {
    if (!q) {
      this.close();
      return;
    }
    this.q = q;
    this.cursor = null;
    $('search-results').replaceChildren();
    panel.show('search', 'Search results', { focus: false });
    await this.page(true);
  }

  more() {
    if (this.cursor) this.page(false);
  }

  async page(first) {
    const n = ++this.n;
    $('search-more').hidden = true;
    setText($('search-status'), 'Searching…');
    try {
      const r = await searchApi.search(this.app.api, this.q, first ? null : this.cursor);
      if (n !== this.n) return;
      const list = $('search-results');
      for (const hit of r.hits) list.append(this.renderHit(hit));
      this.cursor = r.next_cursor || null;
      $('search-more').hidden = !this.cursor;
      const count = list.children.length;
      setText($('search-status'), count === 0
        ? `No messages hold “${this.q}”.`
        : `${count}${this.cursor ? '+' : ''} ${count === 1 ? 'message' : 'messages'} with “${this.q}”`);
    } catch (e) {
      if (n !== this.n) return;
      setText($('search-status'), e.code === 'invalid' ? 'Search for a word: letters or digits.' : 'Could not search: ' + e.message);
    }
  }

  renderHit({ room, message: m }) {
    const who = this.app.me && m.sender_id === this.app.me.id ? 'You' : m.sender_name;
    return h('li', { class: 'search-hit', dataset: { room: room.id, seq: String(m.seq) } },
      h('a', { href: hitLink(room.id, m.seq) },
        h('span', { class: 'search-hit-room' }, this.app.roomName(room)),
        ' ',
        h('span', { class: 'search-hit-meta' }, who + ' · ',
          h('time', { datetime: m.sent_at, title: fullTime(m.sent_at) }, shortTime(m.sent_at))),
        h('span', { class: 'search-hit-body' }, m.body)));
  }

  close() {
    if (!panel.close('search')) this.reset();
    $('search-input').focus();
  }

  reset() {
    this.n++;
    this.q = '';
    this.cursor = null;
    $('search-results').replaceChildren();
    setText($('search-status'), '');
  }
}
