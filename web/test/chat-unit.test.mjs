// Unit tests of the chat page's pure parts: avatars, day labels and
// relative times (timeline.js), the link check of the Markdown
// (markdown.js), and who gets a desktop notification (notify.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { avatarClass, initials, dayLabel, relTime } from '../src/timeline.js';
import { safeHref } from '../src/markdown.js';
import { shouldNotify } from '../src/notify.js';
import { mentionBefore, matchNames, mentionCount } from '../src/mentions.js';
import { unreadTitle } from '../src/polish.js';
import { messageActions } from '../src/actions.js';
import '../src/changes.js'; // registers Edit and Delete

test('initials and avatar colours', () => {
  assert.equal(initials('alice'), 'A');
  assert.equal(initials('Mary Ann'), 'MA');
  assert.equal(initials('bob_smith'), 'BS');
  assert.equal(initials('élodie'), 'É');
  assert.equal(initials(''), '?');
  assert.equal(avatarClass('alice'), avatarClass('alice'), 'the same name, the same colour');
  assert.match(avatarClass('bob'), /^av-(\d|1[01])$/);
  const colours = new Set(['alice', 'bob', 'carol', 'dave', 'erin', 'frank'].map(avatarClass));
  assert.ok(colours.size >= 4, 'names spread over the colours');
});

test('day labels: Today, Yesterday, a date', () => {
  const now = new Date(2026, 11, 6, 10, 0);
  assert.equal(dayLabel(new Date(2026, 11, 6, 0, 1).toISOString(), now), 'Today');
  assert.equal(dayLabel(new Date(2026, 11, 5, 23, 59).toISOString(), now), 'Yesterday');
  assert.match(dayLabel(new Date(2026, 10, 20).toISOString(), now), /20/);
  assert.doesNotMatch(dayLabel(new Date(2026, 10, 20).toISOString(), now), /2026/, 'this year without the year');
  assert.match(dayLabel(new Date(2025, 10, 20).toISOString(), now), /2025/);
  assert.equal(dayLabel('not a date', now), '');
});

test('relative times', () => {
  const now = Date.parse('2026-12-06T10:00:00Z');
  assert.equal(relTime('2026-12-06T09:59:40Z', now), 'just now');
  assert.equal(relTime('2026-12-06T09:55:00Z', now), '5 min ago');
  assert.equal(relTime('2026-12-06T09:01:00Z', now), '59 min ago');
  assert.match(relTime('2026-12-06T08:00:00Z', now), /\d{1,2}:\d{2}/, 'the time of day after an hour');
});

test('links keep only absolute http(s) and mailto URLs', () => {
  assert.equal(safeHref('https://example.com/a?b=1'), 'https://example.com/a?b=1');
  assert.equal(safeHref('http://example.com'), 'http://example.com/');
  assert.equal(safeHref('mailto:a@example.com'), 'mailto:a@example.com');
  for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'java\tscript:alert(1)', ' javascript:alert(1)', 'java\nscript:x',
    'data:text/html,<script>alert(1)</script>', 'vbscript:msgbox(1)', 'file:///etc/passwd', '/relative', '//evil.example/x',
    'javascript&#58;alert(1)', '', null, undefined, 42]) {
    assert.equal(safeHref(bad), null, `refused: ${JSON.stringify(bad)}`);
  }
});

test('desktop notifications: direct messages of others, and mentions once the server names them', () => {
  const me = { id: 'u1' };
  const direct = { kind: 'direct' };
  const group = { kind: 'group' };
  assert.equal(shouldNotify({ sender_id: 'u2', body: 'hi' }, direct, me), true);
  assert.equal(shouldNotify({ sender_id: 'u1', body: 'mine' }, direct, me), false);
  assert.equal(shouldNotify({ sender_id: 'u2', body: 'hi' }, group, me), false);
  assert.equal(shouldNotify({ sender_id: 'u2', deleted_at: 'x' }, direct, me), false);
  assert.equal(shouldNotify({ sender_id: 'u2', body: '@me', mentions: ['u1'] }, group, me), true, 'a mention');
  assert.equal(shouldNotify({ sender_id: 'u2', body: '@room', mentions: ['@room'] }, group, me), true, '@room');
  assert.equal(shouldNotify({ sender_id: 'u2', body: '@x', mentions: ['u3'] }, group, me), false, 'another mentioned');
  // The room's level: mentions only, or nothing.
  assert.equal(shouldNotify({ sender_id: 'u2', body: 'hi' }, direct, me, 'mentions'), false);
  assert.equal(shouldNotify({ sender_id: 'u2', body: '@me', mentions: ['u1'] }, group, me, 'mentions'), true);
  assert.equal(shouldNotify({ sender_id: 'u2', body: '@me', mentions: ['u1'] }, group, me, 'none'), false);
  assert.equal(shouldNotify({ sender_id: 'u2', body: 'hi' }, direct, me, 'none'), false);
});

test('mentions: the @prefix typed, the names that complete it, the counts, the title', () => {
  assert.equal(mentionBefore('hi @al'), 'al');
  assert.equal(mentionBefore('@'), '');
  assert.equal(mentionBefore('mail bob@al'), null, 'not at a word start');
  assert.equal(mentionBefore('hi @al ice'), null, 'a space ends it');
  assert.deepEqual(matchNames(['bob', 'alice', 'Alan', 'al'], 'al'), ['al', 'alice', 'Alan']);
  const e = { readSeq: 3, mentionBase: 2, mentionBaseSeq: 5, mentionSeqs: new Set([6, 2]) };
  assert.equal(mentionCount(e), 3, 'the server\'s two, and seq 6');
  assert.equal(mentionCount({ ...e, readSeq: 5 }), 1, 'read past the server\'s');
  assert.equal(mentionCount({ ...e, notifications: 'none' }), 0);
  assert.equal(unreadTitle(4, 'Parley', 2), '@2 (4) Parley');
  assert.equal(unreadTitle(0), 'Parley');
});

test('the toolbar: one entry per action, in order; adding one is one call', () => {
  assert.deepEqual(messageActions.map((a) => a.id), ['reply', 'react', 'pin', 'unpin', 'edit', 'copy-link', 'delete']);
  for (const a of messageActions) {
    assert.equal(typeof a.when, 'function');
    assert.equal(typeof a.run, 'function');
    assert.ok(a.label);
  }
});

test('pins: the owner and admins of a group room pin, a member does not; either member of a direct room does', async () => {
  const { mayPin } = await import('../src/pins.js');
  assert.equal(mayPin('owner', 'group'), true);
  assert.equal(mayPin('admin', 'group'), true);
  assert.equal(mayPin('member', 'group'), false);
  assert.equal(mayPin('', 'group'), false, 'a role not known yet');
  assert.equal(mayPin('member', 'direct'), true);
});
