// Unit tests of the people view's pure parts: who may do what, the typing
// clocks on a driven clock, the texts, and the parsing of event frames.
// They need no browser: node --test test/people-unit.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventOf, Recent, TypingThrottle, typingText, typingEveryMs } from '../src/events.js';
import { can, seenText } from '../src/members.js';

test('can: the owner moderates everyone but himself, an admin plain members only, a member nobody', () => {
  const cases = [
    // mine, theirs, self, rename, remove, setRole
    ['owner', 'admin', false, true, true, true],
    ['owner', 'member', false, true, true, true],
    ['owner', 'owner', true, true, false, false],
    ['admin', 'owner', false, true, false, false],
    ['admin', 'admin', false, true, false, false],
    ['admin', 'member', false, true, true, false],
    ['admin', 'admin', true, true, false, false],
    ['member', 'member', false, false, false, false],
    ['member', 'owner', false, false, false, false],
    ['', 'member', false, false, false, false],
  ];
  for (const [mine, theirs, self, rename, remove, setRole] of cases) {
    const got = can(mine, theirs, self);
    assert.deepEqual([got.rename, got.remove, got.setRole], [rename, remove, setRole], `can(${mine}, ${theirs}, ${self})`);
  }
});

test('TypingThrottle sends at most once every 2 s', () => {
  let now = 0;
  const sent = [];
  const th = new TypingThrottle(() => sent.push(now), () => now);
  for (now = 0; now <= 5000; now += 100) th.poke();
  assert.deepEqual(sent, [0, typingEveryMs, 2 * typingEveryMs]);
});

test('texts', () => {
  assert.equal(typingText([]), '');
  assert.equal(typingText(['bob']), 'bob is typing…');
  assert.equal(typingText(['bob', 'carol']), 'bob and carol are typing…');
  assert.equal(typingText(['a', 'b', 'c', 'd', 'e']), 'a, b and 3 others are typing…');
  assert.equal(seenText(['bob']), 'Seen by bob');
  assert.equal(seenText(['bob', 'carol', 'dan']), 'Seen by bob, carol and dan');
  assert.equal(seenText(['bob', 'carol', 'dan', 'eve']), 'Seen by bob, carol and 2 others');
});

test('eventOf reads the headers and the room info of a member event', () => {
  const room = { id: 'r1', kind: 'group', title: 'T', capacity: 5, member_count: 2, last_seq: 7 };
  const ev = eventOf({
    headers: { destination: '/user/queue/events', 'message-id': 'm1', event: 'member', room: 'r1', user: 'u2', action: 'joined' },
    body: JSON.stringify(room),
  });
  assert.deepEqual([ev.id, ev.kind, ev.roomId, ev.user, ev.action], ['m1', 'member', 'r1', 'u2', 'joined']);
  assert.deepEqual(ev.room, room);
  const typing = eventOf({ headers: { destination: '/topic/rooms.r9.events', event: 'typing', user: 'u3' }, body: '{"user":"u3"}' });
  assert.equal(typing.roomId, 'r9', 'the room from the destination');
  assert.equal(typing.room, null);
  const read = eventOf({ headers: { event: 'read', room: 'r1', user: 'u2', seq: '12' }, body: '' });
  assert.equal(read.seq, 12);
});

test('Recent drops a repeated id and forgets the oldest', () => {
  const r = new Recent(2);
  assert.equal(r.add('a'), true);
  assert.equal(r.add('a'), false);
  r.add('b');
  r.add('c');
  assert.equal(r.add('a'), true, 'a was forgotten');
  assert.equal(r.add(''), true, 'no id: never a duplicate');
});
