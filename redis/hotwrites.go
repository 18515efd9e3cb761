package redis

import (
	"context"

	"parley"
)

// The writes that commit events: each that succeeds returns once the hot
// data holds its commit (or Redis failed it), so that a write that returned is visible to
// every node's reads. The inner store has called Apply with the commit
// before it returned, so the mark queued by then covers it. A write added
// to parley.Store that commits events needs its method here (see
// TestHotStoreWritesWait).

// CreateRoom implements parley.Store.
func (h *HotStore) CreateRoom(ctx context.Context, r parley.NewRoom) (parley.Room, bool, error) {
	room, created, err := h.Store.CreateRoom(ctx, r)
	if err == nil {
		h.caughtUp(ctx)
	}
	return room, created, err
}

// Join implements parley.Store.
func (h *HotStore) Join(ctx context.Context, roomID, userID string) (parley.Room, bool, error) {
	room, joined, err := h.Store.Join(ctx, roomID, userID)
	if err == nil {
		h.caughtUp(ctx)
	}
	return room, joined, err
}

// Leave implements parley.Store.
func (h *HotStore) Leave(ctx context.Context, roomID, userID string) (parley.Room, error) {
	room, err := h.Store.Leave(ctx, roomID, userID)
	if err == nil {
		h.caughtUp(ctx)
	}
	return room, err
}

// Send implements parley.Store.
func (h *HotStore) Send(ctx context.Context, m parley.NewMessage) (parley.Message, bool, error) {
	msg, created, err := h.Store.Send(ctx, m)
	if err == nil {
		h.caughtUp(ctx)
	}
	return msg, created, err
}

// MarkRead implements parley.Store.
func (h *HotStore) MarkRead(ctx context.Context, roomID, userID string, seq int64) (parley.Member, error) {
	m, err := h.Store.MarkRead(ctx, roomID, userID, seq)
	if err == nil {
		h.caughtUp(ctx)
	}
	return m, err
}
