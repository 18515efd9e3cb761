package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/sqlite"
)

// quietStore hides the webhooks from the manager (it starts no worker of
// its own: the test runs one) and fails AdvanceWebhook when told.
type quietStore struct {
	*sqlite.Store
	failAdvance bool
}

func (s *quietStore) Webhooks(context.Context) ([]parley.Webhook, error) { return nil, nil }

func (s *quietStore) AdvanceWebhook(ctx context.Context, l parley.HookLease, p parley.HookPosition) error {
	if s.failAdvance {
		return errors.New("store down")
	}
	return s.Store.AdvanceWebhook(ctx, l, p)
}

// logged is a slog handler that passes each record's message on.
type logged chan string

func (l logged) Enabled(context.Context, slog.Level) bool { return true }
func (l logged) Handle(_ context.Context, r slog.Record) error {
	select {
	case l <- r.Message:
	default:
	}
	return nil
}
func (l logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logged) WithGroup(string) slog.Handler      { return l }

// workerEnv is a SQLite store with a user, a room and a webhook of
// kinds on it to URL, and a worker for it that the test runs (run).
type workerEnv struct {
	st   *quietStore
	u    parley.User
	room parley.Room
	w    *worker
	log  logged
}

func newWorkerEnv(t *testing.T, url string, kinds []string, maxFailures int) *workerEnv {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &workerEnv{st: &quietStore{Store: db}, log: make(logged, 100)}
	if e.u, err = db.CreateUser(ctx, parley.NewUser{Name: "u", PasswordHash: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if e.room, _, err = db.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "r", CreatorID: e.u.ID}); err != nil {
		t.Fatal(err)
	}
	h, err := db.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "w", URL: url, Secret: "whsec_internal_0001", Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFilter([]string{"127.0.0.1"})
	m, err := Start(Config{Store: e.st, Node: "n1", Filter: f, Poll: time.Hour, LeaseTTL: time.Hour, Timeout: 5 * time.Second,
		MaxFailures: maxFailures, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Logger: slog.New(e.log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	l, ok, err := db.AcquireWebhookLease(ctx, h.ID, "n1", time.Hour)
	if err != nil || !ok {
		t.Fatalf("lease: %v, %v", ok, err)
	}
	e.w = &worker{m: m, h: h, lease: l, done: make(chan struct{}), client: newClient(f, "127.0.0.1", 5*time.Second)}
	e.w.renewed.Store(time.Now().UnixNano())
	return e
}

// run starts the worker; the test's end stops it.
func (e *workerEnv) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e.w.cancel = cancel
	go e.w.run(ctx)
	t.Cleanup(func() {
		cancel()
		<-e.w.done
	})
}

func (e *workerEnv) send(t *testing.T, body string) parley.Message {
	t.Helper()
	m, _, err := e.st.Send(context.Background(), parley.NewMessage{RoomID: e.room.ID, SenderID: e.u.ID, SenderName: e.u.Name, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWorkerStopsOnPauseAfterProgress: a room whose first send went out
// (the position moved) and whose second paused the webhook ends the
// worker: no round after the pause delivers the rest.
func TestWorkerStopsOnPauseAfterProgress(t *testing.T) {
	var mu sync.Mutex
	var codes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		code := http.StatusOK
		if len(codes) == 1 {
			code = http.StatusInternalServerError
		}
		codes = append(codes, code)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	e := newWorkerEnv(t, srv.URL, []string{parley.HookMessageSent}, 1)
	for i := range 4 {
		e.send(t, string(rune('a'+i)))
	}
	e.run(t)
	select {
	case <-e.w.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the worker went on after the webhook was paused")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(codes) != 2 {
		t.Errorf("answers %v, want one delivery and the failure that paused the webhook", codes)
	}
}

// TestWorkerWaitsAfterFailedAdvance: a round whose only write, moving
// the position past events the webhook does not want, fails is a failed
// round: logged, and the next one waits for the poll (an hour here)
// instead of spinning on the store.
func TestWorkerWaitsAfterFailedAdvance(t *testing.T) {
	e := newWorkerEnv(t, "http://127.0.0.1:1/", []string{parley.HookMessageSent}, 1000)
	m := e.send(t, "x")
	if err := e.st.Store.AdvanceWebhook(context.Background(), e.w.lease, parley.HookPosition{RoomID: e.room.ID, Seq: m.Seq}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.EditMessage(context.Background(), parley.Edit{RoomID: e.room.ID, Seq: m.Seq, EditorID: e.u.ID, Body: "edited"}); err != nil {
		t.Fatal(err)
	}
	e.st.failAdvance = true
	e.run(t)
	for {
		select {
		case msg := <-e.log:
			if msg == "webhook room" {
				return
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a round whose write failed was not logged as failed")
		}
	}
}
