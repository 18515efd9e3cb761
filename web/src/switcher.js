// The quick switcher (Ctrl+K or Cmd+K anywhere): a small dialog that
// lists the rooms, filtered as one types; arrows choose, Enter opens.

import { $, h, setText } from './dom.js';

export class Switcher {
  constructor(app) {
    this.app = app;
    this.items = [];
    this.index = 0;
    this.dialog = $('switcher');
    this.input = $('switcher-input');
    this.input.addEventListener('input', () => {
      this.index = 0;
      this.render();
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = this.items.length;
        if (n) this.index = (this.index + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        this.render();
      } else if (e.key === 'Enter') {
        e.preventDefault();
        this.choose(this.items[this.index]);
      }
    });
  }

  open() {
    if (!this.app.me || this.dialog.open) return;
    this.input.value = '';
    this.index = 0;
    this.render();
    this.dialog.showModal();
    this.input.focus();
  }

  choose(e) {
    if (!e) return;
    this.dialog.close();
    location.hash = '#/room/' + encodeURIComponent(e.room.id);
  }

  render() {
    const q = this.input.value.trim().toLowerCase();
    const app = this.app;
    const current = app.view ? app.view.roomId : '';
    const all = [...app.rooms.values()].sort((a, b) =>
      Math.max(0, b.room.last_seq - b.readSeq) - Math.max(0, a.room.last_seq - a.readSeq) ||
      Date.parse(b.room.last_activity_at) - Date.parse(a.room.last_activity_at));
    this.items = all.filter((e) => e.room.id !== current || q).filter((e) => !q || app.roomName(e.room, e.last).toLowerCase().includes(q)).slice(0, 12);
    if (this.index >= this.items.length) this.index = 0;
    const list = $('switcher-list');
    list.replaceChildren(...this.items.map((e, i) => {
      const unread = Math.max(0, e.room.last_seq - e.readSeq);
      return h('li', {
        id: 'switch-' + i, role: 'option', 'aria-selected': String(i === this.index), dataset: { room: e.room.id },
        onclick: () => this.choose(e),
      }, h('span', { class: 'switch-name' }, app.roomName(e.room, e.last)),
      unread ? h('span', { class: 'badge' }, String(unread)) : null);
    }));
    if (this.items.length === 0) list.append(h('li', { class: 'hint' }, 'No room matches.'));
    this.input.setAttribute('aria-activedescendant', this.items.length ? 'switch-' + this.index : '');
    setText($('switcher-label'), 'Switch to a room');
  }
}
