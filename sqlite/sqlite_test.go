package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/parleytest"
	"parley/sqlite"
)

// newStore opens a store on a fresh database in a temporary directory.
func newStore(t *testing.T, sink parley.EventSink) parley.Store {
	return mustOpen(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db"), OnCommit: sink})
}

func mustOpen(t testing.TB, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%s) error = %v", cfg.Path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	parleytest.RunStoreTests(t, newStore)
}

func TestStoreSyncNormal(t *testing.T) {
	parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
		return mustOpen(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db"), Sync: sqlite.SyncNormal, OnCommit: sink, MaxBatch: 7})
	})
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "parley.db")
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	u := parleytest.MustCreateUser(t, s, "keeper")
	room := parleytest.MustCreateRoom(t, s, u, "kept", 10)
	m := parleytest.MustSend(t, s, room, u, "still here")
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if _, err := s.Room(ctx, room.ID); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("Room() after Close error = %v, want unavailable", err)
	}
	if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, Body: "late"}); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("Send() after Close error = %v, want unavailable", err)
	}

	for i := range 2 { // the migrations run again, and change nothing
		s = mustOpen(t, sqlite.Config{Path: path})
		got, err := s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != m.ID || got[0].Body != "still here" || !got[0].SentAt.Equal(m.SentAt) {
			t.Errorf("open #%d: Messages() = %+v, %v, want [%+v]", i+2, got, err, m)
		}
		r := parleytest.MustRoom(t, s, room.ID)
		if r.LastSeq != int64(i+1) || r.MemberCount != 1 || r.Capacity != 10 || r.Title != "kept" {
			t.Errorf("open #%d: Room() = %+v", i+2, r)
		}
		if next := parleytest.MustSend(t, s, room, u, "more"); next.Seq != int64(i+2) {
			t.Errorf("open #%d: Send().Seq = %d, want %d", i+2, next.Seq, i+2)
		}
		s.Close()
	}
}

func TestParseSync(t *testing.T) {
	tests := []struct {
		in      string
		want    sqlite.Sync
		wantErr bool
	}{
		{"", sqlite.SyncFull, false},
		{"full", sqlite.SyncFull, false},
		{"normal", sqlite.SyncNormal, false},
		{"off", sqlite.SyncOff, false},
		{"FULL", 0, true},
		{"extra", 0, true},
		{"1", 0, true},
	}
	for _, tt := range tests {
		got, err := sqlite.ParseSync(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseSync(%q) = %v, %v, want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != map[string]string{"": "full"}[tt.in]+tt.in && tt.in != "" {
			t.Errorf("ParseSync(%q).String() = %q", tt.in, got.String())
		}
	}
	var s sqlite.Sync
	if err := s.UnmarshalText([]byte("sometimes")); err == nil {
		t.Errorf("UnmarshalText(sometimes) error = nil, want an error")
	}
	if _, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "x.db"), Sync: sqlite.Sync(7)}); err == nil {
		t.Errorf("Open(Sync(7)) error = nil, want an error")
	}
	if _, err := sqlite.Open(context.Background(), sqlite.Config{}); err == nil {
		t.Errorf("Open(no path) error = nil, want an error")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	path := filepath.Join(t.TempDir(), "parley.db")
	s := mustOpen(t, sqlite.Config{Path: path, Registerer: reg})
	u := parleytest.MustCreateUser(t, s, "counted")
	room := parleytest.MustCreateRoom(t, s, u, "counted", 0)
	before := s.Queries()
	parleytest.MustSend(t, s, room, u, "one")
	parleytest.WaitIndexed(t, s)
	if _, err := s.Messages(context.Background(), room.ID, parley.Newest(10)); err != nil {
		t.Fatalf("Messages() error = %v", err)
	}
	// The send: begin, sender_member, next_seq, insert_message,
	// sender_read, commit; the indexer's round after it: begin,
	// search_position, search_unindexed, fts_insert, search_move, commit;
	// the page: messages_before.
	if got := s.Queries() - before; got != 13 {
		t.Errorf("Queries() grew by %d for a send, its indexing and a page, want 13", got)
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				for _, l := range m.GetLabel() {
					got[f.GetName()+"{"+l.GetValue()+"}"] = m.GetCounter().GetValue()
				}
			case m.GetHistogram() != nil:
				got[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	var sum float64
	for k, v := range got {
		if strings.HasPrefix(k, "parley_store_queries_total{") {
			sum += v
		}
	}
	if sum != float64(s.Queries()) {
		t.Errorf("sum of parley_store_queries_total = %v, want Queries() = %d", sum, s.Queries())
	}
	for _, name := range []string{"parley_store_queries_total{insert_message}", "parley_store_queries_total{messages_before}", "parley_store_fsync_seconds",
		"parley_store_batch_size", "parley_store_commit_seconds", "parley_search_lag_seconds"} {
		if got[name] < 1 {
			t.Errorf("metric %s = %v, want ≥ 1", name, got[name])
		}
	}

	// One store per registerer.
	if s2, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Registerer: reg}); err == nil {
		s2.Close()
		t.Errorf("second Open() on the same registerer error = nil, want an error")
	}
}

// TestSendUnknownSender: a send from an unknown sender fails alone, with
// not_found as in PostgreSQL; the writes batched with it succeed.
func TestSendUnknownSender(t *testing.T) {
	s := mustOpen(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	ctx := context.Background()
	u := parleytest.MustCreateUser(t, s, "real")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	const n = 50
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n + 1 {
		wg.Go(func() {
			sender := u.ID
			if i == n {
				sender = "no-such-user"
			}
			_, _, errs[i] = s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: sender, SenderName: "x", Body: "b"})
		})
	}
	wg.Wait()
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("Send(#%d) error = %v", i, err)
		}
	}
	if parley.ErrorCode(errs[n]) != parley.CodeNotFound {
		t.Errorf("Send(unknown sender) error = %v, want not_found", errs[n])
	}
	if r := parleytest.MustRoom(t, s, room.ID); r.LastSeq != n {
		t.Errorf("LastSeq = %d, want %d", r.LastSeq, n)
	}
}
