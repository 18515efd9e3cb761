package parley

import (
	"context"
	"time"
)

// Retention (design §3b "Data"): messages older than the server's
// retention are deleted by the retention sweeper (package retention) as a
// moderator's deletion would delete them: each becomes a tombstone (the
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

// Expiry is the part of a store that finds the messages retention
// deletes. Both stores implement it; the retention sweeper calls it.
type Expiry interface {
	// Expired returns up to limit messages that are not deleted and were
	// sent before cutoff, in (room id, seq) order, those after after (the
	// zero MessageRef: from the start). A pass that starts from the zero
	// ref and goes on from the last ref returned until a short page has
	// seen every such message once.
	Expired(ctx context.Context, cutoff time.Time, after MessageRef, limit int) ([]MessageRef, error)
}
