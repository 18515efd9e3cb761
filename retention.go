package parley

import (
	"context"
	"time"
)

// Retention (design §3b "Data"): messages older than their room's
// retention (RetentionOf: the room's own, set by its owner or an admin,
// else the server's default) are deleted by the retention sweeper
// (package retention) as a moderator's deletion would delete them: each becomes a tombstone (the
// same seq, an empty body, DeletedAt set) through Store.DeleteMessage, so
// its text leaves the store and the search index, every cache drops it
// (EventDeleted), and clients learn it through the change stream: a
// `deleted` room event, replayed by `since-change`. The order keeps no
// hole, so a `since-seq` or a history page from below the oldest kept
// message resumes as before, with tombstones, and never fails.

// MessageRef names one message: its room and seq.
type MessageRef struct {
	RoomID string
	Seq    int64
}

// MaxRetentionSeconds bounds a room's own retention (RoomUpdate): ten
// years of 365 days.
const MaxRetentionSeconds = 10 * 365 * 24 * 60 * 60

// RetentionOf returns how long room r keeps its messages on a server whose
// default retention is def: the room's own RetentionSeconds when set,
// shorter or longer than def, else def; 0 keeps them forever.
func RetentionOf(r Room, def time.Duration) time.Duration {
	if r.RetentionSeconds > 0 {
		return time.Duration(r.RetentionSeconds) * time.Second
	}
	return def
}

// Expiry is the part of a store that finds the messages retention
// deletes. Both stores implement it; the retention sweeper calls it.
type Expiry interface {
	// Expired returns up to limit messages that are not deleted and were
	// sent before now minus their room's retention (RetentionOf the room
	// and def: a room without a retention of its own keeps its messages
	// forever when def is 0), in room id order and, in a room, in the
	// order they were sent (seq order), those after after (the zero
	// MessageRef: from the start). A pass that starts from the zero ref
	// and goes on from the last ref returned until a short page has seen
	// every such message once. It visits the rooms with a retention of
	// their own when def is 0, else all, and reads each visited room's
	// messages in seq order up to the first page's worth it returns, or
	// to the room's end: a store keeps no index by send time, which would
	// cost every send.
	Expired(ctx context.Context, now time.Time, def time.Duration, after MessageRef, limit int) ([]MessageRef, error)
}

// EventExpiry is the part of a store that deletes the stored member and
// room events (RoomEvent, kept for the webhooks) by the messages' age
// rule: those that happened before now minus their room's retention
// (RetentionOf the room and def). Both stores implement it; the retention
// sweeper calls it after the messages of each pass.
type EventExpiry interface {
	// ExpireRoomEvents deletes up to limit such events and returns how
	// many it deleted: fewer than limit when none is left.
	ExpireRoomEvents(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error)
}
