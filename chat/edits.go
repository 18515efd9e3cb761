package chat

import (
	"context"

	"parley"
)

// Edits and deletions (design §3a), for members of the room only: a user
// who left a room can no longer change its messages (nor search them:
// search.go). The
// store checks who may change a message in the change's own transaction
// (the sender; for a deletion also the room's owner or an admin, which
// this service tells it from the caller's membership).

// EditMessage replaces the text of message seq of a room; only its sender
// may (CodeForbidden), and not once it is deleted (CodeConflict). clientID,
// when not empty, is u's idempotency key of the change (parley.ChangeKey):
// a repeat applies nothing and gets the message as it is now; the key
// reused for another change is CodeConflict.
func (s *Service) EditMessage(ctx context.Context, u parley.User, roomID string, seq int64, body, clientID string) (parley.Message, error) {
	if err := s.CheckBody(body); err != nil {
		return parley.Message{}, err
	}
	if err := parley.CheckClientID(clientID); err != nil {
		return parley.Message{}, err
	}
	if seq < 1 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	me, err := s.Authorize(ctx, u, roomID)
	if err != nil {
		return parley.Message{}, err
	}
	// Only an edit whose text may mention someone reads the message
	// before it: to tell only those it newly mentions, and to spend no
	// @room of the limit on an @room the message had (mentions.go).
	var before parley.MentionList
	if len(parley.MentionNames(body)) > 0 {
		old, err := s.store.Messages(ctx, roomID, parley.Page{After: seq - 1, Limit: 1})
		if err != nil {
			return parley.Message{}, err
		}
		if len(old) == 1 && old[0].Seq == seq {
			before = old[0].Mentions
		}
	}
	mentions, err := s.resolveMentions(ctx, u, me, roomID, body, before.Room())
	if err != nil {
		return parley.Message{}, err
	}
	m, err := s.store.EditMessage(ctx, parley.Edit{RoomID: roomID, Seq: seq, EditorID: u.ID, Body: body, ClientID: clientID, Mentions: mentions})
	if err == nil && m.Body == body && m.Mentions == mentions {
		s.tellMentioned(ctx, m, before)
	}
	return m, err
}

// DeleteMessage makes message seq of a room a tombstone; its sender may,
// and the room's owner or an admin (CodeForbidden for anyone else).
// Deleting a tombstone again succeeds and changes nothing. clientID is as
// for EditMessage.
func (s *Service) DeleteMessage(ctx context.Context, u parley.User, roomID string, seq int64, clientID string) (parley.Message, error) {
	if seq < 1 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	if err := parley.CheckClientID(clientID); err != nil {
		return parley.Message{}, err
	}
	m, err := s.Authorize(ctx, u, roomID)
	if err != nil {
		return parley.Message{}, err
	}
	moderator := m.Role == parley.RoleOwner || m.Role == parley.RoleAdmin
	msg, _, err := s.store.DeleteMessage(ctx, parley.Deletion{RoomID: roomID, Seq: seq, ActorID: u.ID, Moderator: moderator, ClientID: clientID})
	if err == nil {
		s.deleteMessageFiles(ctx, roomID, seq) // after the commit: the sweeper covers a crash before
	}
	return msg, err
}

// Changed returns the messages of a room edited or deleted after change
// after, in change order, to a member.
func (s *Service) Changed(ctx context.Context, u parley.User, roomID string, after int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if after < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "changed_after must not be negative")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	return s.store.Changed(ctx, roomID, after, limit)
}
