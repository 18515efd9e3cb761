package chat

import (
	"context"

	"parley"
)

// ExportedRoom is one room of a user's own data (GET /api/me/export): the
// room, the user's membership of it and their notification level there.
type ExportedRoom struct {
	Room          parley.Room
	Member        parley.Member
	Notifications string // parley.NotifyAll and the others
}

// ExportRooms returns every room u is a member of, with the membership
// (role, read position, joined time) and the notification level, in no
// particular order.
func (s *Service) ExportRooms(ctx context.Context, u parley.User) ([]ExportedRoom, error) {
	ms, err := s.store.Memberships(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	levels, err := s.store.NotifyStates(ctx, u.ID) // the rooms at another level than all
	if err != nil {
		return nil, err
	}
	out := make([]ExportedRoom, 0, len(ms))
	for _, m := range ms {
		r, err := s.store.Room(ctx, m.RoomID)
		if parley.ErrorCode(err) == parley.CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		level := parley.NotifyAll
		if n, ok := levels[m.RoomID]; ok && n.Level != "" {
			level = n.Level
		}
		out = append(out, ExportedRoom{Room: r, Member: m, Notifications: level})
	}
	return out, nil
}

// ExportMessages calls each with every message u sent in the room,
// tombstones included, oldest first, and stops at the first error it
// returns. It reads the history a page (parley.MaxPageLimit) at a time,
// so its memory does not grow with the room. Fails with CodeNotFound for
// a room u is not a member of.
func (s *Service) ExportMessages(ctx context.Context, u parley.User, roomID string, each func(*parley.Message) error) error {
	if _, err := s.member(ctx, u, roomID); err != nil {
		return err
	}
	return s.eachSent(ctx, u, roomID, each)
}

// eachSent is ExportMessages without the membership check.
func (s *Service) eachSent(ctx context.Context, u parley.User, roomID string, each func(*parley.Message) error) error {
	for after := int64(0); ; {
		page, err := s.store.Messages(ctx, roomID, parley.Page{After: after, Limit: parley.MaxPageLimit})
		if err != nil {
			return hideRoom(err)
		}
		for i := range page {
			if page[i].SenderID != u.ID {
				continue
			}
			m := page[i] // a copy: results are shared, read-only
			if err := each(&m); err != nil {
				return err
			}
		}
		if len(page) < parley.MaxPageLimit {
			return nil
		}
		after = page[len(page)-1].Seq
	}
}
