package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"parley"
	"parley/parleytest"
	"parley/storagefull"
)

// lineLog records the messages of the log records it handles.
type lineLog struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *lineLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}
func (l *lineLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lineLog) WithGroup(string) slog.Handler      { return l }

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// setMaxPages sets PRAGMA max_page_count on the writer's connection (the
// setting is per connection): at or below the database's page count, the
// next write that needs a page fails with SQLITE_FULL, as on a full disk.
func setMaxPages(t *testing.T, s *Store, n int64) {
	t.Helper()
	var got int64
	if err := s.wdb.QueryRow(fmt.Sprintf("PRAGMA max_page_count = %d", n)).Scan(&got); err != nil {
		t.Fatalf("PRAGMA max_page_count = %d: %v", n, err)
	}
}

// TestStorageFullIsUnavailable fills the store (max_page_count on the
// writer) and checks what the issue asks of a full disk: each write is
// refused as unavailable with a message that says the storage is full and
// to send again with the same client-id, reads keep working, the log has
// one line when it starts and one when it ends (a write committed
// storagefull.Quiet after the last refusal), the metrics count the refusals, and
// once there is room again sends resume at the next seq with no hole, a
// refused client-id stored once and an earlier one returning its
// original.
func TestStorageFullIsUnavailable(t *testing.T) {
	ctx := context.Background()
	logs := &lineLog{}
	reg := prometheus.NewRegistry()
	s, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "p.db"), Logger: slog.New(logs), Registerer: reg})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	clock := parleytest.NewClock()
	s.full.Now = clock.Now
	u := parleytest.MustCreateUser(t, s, "u")
	r := parleytest.MustCreateRoom(t, s, u, "r", 0)
	send := func(body, clientID string) (parley.Message, bool, error) {
		return s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID})
	}
	first, _, err := send("before", "c0")
	if err != nil {
		t.Fatalf("Send(before) error = %v", err)
	}

	// No free pages left for a write to take: every write that needs room
	// needs a new one.
	if _, err := s.wdb.Exec("VACUUM"); err != nil {
		t.Fatal(err)
	}
	var pages int64
	if err := s.wdb.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	setMaxPages(t, s, pages)
	big := strings.Repeat("x", 8000) // two pages and more: every send needs new ones
	stored := []parley.Message{first}
	var refusedID string
	for i := 1; refusedID == "" && i <= 1000; i++ {
		id := fmt.Sprintf("c%d", i)
		m, _, err := send(big, id)
		if err != nil {
			if got := parley.ErrorCode(err); got != parley.CodeUnavailable {
				t.Fatalf("Send() on a full store: code %q (%v), want %q", got, err, parley.CodeUnavailable)
			}
			refusedID = id
			break
		}
		stored = append(stored, m)
	}
	if refusedID == "" {
		t.Fatal("1,000 sends of 8 KB fitted in the store: max_page_count did not fill it")
	}
	// Concurrent senders: their batches fail whole, and the writer goes on.
	const more = 20
	errs := make([]error, more)
	var wg sync.WaitGroup
	for i := range more {
		wg.Go(func() { _, _, errs[i] = send(big, fmt.Sprintf("p%d", i)) })
	}
	wg.Wait()
	for i, err := range errs {
		msg := parley.ErrorMessage(err)
		if parley.ErrorCode(err) != parley.CodeUnavailable || !strings.Contains(msg, "storage is full") || !strings.Contains(msg, "same client-id") {
			t.Fatalf("Send(p%d) on a full store = %v, want unavailable saying the storage is full, to send again with the same client-id", i, err)
		}
	}
	// Any write that needs room (a row that fits in a page already there
	// would be stored, and end the state).
	if _, err := s.CreateUser(ctx, parley.NewUser{Name: "late", PasswordHash: []byte(big)}); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("CreateUser() on a full store = %v, want unavailable", err)
	}
	refused := float64(1 + more + 1)
	if got := testutil.ToFloat64(s.full.Counter(storagefull.Request)); got != refused {
		t.Errorf("parley_store_full_total{writer=request} = %v, want %v", got, refused)
	}
	if got := testutil.ToFloat64(s.full.Gauge()); got != 1 {
		t.Errorf("parley_store_full = %v while full, want 1", got)
	}
	if since, n := s.StorageFull(); since.IsZero() || n != uint64(refused) {
		t.Errorf("StorageFull() = %v, %d while full, want a time and %v", since, n, refused)
	} else if idx := testutil.ToFloat64(s.full.Counter(storagefull.Indexer)); float64(n) != refused+idx {
		t.Errorf("StorageFull() counts %d refusals, parley_store_full_total %v requests and %v indexer rounds", n, refused, idx)
	}

	// Reads keep working.
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping() on a full store: %v", err)
	}
	got, err := s.Messages(ctx, r.ID, parley.Newest(parley.MaxPageLimit))
	if err != nil || len(got) != len(stored) {
		t.Fatalf("Messages() on a full store = %d messages, %v; want %d", len(got), err, len(stored))
	}
	if lines := logs.all(); len(lines) != 1 || !strings.Contains(lines[0], "storage full") {
		t.Errorf("log while full = %q, want one line saying the storage is full", lines)
	}

	setMaxPages(t, s, 1<<30)
	m, created, err := send(big, refusedID)
	if err != nil || !created {
		t.Fatalf("Send() after space is freed = %v, %v, want a new message", created, err)
	}
	if want := stored[len(stored)-1].Seq + 1; m.Seq != want {
		t.Errorf("Send() after space is freed: seq %d, want %d (the next, no hole)", m.Seq, want)
	}
	stored = append(stored, m)
	// Within storagefull.Quiet of the last refusal, a committed write does not end
	// the state (on a disk with a little room, some writes fit and others
	// do not: no pair of lines for each).
	if got := testutil.ToFloat64(s.full.Gauge()); got != 1 {
		t.Errorf("parley_store_full = %v right after the last refusal, want 1 until %v pass", got, storagefull.Quiet)
	}
	if lines := logs.all(); len(lines) != 1 {
		t.Errorf("log right after the last refusal = %q, want the start line only", lines)
	}
	clock.Advance(storagefull.Quiet)
	// The concurrent senders send again with their client-ids: each is
	// stored once, at the seqs that follow.
	resent := make([]parley.Message, more)
	for i := range more {
		wg.Go(func() {
			var created bool
			resent[i], created, errs[i] = send(big, fmt.Sprintf("p%d", i))
			if errs[i] == nil && !created {
				errs[i] = fmt.Errorf("not created")
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Send(p%d) after space is freed: %v", i, err)
		}
	}
	slices.SortFunc(resent, func(a, b parley.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	stored = append(stored, resent...)
	again, created, err := send("before", "c0")
	if err != nil || created || again.ID != first.ID {
		t.Errorf("repeat of c0 = %v (created %v), %v; want the original %v", again.ID, created, err, first.ID)
	}
	got, err = s.Messages(ctx, r.ID, parley.Page{After: 0, Limit: parley.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i, gm := range got {
		if gm.Seq != int64(i+1) || i >= len(stored) || gm.ID != stored[i].ID {
			t.Fatalf("history after the full store: message %d is seq %d (%s), want seq %d, each stored message once", i, gm.Seq, gm.ID, i+1)
		}
	}
	if len(got) != len(stored) {
		t.Errorf("history after the full store: %d messages, want %d", len(got), len(stored))
	}
	lines := logs.all()
	if len(lines) != 2 || !strings.Contains(lines[1], "room again") {
		t.Errorf("log after space is freed = %q, want the start line and one end line", lines)
	}
	if got := testutil.ToFloat64(s.full.Gauge()); got != 0 {
		t.Errorf("parley_store_full = %v after space is freed, want 0", got)
	}
	if since, _ := s.StorageFull(); !since.IsZero() {
		t.Errorf("StorageFull() after space is freed = %v, want zero", since)
	}
}
