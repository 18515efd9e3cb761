// The panel beside the timeline (right-hand on a desktop; the whole screen
// with a Back button on a phone): the members and room settings, the
// invite link, search results. One shows at a time; Escape, the close
// button and Back close it, and the focus goes back to what opened it.

import { $, setText } from './dom.js';

const sections = ['people', 'invite', 'search', 'thread', 'pins'];
const buttons = { people: 'people-button', invite: 'invite-button', pins: 'pins-button' };

class Panel {
  constructor() {
    this.current = '';
    this.opener = null;
    this.listeners = new Set();
  }

  bind() {
    $('panel-close').addEventListener('click', () => this.close());
    $('panel-back').addEventListener('click', () => this.close());
  }

  /** onChange calls fn(current) whenever the panel opens, changes or closes. */
  onChange(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  isOpen(id) {
    return this.current === id;
  }

  /** show opens section id with a title; focus moves into the panel unless told not to. */
  show(id, title, { focus = true } = {}) {
    if (this.current !== id) this.opener = document.activeElement;
    this.current = id;
    for (const s of sections) $(s).hidden = s !== id;
    for (const [s, b] of Object.entries(buttons)) $(b).setAttribute('aria-expanded', String(s === id));
    setText($('panel-title'), title);
    $('panel').hidden = false;
    $('chat-app').classList.add('panel-open');
    if (focus) $('panel-close').focus({ preventScroll: true });
    for (const fn of this.listeners) fn(id);
  }

  /** close hides the panel (only when it shows id, if given). */
  close(id) {
    if (!this.current || (id && this.current !== id)) return false;
    const was = this.current;
    this.current = '';
    for (const s of sections) $(s).hidden = true;
    for (const b of Object.values(buttons)) $(b).setAttribute('aria-expanded', 'false');
    $('panel').hidden = true;
    $('chat-app').classList.remove('panel-open');
    const back = this.opener;
    this.opener = null;
    if (back && back.isConnected && !back.closest('[hidden]') && $('panel').contains(document.activeElement) === false) back.focus({ preventScroll: true });
    else if (back && back.isConnected && !back.closest('[hidden]')) back.focus({ preventScroll: true });
    for (const fn of this.listeners) fn('', was);
    return true;
  }
}

export const panel = new Panel();

/** narrow tells a phone-width screen, where the panel takes the whole screen. */
export function narrow() {
  return window.matchMedia('(max-width: 699px)').matches;
}
