package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

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
