// Room events (design §4): MESSAGE frames on /topic/rooms.{id}.events and
// /user/queue/events with an `event` header and a JSON body. This module
// turns a frame into a plain object and keeps the two clocks of typing: who
// is typing here (each shown for 5 s unless repeated) and when this page
// may next say that its user is typing (at most once every 2 s).

/** userEvents is the personal queue of events of every room of the user. */
export const userEvents = '/user/queue/events';

/** roomEvents is a room's event topic (members only). */
export function roomEvents(roomId) {
  return '/topic/rooms.' + roomId + '.events';
}

/**
 * Recent remembers the last few event ids: an open room's event comes both
 * on its topic and on the personal queue, with the same message-id.
 */
export class Recent {
  constructor(size = 256) {
    this.size = size;
    this.ids = new Set();
  }

  /** add reports whether id is new, and remembers it. */
  add(id) {
    if (!id) return true;
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.size) this.ids.delete(this.ids.values().next().value);
    return true;
  }
}

/** How long a "… is typing" stays without another typing event. */
export const typingShownMs = 5000;

/** The least time between two typing SENDs of one page to one room. */
export const typingEveryMs = 2000;

/**
 * eventOf turns an event frame into {id, kind, roomId, user, action, seq, role,
 * room, body, headers}: room is the room's new info when the event carries
 * it (a member event), body the parsed JSON body (null when empty or not
 * JSON).
 */
export function eventOf(frame) {
  const hd = frame.headers;
  let body = null;
  if (frame.body && frame.body.trim()) {
    try {
      body = JSON.parse(frame.body);
    } catch {
      body = null;
    }
  }
  const topic = /^\/topic\/rooms\.(.+)\.events$/.exec(hd.destination || '');
  const room = roomOf(body);
  const roomId = hd.room || (topic && topic[1]) || (room && room.id) || (body && body.room_id) || '';
  return {
    id: hd['message-id'] || '',
    kind: hd.event || '',
    roomId,
    user: hd.user || '',
    userName: hd['user-name'] || (body && body.user && body.user.name) || '',
    action: hd.action || '',
    seq: hd.seq !== undefined ? Number(hd.seq) : 0,
    role: hd.role || (body && body.role) || '',
    room,
    body,
    headers: hd,
  };
}

/** roomOf finds a room's info in an event body: the room itself, or under "room". */
function roomOf(body) {
  if (!body || typeof body !== 'object') return null;
  if (body.room && typeof body.room === 'object' && body.room.id) return body.room;
  if (body.id && 'member_count' in body) return body;
  return null;
}

/**
 * Typists is who is typing in one room: saw(user) shows a user for
 * typingShownMs, again from now if repeated; stop(user) ends it at once (the
 * user's message arrived). onChange runs after each change.
 */
export class Typists {
  constructor(onChange) {
    this.onChange = onChange;
    this.timers = new Map(); // user id -> timeout
  }

  saw(user) {
    const had = this.timers.has(user);
    clearTimeout(this.timers.get(user));
    this.timers.set(user, setTimeout(() => this.stop(user), typingShownMs));
    if (!had) this.onChange();
  }

  stop(user) {
    if (!this.timers.has(user)) return;
    clearTimeout(this.timers.get(user));
    this.timers.delete(user);
    this.onChange();
  }

  /** ids are the users typing now, in the order they started. */
  ids() {
    return [...this.timers.keys()];
  }

  clear() {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}

/**
 * TypingThrottle calls send at most once every typingEveryMs while poke is
 * called (on each keystroke). It never sends sooner, even after a message
 * went out: the server passes one typing event per user and room every 2 s.
 */
export class TypingThrottle {
  constructor(send, now = () => Date.now()) {
    this.send = send;
    this.now = now;
    this.last = -Infinity;
  }

  poke() {
    const t = this.now();
    if (t - this.last < typingEveryMs) return;
    this.last = t;
    this.send();
  }
}

/** typingText says who is typing, by name: "bob is typing…", "bob and carol are typing…". */
export function typingText(names) {
  if (names.length === 0) return '';
  if (names.length === 1) return `${names[0]} is typing…`;
  if (names.length === 2) return `${names[0]} and ${names[1]} are typing…`;
  if (names.length === 3) return `${names[0]}, ${names[1]} and ${names[2]} are typing…`;
  return `${names[0]}, ${names[1]} and ${names.length - 2} others are typing…`;
}
