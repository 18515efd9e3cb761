// Small pieces of the page kept apart from the views that use them: the
// composer's length check against the server's --max-body, the unread
// count in the tab title, the invite link's Copy button and the wording
// of a full room.

import { setText } from './dom.js';

/** byteLength is the UTF-8 length of s, as the server counts --max-body. */
export function byteLength(s) {
  return new TextEncoder().encode(s).length;
}

/**
 * ComposerLimit checks the composer against the server's largest body
 * (GET /api/config): a counter shows once the text is within a tenth of
 * the limit, and over it the Send button is disabled and the counter
 * says by how much, so an over-long message is never sent.
 */
export class ComposerLimit {
  constructor(input, counter, button) {
    this.input = input;
    this.counter = counter;
    this.button = button;
    this.max = 0; // 0: unknown, no check
    input.addEventListener('input', () => this.update());
  }

  setMax(n) {
    this.max = n > 0 ? n : 0;
    this.update();
  }

  /** update redraws the counter; it reports whether the text may be sent. */
  update() {
    const n = byteLength(this.input.value);
    const over = this.max > 0 && n > this.max;
    const near = this.max > 0 && n >= this.max * 0.9;
    this.counter.hidden = !near;
    this.counter.classList.toggle('over', over);
    setText(this.counter, !near ? '' : over
      ? `${n - this.max} bytes too long (the limit is ${this.max})`
      : `${this.max - n} bytes left`);
    this.button.disabled = over;
    this.input.setAttribute('aria-invalid', over ? 'true' : 'false');
    return !over;
  }
}

/** unreadTitle is the tab title: the unread count first when there is any, and the mentions of me. */
export function unreadTitle(unread, base = 'Parley', mentions = 0) {
  const at = mentions > 0 ? `@${mentions} ` : '';
  return unread > 0 ? `${at}(${unread}) ${base}` : at + base;
}

/** fullText says that a room has no free seat, in words that fit the count. */
export function fullText(room) {
  return room.capacity === 1 ? 'This room is full: its one seat is taken.' : `This room is full: all ${room.capacity} seats are taken.`;
}

/** isFull reports whether a room has no free seat. */
export function isFull(room) {
  return room.capacity > 0 && room.member_count >= room.capacity;
}

/** copyInvite copies the invite link and says so on the button. */
export async function copyInvite(input, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(input.value);
    ok = true;
  } catch {
    // Not a secure context, or no permission: copy the selection instead.
    input.select();
    try { ok = document.execCommand('copy'); } catch { ok = false; }
  }
  setText(button, ok ? 'Copied' : 'Press Ctrl+C to copy');
  clearTimeout(button.resetTimer);
  button.resetTimer = setTimeout(() => setText(button, 'Copy'), 2000);
}
