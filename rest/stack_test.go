package rest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"parley"
	"parley/cache"
	"parley/chat"
	"parley/history"
	"parley/rest"
	"parley/sqlite"
)

// openStack is the read path cmd/parley wires on one node: rest over chat
// over history over cache over SQLite, the store's commits applied to the
// cache and then to the history cache.
func openStack(tb testing.TB) (*chat.Service, *rest.Handler) {
	tb.Helper()
	ctx := context.Background()
	var c *cache.Store
	var hs *history.Store
	db, err := sqlite.Open(ctx, sqlite.Config{
		Path: filepath.Join(tb.TempDir(), "parley.db"),
		Sync: sqlite.SyncOff,
		OnCommit: func(events []parley.Event) {
			c.Apply(events)
			hs.Apply(events)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	c = cache.New(db, cache.Config{})
	tb.Cleanup(func() { c.Close() })
	hs = history.New(c, history.Config{})
	svc := chat.New(chat.Config{Store: hs, KDF: chat.KDF{Time: 1, Memory: 64, Threads: 1}})
	return svc, rest.New(rest.Config{Chat: svc})
}

// signUp registers name and logs it in: the user and a token.
func signUp(tb testing.TB, svc *chat.Service, name string) (parley.User, string) {
	tb.Helper()
	ctx := context.Background()
	u, err := svc.Register(ctx, name, "password-of-"+name)
	if err != nil {
		tb.Fatal(err)
	}
	tok, _, err := svc.Login(ctx, name, "password-of-"+name)
	if err != nil {
		tb.Fatal(err)
	}
	return u, tok
}

// must fails the test on the error a call returned last: must(t)(f()).
func must(tb testing.TB) func(...any) {
	return func(results ...any) {
		tb.Helper()
		if err, _ := results[len(results)-1].(error); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestMemoOverTheCaches: the memo's identity path (rest/memo.go) relies on
// the caches never changing a page they handed out. Over the real read
// path, where repeated reads do return the very same slices, every hot
// read answers, after each kind of change (a send, edits inside the recent
// window and inside a history block, a deletion, a read mark, a rename,
// enough sends to move the window), exactly what a handler with an empty
// memo answers.
func TestMemoOverTheCaches(t *testing.T) {
	ctx := context.Background()
	svc, h := openStack(t)
	ann, tokA := signUp(t, svc, "ann")
	bob, tokB := signUp(t, svc, "bob")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Join(ctx, bob, room.ID); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 250; i++ {
		must(t)(svc.Send(ctx, ann, room.ID, fmt.Sprintf("m%d", i), ""))
	}

	// The path under test is taken: the caches hand out the same slices.
	for _, p := range []parley.Page{parley.Newest(50), {Before: 101, After: -1, Limit: 50}} {
		a, err := svc.Messages(ctx, ann, room.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := svc.Messages(ctx, ann, room.ID, p)
		if len(b) == 0 || &a[0] != &b[0] {
			t.Fatalf("page %+v: two reads returned two slices; the memo's identity path is not exercised", p)
		}
	}
	r1, _, _ := svc.Rooms(ctx, bob, "", 50)
	r2, _, _ := svc.Rooms(ctx, bob, "", 50)
	if len(r1) == 0 || &r1[0] != &r2[0] {
		t.Fatal("two room lists returned two slices; the memo's identity path is not exercised")
	}

	get := func(h *rest.Handler, tok, path string) string {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return fmt.Sprint(w.Code, " ", w.Body.String())
	}
	reads := []struct{ tok, path string }{
		{tokA, "/api/rooms/" + room.ID + "/messages?limit=50"},
		{tokA, "/api/rooms/" + room.ID + "/messages?limit=50&before=101"},
		{tokA, "/api/rooms/" + room.ID + "/messages?limit=50&before=201"},
		{tokA, "/api/rooms/" + room.ID + "/messages?limit=10&before=240"},
		{tokB, "/api/me/rooms"},
		{tokA, "/api/me/rooms"},
	}
	check := func(step string) {
		t.Helper()
		fresh := rest.New(rest.Config{Chat: svc})
		for _, r := range reads {
			for range 2 { // the second read is the memo's
				if got, want := get(h, r.tok, r.path), get(fresh, r.tok, r.path); got != want {
					t.Errorf("after %s: %s served %.200s\nwant %.200s", step, r.path, got, want)
				}
			}
		}
	}
	check("the start")
	must(t)(svc.Send(ctx, ann, room.ID, "new", ""))
	check("a send")
	for _, seq := range []int64{251, 60, 180, 235} {
		must(t)(svc.EditMessage(ctx, ann, room.ID, seq, fmt.Sprintf("edited %d", seq), ""))
		check(fmt.Sprintf("an edit of %d", seq))
	}
	must(t)(svc.DeleteMessage(ctx, ann, room.ID, 251, ""))
	check("a deletion")
	must(t)(svc.MarkRead(ctx, bob, room.ID, 200))
	check("a read mark")
	title := "renamed"
	must(t)(svc.UpdateRoom(ctx, ann, room.ID, chat.RoomUpdate{Title: &title}))
	check("a rename")
	for i := range 150 {
		must(t)(svc.Send(ctx, bob, room.ID, fmt.Sprintf("b%d", i), ""))
	}
	check("150 more sends")
	must(t)(svc.EditMessage(ctx, bob, room.ID, 300, "edited 300", ""))
	check("an edit of 300")
}
