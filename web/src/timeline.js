// The timeline read at a glance: avatars (initials on a colour derived
// from the name), a sender's consecutive messages grouped under one name,
// a separator at each new day and a "New messages" line at the first
// unread, relative times that keep current (the full date on hover).

import { h } from './dom.js';

/** avatarColors is how many avatar colours app.css defines (.av-0 … .av-11). */
const avatarColors = 12;

/** avatarClass picks a colour from the name, the same on every page. */
export function avatarClass(name) {
  let x = 0;
  for (const ch of String(name || '')) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return 'av-' + (x % avatarColors);
}

/** initials: "alice" → "A", "Mary Ann" → "MA", "bob_smith" → "BS". */
export function initials(name) {
  const parts = String(name || '?').split(/[\s._-]+/).filter(Boolean);
  const first = (s) => [...s][0] || '';
  const out = parts.length > 1 ? first(parts[0]) + first(parts[1]) : first(parts[0] || '?');
  return out.toUpperCase() || '?';
}

/**
 * isBot says whether a user id is a bot account's (a server API key's
 * user, docs/api.md "Server API keys and bots"): "b" and 26 characters,
 * where a person's id has 26; the API's user objects also say "bot".
 */
export function isBot(id) {
  return typeof id === 'string' && id.length === 27 && id[0] === 'b';
}

/** botBadge is the small "bot" label beside a bot's name. */
export function botBadge() {
  return h('span', { class: 'bot-badge', title: 'a bot: it posts through a server API key' }, 'bot');
}

/** avatar is the small picture of a sender (initials; the uploaded picture once files exist). */
export function avatar(name) {
  return h('span', { class: 'msg-avatar ' + avatarClass(name), 'aria-hidden': 'true' }, initials(name));
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const clockFmt = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', month: 'long', day: 'numeric' });
const yearFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' });
const fullFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });

function dayKey(d) {
  return d.getFullYear() + '-' + d.getMonth() + '-' + d.getDate();
}

/** dayLabel names a message's day: Today, Yesterday, or the date. */
export function dayLabel(iso, now = new Date()) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  if (dayKey(d) === dayKey(now)) return 'Today';
  const y = new Date(now);
  y.setDate(y.getDate() - 1);
  if (dayKey(d) === dayKey(y)) return 'Yesterday';
  return d.getFullYear() === now.getFullYear() ? dayFmt.format(d) : yearFmt.format(d);
}

/** relTime is "just now", "5 min ago" within the hour, the time of day after. */
export function relTime(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return Math.max(1, Math.round(s / 60)) + ' min ago';
  return timeFmt.format(new Date(t));
}

/** fullDate is the hover text of a time: the whole date, to the second. */
export function fullDate(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : fullFmt.format(d);
}

/** clock is the time of day, shown beside a grouped message on hover. */
export function clock(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : clockFmt.format(d);
}

/** msgTime is a message's time element: relative text, the full date in its title. */
export function msgTime(iso) {
  return h('time', { class: 'msg-time', datetime: iso, title: fullDate(iso), dataset: { rel: '1' } }, relTime(iso));
}

/** refreshTimes redraws the relative times under root (every half minute). */
export function refreshTimes(root) {
  const now = Date.now();
  for (const t of root.querySelectorAll('time[data-rel]')) {
    const text = relTime(t.getAttribute('datetime'), now);
    if (t.textContent !== text) t.textContent = text;
  }
}

/** groupGap is how close two messages of one sender must be to share a header. */
const groupGap = 5 * 60 * 1000;

function sameDay(a, b) {
  const x = new Date(a);
  const y = new Date(b);
  return !Number.isNaN(x.getTime()) && !Number.isNaN(y.getTime()) && dayKey(x) === dayKey(y);
}

function continues(prev, el) {
  if (!prev || !el || !prev.dataset.sender || prev.dataset.sender !== el.dataset.sender) return false;
  if (el.classList.contains('first-unread') || el.querySelector(':scope > .day-sep')) return false;
  const a = Date.parse(prev.dataset.at || '');
  const b = Date.parse(el.dataset.at || '');
  // A message still sending has no time yet: it follows the one before.
  return Number.isNaN(b) || (!Number.isNaN(a) && b - a >= 0 && b - a < groupGap);
}

/** lastTime is the time of the nearest message before el that has one. */
function timeBefore(el) {
  for (let p = el.previousElementSibling; p; p = p.previousElementSibling) if (p.dataset.at) return p.dataset.at;
  return '';
}

/** daySep puts (or takes away) the separator above el when its day differs from the one before. */
function daySep(el) {
  const at = el.dataset.at;
  const prevAt = at ? timeBefore(el) : '';
  const want = at && (!prevAt || !sameDay(prevAt, at)) ? dayLabel(at) : '';
  let sep = el.querySelector(':scope > .day-sep');
  if (!want) {
    if (sep) sep.remove();
    return;
  }
  if (!sep) {
    sep = h('div', { class: 'day-sep', role: 'separator' }, h('span', {}, ''));
    el.prepend(sep);
  }
  if (sep.firstChild.textContent !== want) {
    sep.firstChild.textContent = want;
    sep.setAttribute('aria-label', want);
  }
}

/**
 * regroup draws el and the element after it again: a day separator above
 * a message of a new day, and the class `cont` on a message that
 * continues the one before (same sender, within five minutes, the same
 * day, not the first unread): it shows no name and avatar of its own.
 * Call it whenever el enters the list.
 */
export function regroup(el) {
  for (const x of [el, el && el.nextElementSibling]) {
    if (!x) continue;
    daySep(x);
    x.classList.toggle('cont', continues(x.previousElementSibling, x));
  }
}

/** markFirstUnread draws the "New messages" line above li (and none elsewhere). */
export function markFirstUnread(list, li) {
  for (const old of list.querySelectorAll('.first-unread')) {
    old.classList.remove('first-unread');
    old.querySelector(':scope > .unread-sep')?.remove();
    regroup(old);
  }
  if (!li) return;
  li.classList.add('first-unread');
  const sep = h('div', { class: 'unread-sep', role: 'separator', 'aria-label': 'New messages' }, h('span', {}, 'New messages'));
  const day = li.querySelector(':scope > .day-sep');
  if (day) day.after(sep);
  else li.prepend(sep);
  regroup(li);
}
