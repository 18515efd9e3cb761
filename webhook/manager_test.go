package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/sqlite"
	"parley/webhook"
)

// hookStore is what the tests need of a store.
type hookStore interface {
	parley.Store
	webhook.Store
	CreateWebhook(ctx context.Context, h parley.Webhook) (parley.Webhook, error)
	ResumeWebhook(ctx context.Context, name string) (parley.Webhook, error)
}

// forEachStore runs f against SQLite, and against PostgreSQL when
// PARLEY_TEST_POSTGRES is set.
func forEachStore(t *testing.T, f func(t *testing.T, st hookStore)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t)) })
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.Schema(t), LivenessTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

// openSQLite opens a store in a new file, closed at the test's end.
func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// receiver is a webhook receiver that records every delivery it takes,
// checks each signature with the documented check, and fails as told.
type receiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex // guards the following fields
	fail   int        // the next fail deliveries get a 500; -1: every one
	got    []delivery
	bad    int // deliveries whose signature did not check
	seen   chan struct{}
}

type delivery struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Room   string          `json:"room"`
	Seq    int64           `json:"seq"`
	Change int64           `json:"change"`
	Event  int64           `json:"event"`
	Actor  string          `json:"actor"`
	Data   json.RawMessage `json:"data"`
	msg    parley.Message
}

func newReceiver(t *testing.T, secret string, fail int) (*receiver, *httptest.Server) {
	r := &receiver{t: t, secret: []byte(secret), fail: fail, seen: make(chan struct{}, 1)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := verifyParley(r.secret, req, body, time.Now()); err != nil {
		r.bad++
		w.WriteHeader(401)
		return
	}
	if r.fail != 0 {
		if r.fail > 0 {
			r.fail--
		}
		w.WriteHeader(500)
		return
	}
	var d delivery
	if err := json.Unmarshal(body, &d); err != nil {
		r.t.Errorf("delivery %s: %v", body, err)
	}
	json.Unmarshal(d.Data, &d.msg)
	r.got = append(r.got, d)
	w.WriteHeader(200)
	select {
	case r.seen <- struct{}{}:
	default:
	}
}

func (r *receiver) setFail(n int) {
	r.mu.Lock()
	r.fail = n
	r.mu.Unlock()
}

// await waits until every id of want was received (a bounded wait: a
// hang guard, not a timing check).
func (r *receiver) await(t *testing.T, want map[string]bool) []delivery {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		ids := map[string]bool{}
		for _, d := range r.got {
			ids[d.ID] = true
		}
		got := append([]delivery(nil), r.got...)
		r.mu.Unlock()
		missing := 0
		for id, must := range want {
			if must && !ids[id] {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		select {
		case <-r.seen:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d events never delivered", missing, len(want))
		}
	}
}

// checkOrder checks that the deliveries, deduplicated by id, are the
// events of want (every one it must have, no other), and each room's in its order: sends by seq, changes by change
// number, a change after its message's send.
func checkOrder(t *testing.T, got []delivery, want map[string]bool) {
	t.Helper()
	ids := map[string]bool{}
	type pos struct{ seq, change int64 }
	at := map[string]pos{}
	for _, d := range got {
		if _, ok := want[d.ID]; !ok {
			t.Errorf("delivered %s, which is no event of the test", d.ID)
		}
		if ids[d.ID] {
			continue // a repeat: the receiver deduplicates by id
		}
		ids[d.ID] = true
		p := at[d.Room]
		switch d.Type {
		case parley.HookMessageSent:
			if p.seq != 0 && d.Seq != p.seq+1 { // the first: where the webhook started
				t.Errorf("room %s: send %d after send %d", d.Room, d.Seq, p.seq)
			}
			p.seq = d.Seq
		case parley.HookMessageEdited, parley.HookMessageDeleted:
			if d.Change <= p.change || d.msg.Seq > p.seq {
				t.Errorf("room %s: change %d of message %d after change %d and send %d", d.Room, d.Change, d.msg.Seq, p.change, p.seq)
			}
			p.change = d.Change
		}
		at[d.Room] = p
	}
	for id, must := range want {
		if must && !ids[id] {
			t.Errorf("event %s never delivered", id)
		}
	}
}

// fill makes a user and two rooms in st.
func fill(t *testing.T, st hookStore) (parley.User, [2]parley.Room) {
	t.Helper()
	ctx := context.Background()
	u, err := st.CreateUser(ctx, parley.NewUser{Name: "alice", PasswordHash: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	var rooms [2]parley.Room
	for i := range rooms {
		if rooms[i], _, err = st.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: fmt.Sprint("r", i), CreatorID: u.ID}); err != nil {
			t.Fatal(err)
		}
	}
	return u, rooms
}

// activity sends n messages to each room, edits every third and deletes
// every fifth, and returns the ids of the events: true for those that
// must be delivered, false for those that may be (an edit superseded by
// a deletion).
func activity(t *testing.T, st hookStore, u parley.User, rooms [2]parley.Room, from, n int) map[string]bool {
	t.Helper()
	ctx := context.Background()
	want := map[string]bool{}
	for i := from; i < from+n; i++ {
		for _, r := range rooms {
			m, _, err := st.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint("m", i)})
			if err != nil {
				t.Fatal(err)
			}
			want[webhook.SendID(r.ID, m.Seq)] = true
			if i%3 == 0 {
				e, err := st.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: m.Seq, EditorID: u.ID, Body: "edited"})
				if err != nil {
					t.Fatal(err)
				}
				want[webhook.ChangeID(r.ID, e.Change)] = true
			}
			if i%5 == 0 {
				d, _, err := st.DeleteMessage(ctx, parley.Deletion{RoomID: r.ID, Seq: m.Seq, ActorID: u.ID})
				if err != nil {
					t.Fatal(err)
				}
				// An edit followed by a deletion is delivered as the
				// deletion (the message as it is now).
				// It may also be delivered before the deletion.
				if i%3 == 0 {
					want[webhook.ChangeID(r.ID, d.Change-1)] = false
				}
				want[webhook.ChangeID(r.ID, d.Change)] = true
			}
		}
	}
	return want
}

func startManager(t *testing.T, st hookStore, node string, maxFailures int) *webhook.Manager {
	t.Helper()
	f, _ := webhook.NewFilter([]string{"127.0.0.1"})
	m, err := webhook.Start(webhook.Config{Store: st, Node: node, Filter: f, Poll: 20 * time.Millisecond,
		LeaseTTL: 3 * time.Second, Timeout: 5 * time.Second, MaxFailures: maxFailures,
		MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRetriesAndOrder: a receiver that fails its first deliveries gets
// every event made after the webhook was added (and none before), each
// room's in order, each signed.
func TestRetriesAndOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st)
		// Before the webhook: not delivered.
		activity(t, st, u, rooms, 100, 2)
		rcv, srv := newReceiver(t, "whsec_test_secret_1", 5)
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "all", URL: srv.URL, Secret: "whsec_test_secret_1", Kinds: parley.HookKinds}); err != nil {
			t.Fatal(err)
		}
		m := startManager(t, st, "n1", 1000)
		defer m.Close()
		want := activity(t, st, u, rooms, 0, 40)
		checkOrder(t, rcv.await(t, want), want)
		if rcv.bad != 0 {
			t.Errorf("%d deliveries failed the signature check", rcv.bad)
		}
	})
}

// TestPauseResume: a webhook whose receiver keeps failing is paused after
// MaxFailures attempts; resumed, it delivers everything from where it
// stopped.
func TestPauseResume(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st)
		rcv, srv := newReceiver(t, "whsec_test_secret_2", -1)
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "flaky", URL: srv.URL, Secret: "whsec_test_secret_2",
			Kinds: []string{parley.HookMessageSent}, RoomID: rooms[0].ID}); err != nil {
			t.Fatal(err)
		}
		m := startManager(t, st, "n1", 3)
		defer m.Close()
		all := activity(t, st, u, rooms, 0, 10)
		want := map[string]bool{}
		for seq := int64(1); seq <= 10; seq++ {
			want[webhook.SendID(rooms[0].ID, seq)] = true
		}
		if len(all) <= len(want) {
			t.Fatal("the test made no events the webhook must skip")
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			hooks, err := st.Webhooks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if hooks[0].PausedAt != nil {
				t.Logf("paused: %s", hooks[0].PausedReason)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the webhook was never paused")
			}
			time.Sleep(10 * time.Millisecond)
		}
		rcv.setFail(0)
		if _, err := st.ResumeWebhook(ctx, "flaky"); err != nil {
			t.Fatal(err)
		}
		checkOrder(t, rcv.await(t, want), want)
	})
}

// TestLeaseHandover: two nodes deliver one webhook, one at a time; when
// the holder stops, the other takes over from the stored positions.
func TestLeaseHandover(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st)
		rcv, srv := newReceiver(t, "whsec_test_secret_3", 0)
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "ha", URL: srv.URL, Secret: "whsec_test_secret_3", Kinds: parley.HookKinds}); err != nil {
			t.Fatal(err)
		}
		a := startManager(t, st, "a", 1000)
		b := startManager(t, st, "b", 1000)
		defer b.Close()
		want := activity(t, st, u, rooms, 0, 10)
		rcv.await(t, want)
		a.Close() // releases its lease if it held it
		more := activity(t, st, u, rooms, 10, 10)
		for id, must := range more {
			want[id] = must
		}
		checkOrder(t, rcv.await(t, want), want)
	})
}

// TestLeaseFencing: the store's lease is held by one node at a time, a
// renewal keeps the token, a takeover of an expired lease moves it, and
// the former holder's moves and pause fail with CodeConflict; a position
// only moves forward; a paused webhook has no lease.
func TestLeaseFencing(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st)
		h, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "fenced", URL: "https://93.184.216.34/", Secret: "whsec_fence_0123456", Kinds: parley.HookKinds})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "fenced", URL: "https://93.184.216.34/", Secret: "x", Kinds: parley.HookKinds}); parley.ErrorCode(err) != parley.CodeNameTaken {
			t.Errorf("a second webhook named fenced: %v, want %s", err, parley.CodeNameTaken)
		}
		activity(t, st, u, rooms, 0, 6)
		conflict := func(what string, err error) {
			t.Helper()
			if parley.ErrorCode(err) != parley.CodeConflict {
				t.Errorf("%s: %v, want %s", what, err, parley.CodeConflict)
			}
		}
		a1, ok, err := st.AcquireWebhookLease(ctx, h.ID, "a", time.Hour)
		if err != nil || !ok {
			t.Fatalf("a takes the lease: %v %v", ok, err)
		}
		if _, ok, err := st.AcquireWebhookLease(ctx, h.ID, "b", time.Hour); err != nil || ok {
			t.Fatalf("b takes a's live lease: %v %v", ok, err)
		}
		// a renews, with a lease that has expired at once.
		a2, ok, err := st.AcquireWebhookLease(ctx, h.ID, "a", -time.Second)
		if err != nil || !ok || a2.Token != a1.Token {
			t.Fatalf("a renews: %+v %v %v, want token %d", a2, ok, err, a1.Token)
		}
		b1, ok, err := st.AcquireWebhookLease(ctx, h.ID, "b", time.Hour)
		if err != nil || !ok || b1.Token <= a1.Token {
			t.Fatalf("b takes a's expired lease: %+v %v %v", b1, ok, err)
		}
		conflict("a moves a position after the takeover", st.AdvanceWebhook(ctx, a1, parley.HookPosition{RoomID: rooms[0].ID, Seq: 3, Change: 1, Event: 1}))
		conflict("a pauses after the takeover", st.PauseWebhook(ctx, a1, "x"))
		if err := st.AdvanceWebhook(ctx, b1, parley.HookPosition{RoomID: rooms[0].ID, Seq: 4, Change: 2, Event: 3}); err != nil {
			t.Fatalf("b moves a position: %v", err)
		}
		if err := st.AdvanceWebhook(ctx, b1, parley.HookPosition{RoomID: rooms[0].ID, Seq: 2, Change: 1, Event: 1}); err != nil {
			t.Fatalf("b moves a position back: %v", err)
		}
		ps, err := st.HookPositions(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.RoomID == rooms[0].ID && (p.Seq != 4 || p.Change != 2 || p.Event != 3) {
				t.Errorf("position %d/%d/%d, want 4/2/3: a position only moves forward", p.Seq, p.Change, p.Event)
			}
		}
		if len(ps) != 2 {
			t.Errorf("%d rooms behind, want 2", len(ps))
		}
		if err := st.ReleaseWebhookLease(ctx, b1); err != nil {
			t.Fatal(err)
		}
		a3, ok, err := st.AcquireWebhookLease(ctx, h.ID, "a", time.Hour)
		if err != nil || !ok || a3.Token <= b1.Token {
			t.Fatalf("a takes the released lease: %+v %v %v", a3, ok, err)
		}
		if err := st.PauseWebhook(ctx, a3, "too many failures"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := st.AcquireWebhookLease(ctx, h.ID, "b", time.Hour); err != nil || ok {
			t.Errorf("b takes a paused webhook's lease: %v %v", ok, err)
		}
		hooks, _ := st.Webhooks(ctx)
		if len(hooks) != 1 || hooks[0].PausedAt == nil || hooks[0].PausedReason != "too many failures" {
			t.Errorf("Webhooks = %+v, want fenced paused", hooks)
		}
		if _, err := st.ResumeWebhook(ctx, "nothing"); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("resume an unknown webhook: %v", err)
		}
	})
}
