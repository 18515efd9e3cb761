package retention_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/retention"
	"parley/sqlite"
)

// recorder keeps the deletions a store commits.
type recorder struct {
	mu      sync.Mutex // guards the following field
	deleted []parley.Message
}

func (r *recorder) sink(evs []parley.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range evs {
		if ev.Kind == parley.EventDeleted {
			r.deleted = append(r.deleted, ev.Message)
		}
	}
}

func (r *recorder) seqs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []int64
	for _, m := range r.deleted {
		s = append(s, m.Seq)
	}
	slices.Sort(s) // the deletions of a batch run at once
	return s
}

type pass struct {
	deleted int
	err     error
}

// TestSweeper drives a sweeper with its clock and tick: a pass deletes
// the messages older than the retention, in batches, as tombstones with
// their EventDeleted; a later pass deletes what has expired since.
func TestSweeper(t *testing.T) {
	var rec recorder
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db"), OnCommit: rec.sink})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	u := parleytest.MustCreateUser(t, s, "keeper")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	var msgs []parley.Message
	for range 7 {
		msgs = append(msgs, parleytest.MustSend(t, s, room, u, "words"))
	}

	const keep = time.Hour
	var mu sync.Mutex
	now := msgs[5].SentAt.Add(keep) // messages 1 to 5 are older than an hour
	tick := make(chan time.Time)
	passes := make(chan pass)
	sw, err := retention.Start(retention.Config{
		Store: s, Retention: keep, Batch: 2, Tick: tick,
		Now:    func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		OnPass: func(n int, err error) { passes <- pass{n, err} },
	})
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	defer sw.Close()

	// The room's creation and its creator's join (kept for the webhooks)
	// are older than an hour too.
	if evs, err := s.RoomEvents(context.Background(), room.ID, 0, 0); err != nil || len(evs) != 2 {
		t.Fatalf("room events before the pass = %d, %v, want 2", len(evs), err)
	}
	tick <- now
	if p := <-passes; p.err != nil || p.deleted != 5 {
		t.Errorf("first pass = %+v, want 5 deleted", p)
	}
	if evs, err := s.RoomEvents(context.Background(), room.ID, 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("room events after the pass = %d, %v, want none: deleted by the same age rule", len(evs), err)
	}
	if got := rec.seqs(); len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Errorf("deleted events of seqs %v, want 1 to 5", got)
	}
	page, err := s.Messages(context.Background(), room.ID, parley.Page{After: 0, Limit: 10})
	if err != nil || len(page) != 7 || !page[4].Deleted() || page[5].Deleted() {
		t.Errorf("Messages() after the pass = %+v, %v, want 5 tombstones, then 2 messages", page, err)
	}

	tick <- now
	if p := <-passes; p.err != nil || p.deleted != 0 {
		t.Errorf("second pass at the same time = %+v, want none deleted", p)
	}
	mu.Lock()
	now = msgs[6].SentAt.Add(keep + time.Microsecond)
	mu.Unlock()
	tick <- now
	if p := <-passes; p.err != nil || p.deleted != 2 {
		t.Errorf("pass after the rest expired = %+v, want 2 deleted", p)
	}
	if got := sw.Deleted(); got != 7 {
		t.Errorf("Deleted() = %d, want 7", got)
	}
}

// TestSweeperLock: a pass whose lock is held elsewhere deletes nothing.
func TestSweeperLock(t *testing.T) {
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	u := parleytest.MustCreateUser(t, s, "keeper")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	m := parleytest.MustSend(t, s, room, u, "words")
	tick := make(chan time.Time)
	passes := make(chan pass)
	held := true
	sw, err := retention.Start(retention.Config{
		Store: s, Retention: time.Minute, Tick: tick,
		Now:    func() time.Time { return m.SentAt.Add(time.Hour) },
		Lock:   func(context.Context) (func(), bool, error) { return func() {}, !held, nil },
		OnPass: func(n int, err error) { passes <- pass{n, err} },
	})
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	defer sw.Close()
	tick <- time.Time{}
	if p := <-passes; p.deleted != 0 {
		t.Errorf("pass with the lock held elsewhere = %+v, want none deleted", p)
	}
	held = false
	tick <- time.Time{}
	if p := <-passes; p.deleted != 1 {
		t.Errorf("pass with the lock = %+v, want 1 deleted", p)
	}
}

func TestStartRefusesNegativeRetention(t *testing.T) {
	if _, err := retention.Start(retention.Config{Retention: -time.Second}); err == nil {
		t.Errorf("Start(retention -1s) error = nil, want one")
	}
}

// TestSweeperUnpins: retention that deletes a pinned message removes its
// pin (the deletion unpins); a pin of a message it keeps stays.
func TestSweeperUnpins(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	u := parleytest.MustCreateUser(t, s, "keeper")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	var msgs []parley.Message
	for range 3 {
		msgs = append(msgs, parleytest.MustSend(t, s, room, u, "words"))
	}
	parleytest.MustPin(t, s, room, u, 1, true)
	parleytest.MustPin(t, s, room, u, 3, true)

	const keep = time.Hour
	tick := make(chan time.Time)
	passes := make(chan pass)
	now := msgs[1].SentAt.Add(keep + time.Microsecond) // messages 1 and 2 are older than an hour
	sw, err := retention.Start(retention.Config{
		Store: s, Retention: keep, Tick: tick,
		Now:    func() time.Time { return now },
		OnPass: func(n int, err error) { passes <- pass{n, err} },
	})
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	defer sw.Close()
	tick <- now
	if p := <-passes; p.err != nil || p.deleted != 2 {
		t.Fatalf("pass = %+v, want 2 deleted", p)
	}
	pins, err := s.Pins(ctx, room.ID, 0, 10)
	if err != nil || len(pins) != 1 || pins[0].Seq != 3 {
		t.Errorf("Pins() after the pass = %+v, %v; want only message 3", pins, err)
	}
}
