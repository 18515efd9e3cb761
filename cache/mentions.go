package cache

import (
	"context"

	"parley"
)

// Notification levels and mention counts are read and written where
// they are kept: the room list's counts once per list, the levels only
// for a message that mentions someone.

// SetNotifyLevel passes through to the inner store.
func (s *Store) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	return s.inner.SetNotifyLevel(ctx, roomID, userID, level)
}

// NotifyStates passes through to the inner store.
func (s *Store) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	return s.inner.NotifyStates(ctx, userID)
}

// NotifyLevels passes through to the inner store.
func (s *Store) NotifyLevels(ctx context.Context, roomID string, userIDs []string) (map[string]string, error) {
	return s.inner.NotifyLevels(ctx, roomID, userIDs)
}
