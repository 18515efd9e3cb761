package chat

import (
	"context"

	"parley"
)

// Pinned messages (design §3b): the room's owner and admins pin and unpin
// (CodeForbidden for a member); in a direct room, which has no owner,
// either member may. Every member reads the pin list. Pinning a pinned
// message, or unpinning one that is not, succeeds and changes nothing.

// PinMessage pins (pin) or unpins message seq of a room for u and returns
// the message in its version after it, its reactions' Me filled for u,
// and whether anything changed. Fails with CodeInvalid for a seq below 1,
// CodeNotFound for an unknown room or message (a seq of another room is
// no message of this one), CodeForbidden for a member who may not pin,
// CodeConflict for a deleted message and for a pin past
// parley.MaxPinsPerRoom.
func (s *Service) PinMessage(ctx context.Context, u parley.User, roomID string, seq int64, pin bool) (parley.Message, bool, error) {
	if seq < 1 {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	mb, err := s.Authorize(ctx, u, roomID)
	if err != nil {
		return parley.Message{}, false, err
	}
	if !parley.MayModerate(mb.Role) {
		r, err := s.store.Room(ctx, roomID)
		if err != nil {
			return parley.Message{}, false, hideRoom(err)
		}
		if r.Kind != parley.KindDirect {
			return parley.Message{}, false, parley.Errorf(parley.CodeForbidden, "only the room's owner or an admin may pin or unpin a message")
		}
	}
	m, changed, err := s.store.Pin(ctx, parley.PinMessage{RoomID: roomID, Seq: seq, UserID: u.ID, Add: pin})
	if err != nil {
		return parley.Message{}, false, err
	}
	msgs, err := s.WithMine(ctx, u, roomID, []parley.Message{m})
	if err != nil {
		return parley.Message{}, false, err
	}
	return msgs[0], changed, nil
}

// Pins returns the room's pinned messages, newest pin first, those whose
// pin came before change before (0: from the newest), at most limit (1 to
// parley.MaxPageLimit), to a member, their reactions' Me filled for u.
func (s *Service) Pins(ctx context.Context, u parley.User, roomID string, before int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if before < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "before must not be negative")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	msgs, err := s.store.Pins(ctx, roomID, before, limit)
	if err != nil {
		return nil, err
	}
	return s.WithMine(ctx, u, roomID, msgs)
}
