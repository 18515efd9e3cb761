package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

func mustOpen(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newStore opens a store on a fresh schema.
func newStore(t *testing.T, sink parley.EventSink) parley.Store {
	return mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: sink})
}

func TestStore(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunStoreTests(t, newStore)
}

// TestStoreSmallBatch runs the suite with small batches over three writers.
func TestStoreSmallBatch(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
		return mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: sink, MaxBatch: 7, Writers: 3, MaxConns: 6})
	})
}

// TestStoreSendBatches runs the suite with every batch of sends on the
// path of sends only (postgres.SetMinSendBatch 1), and TestStoreNoSendBatches
// with none: the suite's sends, one at a time, take one path each.
func TestStoreSendBatches(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
		s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: sink})
		postgres.SetMinSendBatch(s, 1)
		return s
	})
}

func TestStoreNoSendBatches(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
		s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: sink})
		postgres.SetMinSendBatch(s, 1<<30)
		return s
	})
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.Schema(t)
	s, err := postgres.Open(ctx, postgres.Config{URL: dbURL})
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
		s = mustOpen(t, postgres.Config{URL: dbURL})
		got, err := s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != m.ID || got[0].Body != "still here" || !got[0].SentAt.Equal(m.SentAt) ||
			got[0].SentAt.Location() != m.SentAt.Location() {
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

// TestConcurrentOpen: nodes starting at once on an empty database apply
// each migration once, and all open.
func TestConcurrentOpen(t *testing.T) {
	const nodes = 6
	dbURL := pgtest.Schema(t)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL, MaxConns: 2})
			if err != nil {
				t.Errorf("Open() #%d error = %v", i, err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if n == 0 || n != distinct {
		t.Errorf("schema_migrations has %d rows for %d versions, want each version once", n, distinct)
	}
}

// TestBadInputFailsAlone: a write PostgreSQL refuses (a NUL in a text)
// fails alone; the writes batched with it are stored.
func TestBadInputFailsAlone(t *testing.T) {
	s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t)})
	ctx := context.Background()
	u := parleytest.MustCreateUser(t, s, "u")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := "fine"
			if i == n/2 {
				body = "nul \x00 byte"
			}
			_, _, errs[i] = s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: body})
		})
	}
	wg.Wait()
	for i, err := range errs {
		want := ""
		if i == n/2 {
			want = parley.CodeInvalid
		}
		if got := parley.ErrorCode(err); got != want {
			t.Errorf("Send #%d error = %v, want code %q", i, err, want)
		}
	}
	if got := parleytest.MustRoom(t, s, room.ID).LastSeq; got != n-1 {
		t.Errorf("LastSeq = %d, want %d", got, n-1)
	}
}

// TestMetrics: the queries are counted by kind, and Queries is their sum.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), Registerer: reg})
	u := parleytest.MustCreateUser(t, s, "u")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	parleytest.MustSend(t, s, room, u, "hello")
	parleytest.MustRoom(t, s, room.ID)

	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	kinds := map[string]float64{}
	var sum float64
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
		if f.GetName() != "parley_store_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kinds[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	for _, name := range []string{"parley_store_queries_total", "parley_store_batch_size", "parley_store_commit_seconds"} {
		if !seen[name] {
			t.Errorf("metric %s not registered", name)
		}
	}
	for _, kind := range []string{"send", "insert_user", "insert_room", "room", "begin", "commit", "lock_rooms"} {
		if kinds[kind] < 1 {
			t.Errorf("parley_store_queries_total{kind=%q} = %v, want at least 1 (have %v)", kind, kinds[kind], kinds)
		}
	}
	if uint64(sum) != s.Queries() || sum == 0 {
		t.Errorf("Queries() = %d, want the metric's sum %v", s.Queries(), sum)
	}
	if _, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.Schema(t), Registerer: reg}); err == nil ||
		!strings.Contains(err.Error(), "register") {
		t.Errorf("Open() with a used registerer error = %v, want a registration error", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := postgres.Open(context.Background(), postgres.Config{}); err == nil {
		t.Errorf("Open(no URL) error = nil, want an error")
	}
	if _, err := postgres.Open(context.Background(), postgres.Config{URL: "postgres://127.0.0.1:1/x?connect_timeout=1"}); err == nil {
		t.Errorf("Open(nothing listening) error = nil, want an error")
	}
}

// TestDirectRoomComeBack: asking again for a direct room one of the pair
// has left adds them back, with its event.
func TestDirectRoomComeBack(t *testing.T) {
	rec := &parleytest.Recorder{}
	s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), OnCommit: rec.Sink})
	ctx := context.Background()
	a, b := parleytest.MustCreateUser(t, s, "a"), parleytest.MustCreateUser(t, s, "b")
	r, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: b.ID})
	if err != nil {
		t.Fatalf("CreateRoom() error = %v", err)
	}
	parleytest.MustSend(t, s, r, a, "hi")
	if r, err = s.Leave(ctx, r.ID, b.ID); err != nil || r.MemberCount != 1 {
		t.Fatalf("Leave() = %d members, %v, want 1", r.MemberCount, err)
	}
	mark := rec.Len()
	again, created, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: b.ID})
	if err != nil || created || again.ID != r.ID || again.MemberCount != 2 {
		t.Fatalf("CreateRoom(again) = %+v, %v, %v, want room %s with 2 members, not created", again, created, err, r.ID)
	}
	events := rec.Events()[mark:]
	if len(events) != 1 || events[0].Kind != parley.EventJoin || events[0].UserID != b.ID ||
		events[0].Room.MemberCount != 2 || events[0].ReadSeq != 1 {
		t.Errorf("CreateRoom(again) events = %+v, want b's join with read_seq 1", events)
	}
	if m, err := s.Member(ctx, r.ID, b.ID); err != nil || m.ReadSeq != 1 {
		t.Errorf("Member(b) = %+v, %v, want read_seq 1", m, err)
	}
}

// TestReadBadText checks that ids PostgreSQL cannot take as text (a NUL
// byte, invalid UTF-8) read as not found, not as internal errors.
func TestReadBadText(t *testing.T) {
	s := newStore(t, nil)
	for _, id := range []string{"a\x00b", "\xff\xfe"} {
		if _, err := s.Room(context.Background(), id); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("Room(%q) error = %v, want %s", id, err, parley.CodeNotFound)
		}
		if _, _, err := s.UserByName(context.Background(), id); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("UserByName(%q) error = %v, want %s", id, err, parley.CodeNotFound)
		}
	}
}
