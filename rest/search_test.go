package rest_test

import (
	"context"
	"strings"

	"parley"
)

// The fake's search: the semantics of chat.Service over a store, every
// word a substring of the body.

// matches is the fake's search: every word, as a substring of the body.
func matches(m parley.Message, q parley.Query) bool {
	for _, t := range q.Terms {
		if !strings.Contains(strings.ToLower(m.Body), t) {
			return false
		}
	}
	return m.DeletedAt == nil
}

func (c *fakeChat) SearchRoom(ctx context.Context, u parley.User, roomID, q string, before int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	query, err := parley.ParseQuery(q)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return nil, err
	}
	out := []parley.Message{}
	for i := len(fr.msgs) - 1; i >= 0 && len(out) < limit; i-- {
		if m := fr.msgs[i]; (before == 0 || m.Seq < before) && matches(m, query) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (c *fakeChat) Search(ctx context.Context, u parley.User, q, cursor string, limit int) ([]parley.SearchHit, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	query, err := parley.ParseQuery(q)
	if err != nil {
		return nil, "", err
	}
	if cursor != "" {
		return nil, "", parley.Errorf(parley.CodeInvalid, "malformed cursor")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hits := []parley.SearchHit{}
	for _, fr := range c.rooms {
		if !containsID(fr.members, u.ID) {
			continue
		}
		for _, m := range fr.msgs {
			if matches(m, query) {
				hits = append(hits, parley.SearchHit{Room: fr.room, Message: m})
			}
		}
	}
	return hits[:min(limit, len(hits))], "", nil
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
