package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"parley"
	"parley/parleytest"
	"parley/storagefull"
)

// TestDiskFullIsUnavailable: a write that PostgreSQL fails with disk_full
// (SQLSTATE 53100), however wrapped, goes through the store's translation
// of a write's error (Store.write's) as unavailable, "the server's storage
// is full", to send again with the same client-id; the state is logged
// once when it starts and once when a write succeeds storagefull.Quiet after the
// last refusal, counted, and
// shown by StorageFull. Other statement failures keep their own code.
func TestDiskFullIsUnavailable(t *testing.T) {
	ctx := context.Background()
	logs := &recordLog{}
	s := &Store{out: outage{log: slog.New(logs)}, full: storagefull.New("postgres", slog.New(logs), "")}
	clock := parleytest.NewClock()
	s.full.Now = clock.Now
	full := fmt.Errorf("commit: %w", &pgconn.PgError{Code: "53100", Message: "could not extend file"})
	const n = 5
	for i := range n {
		err := s.writeErr(ctx, full)
		msg := parley.ErrorMessage(err)
		if parley.ErrorCode(err) != parley.CodeUnavailable || !strings.Contains(msg, "storage is full") || !strings.Contains(msg, "same client-id") {
			t.Fatalf("write %d failing with 53100 = %v, want unavailable saying the storage is full, to send again with the same client-id", i, err)
		}
	}
	if err := s.writeErr(ctx, &pgconn.PgError{Code: "42P01"}); parley.ErrorCode(err) != parley.CodeInternal {
		t.Errorf("write failing with 42P01 = %v, want internal", err)
	}
	if got := testutil.ToFloat64(s.full.Counter(storagefull.Request)); got != n {
		t.Errorf("parley_store_full_total{writer=request} = %v, want %d", got, n)
	}
	if got := testutil.ToFloat64(s.full.Counter(storagefull.Indexer)); got != 0 {
		t.Errorf("parley_store_full_total{writer=indexer} = %v, want 0 (a write's refusal is a request's)", got)
	}
	if got := testutil.ToFloat64(s.full.Gauge()); got != 1 {
		t.Errorf("parley_store_full = %v while full, want 1", got)
	}
	if since, refused := s.StorageFull(); since.IsZero() || refused != n {
		t.Errorf("StorageFull() = %v, %d while full, want a time and %d", since, refused, n)
	}
	if got := logs.all(); len(got) != 1 || !strings.Contains(got[0], "storage full") {
		t.Errorf("log while full = %q, want one line", got)
	}
	// A write committed within storagefull.Quiet of the last refusal (an update
	// that fit in its page) does not end it; one after does.
	if err := s.writeErr(ctx, nil); err != nil {
		t.Fatalf("a committed write = %v", err)
	}
	if since, _ := s.StorageFull(); since.IsZero() {
		t.Errorf("StorageFull() ended by a write committed right after a refusal, want it to last %v", storagefull.Quiet)
	}
	clock.Advance(storagefull.Quiet)
	if err := s.writeErr(ctx, nil); err != nil {
		t.Fatalf("a committed write = %v", err)
	}
	if since, _ := s.StorageFull(); !since.IsZero() {
		t.Errorf("StorageFull() after a committed write = %v, want zero", since)
	}
	if got := testutil.ToFloat64(s.full.Gauge()); got != 0 {
		t.Errorf("parley_store_full = %v after a committed write, want 0", got)
	}
	if got := logs.all(); len(got) != 2 || !strings.Contains(got[1], "room again") {
		t.Errorf("log after a committed write = %q, want the start line and one end line", got)
	}
	if err := s.readErr("history", fmt.Errorf("sort: %w", &pgconn.PgError{Code: "53100"})); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("a read failing with 53100 = %v, want unavailable", err)
	}
}

// recordLog records the messages of the log records it handles.
type recordLog struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

func (l *recordLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
