// Unit tests of the changes view's pure parts: who may edit or delete a
// message, which version of a message is newer, and the room list's text
// of a tombstone. They need no browser: node --test test/changes-unit.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mayDelete, mayEdit, newer, preview } from '../src/changes.js';
import { hitLink } from '../src/search.js';

const msg = (o) => ({ seq: 3, sender_id: 'bob', body: 'hi', deleted_at: null, change: 0, ...o });

test('mayDelete: the sender, or the owner or an admin of a group room; never a tombstone', () => {
  const cases = [
    // sender, me, role, kind, deleted, want
    ['bob', 'bob', 'member', 'group', false, true],
    ['bob', 'alice', 'owner', 'group', false, true],
    ['bob', 'alice', 'admin', 'group', false, true],
    ['bob', 'carol', 'member', 'group', false, false],
    ['bob', 'carol', '', 'group', false, false],
    ['bob', 'alice', 'owner', 'direct', false, false],
    ['bob', 'bob', 'member', 'direct', false, true],
    ['bob', 'bob', 'member', 'group', true, false],
    ['bob', 'alice', 'owner', 'group', true, false],
  ];
  for (const [sender, me, role, kind, deleted, want] of cases) {
    const m = msg({ sender_id: sender, deleted_at: deleted ? '2026-01-01T00:00:00Z' : null });
    assert.equal(mayDelete(m, me, role, kind), want, JSON.stringify({ sender, me, role, kind, deleted }));
  }
  assert.equal(mayDelete(msg({ seq: undefined }), 'bob', 'owner', 'group'), false, 'a message not yet stored');
});

test('mayEdit: only the sender, not a tombstone', () => {
  assert.equal(mayEdit(msg({}), 'bob'), true);
  assert.equal(mayEdit(msg({}), 'alice'), false);
  assert.equal(mayEdit(msg({ deleted_at: '2026-01-01T00:00:00Z' }), 'bob'), false);
});

test('newer compares change numbers; a live copy without one is the oldest', () => {
  assert.equal(newer(msg({ change: 1 }), msg({ change: 2 })), true);
  assert.equal(newer(msg({ change: 2 }), msg({ change: 2 })), false);
  assert.equal(newer(msg({ change: 3 }), msg({ change: 2 })), false);
  assert.equal(newer({ seq: 3 }, msg({ change: 1 })), true);
  // A send's stand-in (its RECEIPT came first) gives way to the server's copy.
  assert.equal(newer(msg({ fromReceipt: true }), msg({ mentions: ['alice'] })), true);
  assert.equal(newer(msg({ mentions: ['alice'] }), msg({ fromReceipt: true })), false);
  assert.equal(newer(msg({ fromReceipt: true, change: 2 }), msg({ change: 1 })), false);
});

test('preview and hitLink', () => {
  assert.equal(preview(msg({})), 'hi');
  assert.equal(preview(msg({ body: '', deleted_at: '2026-01-01T00:00:00Z' })), 'message deleted');
  assert.equal(hitLink('a b', 7), '#/room/a%20b/m/7');
});

test('messageOf: a replayed MESSAGE frame says whether it was edited or deleted', async () => {
  const { messageOf } = await import('../src/live.js');
  const frame = (extra, body = 'x') => ({
    body,
    headers: { 'message-id': 'm', room: 'r', seq: '2', sender: 'bob', 'sender-name': 'bob', 'sent-at': '2026-12-06T10:00:00Z', ...extra },
  });
  const plain = messageOf(frame({}));
  assert.equal(plain.edited_at, null);
  assert.equal(plain.deleted_at, null);
  assert.equal(plain.change, 0);
  const edited = messageOf(frame({ change: '4', 'edited-at': '2026-12-06T11:00:00Z' }));
  assert.equal(edited.edited_at, '2026-12-06T11:00:00Z');
  assert.equal(edited.change, 4);
  const gone = messageOf(frame({ change: '5', deleted: 'true', 'deleted-at': '2026-12-06T12:00:00Z' }, ''));
  assert.equal(gone.deleted_at, '2026-12-06T12:00:00Z');
  assert.equal(gone.body, '');
});
