package chat

import (
	"context"

	"parley"
)

// Replies returns a page of the thread of root seq of a room (its replies,
// oldest first, those after seq after), at most limit (1 to
// parley.MaxPageLimit; 0 for the default), to a member, with the Me of
// their reactions filled.
func (s *Service) Replies(ctx context.Context, u parley.User, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if root < 1 || after < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more and after 0 or more")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	msgs, err := s.store.Replies(ctx, roomID, root, after, limit)
	if err != nil {
		return nil, err
	}
	return s.WithMine(ctx, u, roomID, msgs)
}
