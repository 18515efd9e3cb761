package chat

import (
	"context"

	"parley"
)

// Search (design §3a), for members only: a user who left a room no longer
// finds its messages. The query is parsed here (parley.ParseQuery), once;
// the store runs it against its index.

// SearchRoom returns the messages of a room that hold every word of q,
// newest first, below seq before (0: from the newest), to a member.
func (s *Service) SearchRoom(ctx context.Context, u parley.User, roomID, q string, before int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	query, err := parley.ParseQuery(q)
	if err != nil {
		return nil, err
	}
	if before < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "before must be a positive seq")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	return s.store.SearchRoom(ctx, roomID, query, before, limit)
}

// Search returns the messages that hold every word of q in every room u is
// a member of, newest first, a page after cursor, and the next cursor.
func (s *Service) Search(ctx context.Context, u parley.User, q, cursor string, limit int) ([]parley.SearchHit, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	query, err := parley.ParseQuery(q)
	if err != nil {
		return nil, "", err
	}
	return s.store.Search(ctx, u.ID, query, cursor, limit)
}
