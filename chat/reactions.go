package chat

import (
	"context"

	"parley"
)

// Reactions (design §3b), for members of the room only, on a message that
// is not deleted (CodeConflict). Adding a reaction that is there, or
// removing one that is not, succeeds and changes nothing.

// React adds (add) or removes u's emoji on message seq of a room and
// returns the message in its version after it, its reactions' Me filled
// for u, and whether anything changed. Fails with CodeInvalid for a
// malformed emoji (parley.CheckEmoji) or seq, CodeNotFound for an unknown
// room or message (or one u is not a member of), CodeConflict for a
// deleted message and an add past the bounds
// (parley.MaxReactionsPerMessage, parley.MaxReactionsPerUser).
func (s *Service) React(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, add bool) (parley.Message, bool, error) {
	if err := parley.CheckEmoji(emoji); err != nil {
		return parley.Message{}, false, err
	}
	if seq < 1 {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return parley.Message{}, false, err
	}
	m, changed, err := s.store.React(ctx, parley.React{RoomID: roomID, Seq: seq, UserID: u.ID, Emoji: emoji, Add: add})
	if err != nil {
		return parley.Message{}, false, err
	}
	msgs, err := s.WithMine(ctx, u, roomID, []parley.Message{m})
	if err != nil {
		return parley.Message{}, false, err
	}
	return msgs[0], changed, nil
}

// Reactors returns the users who put emoji on message seq of a room,
// first reaction first, at most limit (1 to parley.MaxPageLimit; 0 for
// the default), to a member.
func (s *Service) Reactors(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	if err := parley.CheckEmoji(emoji); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if seq < 1 {
		return nil, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	users, err := s.store.Reactors(ctx, roomID, seq, emoji, limit)
	for i := range users {
		users[i].Bot = parley.IsBotID(users[i].ID)
	}
	return users, err
}

// WithMine returns msgs, messages of one room read for u, with the Me of
// their reactions set: one store read when a message carries reactions,
// none otherwise (the common page costs nothing more).
func (s *Service) WithMine(ctx context.Context, u parley.User, roomID string, msgs []parley.Message) ([]parley.Message, error) {
	if !parley.HasReactions(msgs) {
		return msgs, nil
	}
	seqs := make([]int64, 0, len(msgs))
	for i := range msgs {
		if len(msgs[i].Reactions) > 0 {
			seqs = append(seqs, msgs[i].Seq)
		}
	}
	mine, err := s.store.MyReactions(ctx, roomID, u.ID, seqs)
	if err != nil {
		return nil, err
	}
	return parley.WithMine(msgs, mine), nil
}
