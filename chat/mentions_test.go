package chat_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// mentionStores are the stores the mention tests run against: SQLite,
// and PostgreSQL when PARLEY_TEST_POSTGRES is set.
var mentionStores = []struct {
	name string
	open func(t *testing.T) parley.Store
}{
	{"sqlite", mustOpenStore},
	{"postgres", func(t *testing.T) parley.Store {
		db, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}},
}

// told records the mention events of a service.
type told struct {
	mu  sync.Mutex
	evs []parley.Event
}

func (r *told) add(ev parley.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// take returns the events recorded since the last take.
func (r *told) take() []parley.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.evs
	r.evs = nil
	return evs
}

// fakeLimit allows n calls, then refuses with a wait of a minute.
type fakeLimit struct {
	mu sync.Mutex
	n  int
}

func (l *fakeLimit) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return false, time.Minute
	}
	l.n--
	return true, 0
}

// mentionWorld: alice owns a room where bob and carol are members; dave
// is registered and outside it.
type mentionWorld struct {
	s                       *chat.Service
	db                      parley.Store
	told                    *told
	alice, bob, carol, dave parley.User
	room                    parley.Room
}

func newMentionWorld(t *testing.T, open func(t *testing.T) parley.Store, limit int) *mentionWorld {
	t.Helper()
	w := &mentionWorld{db: open(t), told: &told{}}
	w.s = chat.New(chat.Config{Store: w.db, KDF: cheap, OnMention: w.told.add, RoomMentionLimit: &fakeLimit{n: limit}})
	var us []parley.User
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		u, err := w.s.Register(ctx, name, "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, u)
	}
	w.alice, w.bob, w.carol, w.dave = us[0], us[1], us[2], us[3]
	var err error
	if w.room, _, err = w.s.CreateRoom(ctx, w.alice, chat.NewRoom{Kind: parley.KindGroup, Title: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []parley.User{w.bob, w.carol} {
		if _, _, err := w.s.Join(ctx, u, w.room.ID); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestMentions: a send resolves @names of members into the message's
// mentions, tells them (not the sender, not at level none), counts them
// on the room list until read; bad input is refused and stores nothing.
func TestMentions(t *testing.T) {
	for _, st := range mentionStores {
		t.Run(st.name, func(t *testing.T) {
			t.Run("Resolve", func(t *testing.T) { testMentionResolve(t, st.open) })
			t.Run("Refused", func(t *testing.T) { testMentionRefused(t, st.open) })
			t.Run("Edit", func(t *testing.T) { testMentionEdit(t, st.open) })
			t.Run("Levels", func(t *testing.T) { testMentionLevels(t, st.open) })
		})
	}
}

func (w *mentionWorld) entry(t *testing.T, u parley.User) parley.RoomEntry {
	t.Helper()
	es, _, err := w.s.Rooms(ctx, u, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Room.ID == w.room.ID {
			return e
		}
	}
	t.Fatalf("%s has no entry for the room", u.Name)
	return parley.RoomEntry{}
}

func testMentionResolve(t *testing.T, open func(t *testing.T) parley.Store) {
	w := newMentionWorld(t, open, 10)
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"no mention at all", nil},
		{"hi @bob, and @carol.", []string{w.bob.ID, w.carol.ID}},
		{"@bob @bob @bob", []string{w.bob.ID}},
		{"mail bob@bob.example or @@bob or @Bob", nil}, // not at a word start; names compare case and all
		{"@nobody is plain text, @alice is me", []string{w.alice.ID}},
		{"@room look", []string{parley.MentionRoom}},
	} {
		m, _, err := w.s.Send(ctx, w.alice, w.room.ID, tc.body, "")
		if err != nil {
			t.Fatalf("Send(%q) error = %v", tc.body, err)
		}
		if got := m.Mentions.IDs(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Send(%q) mentions = %v, want %v", tc.body, got, tc.want)
		}
	}
	evs := w.told.take()
	// "hi @bob, and @carol." tells both, "@bob..." bob, "@alice" nobody
	// (the sender), "@room" bob and carol.
	var got []string
	for _, ev := range evs {
		if ev.Kind != parley.EventMention || ev.Message.SenderID != w.alice.ID {
			t.Errorf("told %+v, want mention events of alice's messages", ev)
		}
		got = append(got, strings.Join(ev.Users, "+"))
	}
	want := []string{w.bob.ID + "+" + w.carol.ID, w.bob.ID, sortedPair(w, w.bob.ID, w.carol.ID, evs)}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("told %v, want %v", got, want)
	}
	if e := w.entry(t, w.bob); e.Mentions != 3 || e.Notifications != parley.NotifyAll {
		t.Errorf("bob's entry: %d mentions, level %q; want 3, all", e.Mentions, e.Notifications)
	}
	if e := w.entry(t, w.alice); e.Mentions != 0 {
		t.Errorf("alice's entry: %d mentions, want 0 (her own messages)", e.Mentions)
	}
	if _, err := w.s.MarkRead(ctx, w.bob, w.room.ID, 100); err != nil {
		t.Fatal(err)
	}
	if e := w.entry(t, w.bob); e.Mentions != 0 {
		t.Errorf("bob's entry after reading: %d mentions, want 0", e.Mentions)
	}
}

// sortedPair is the users of the last event (an @room: every member but
// the sender, in the store's order) if they are exactly a and b.
func sortedPair(w *mentionWorld, a, b string, evs []parley.Event) string {
	if len(evs) == 0 {
		return ""
	}
	us := evs[len(evs)-1].Users
	if len(us) == 2 && (us[0] == a && us[1] == b || us[0] == b && us[1] == a) {
		return strings.Join(us, "+")
	}
	return "bob and carol"
}

func testMentionRefused(t *testing.T, open func(t *testing.T) parley.Store) {
	w := newMentionWorld(t, open, 1)
	many := ""
	for i := range parley.MaxMentions + 1 {
		many += "@user" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + " "
	}
	for _, tc := range []struct {
		name string
		who  parley.User
		body string
		code string
	}{
		{"a non-member", w.alice, "hello @dave", parley.CodeInvalid},
		{"@room by a member", w.bob, "@room wake up", parley.CodeForbidden},
		{"over the bound", w.alice, many, parley.CodeInvalid},
		{"a huge body of @", w.alice, strings.Repeat("@", 4000), ""},
	} {
		_, _, err := w.s.Send(ctx, tc.who, w.room.ID, tc.body, "")
		if parley.ErrorCode(err) != tc.code {
			t.Errorf("%s: Send error = %v, want code %q", tc.name, err, tc.code)
		}
	}
	if _, _, err := w.s.Send(ctx, w.alice, w.room.ID, "hello @dave", ""); err == nil || !strings.Contains(err.Error(), "dave is not a member of this room: invite them first") {
		t.Errorf("non-member mention error = %v, want it to say to invite dave", err)
	}
	// @room: the first within the limit passes, the next is refused with a wait.
	first, _, err := w.s.Send(ctx, w.alice, w.room.ID, "@room one", "")
	if err != nil {
		t.Fatalf("first @room: %v", err)
	}
	// Fixing a typo in it spends no @room of the limit again.
	if _, err := w.s.EditMessage(ctx, w.alice, w.room.ID, first.Seq, "@room one!", ""); err != nil {
		t.Errorf("an edit of an @room message past the limit: %v, want it allowed", err)
	}
	_, _, err = w.s.Send(ctx, w.alice, w.room.ID, "@room two", "")
	var re *parley.RetryError
	if parley.ErrorCode(err) != parley.CodeRateLimited || !asRetry(err, &re) || re.After != time.Minute {
		t.Errorf("second @room = %v, want rate_limited with a wait of a minute", err)
	}
	msgs, err := w.s.Messages(ctx, w.alice, w.room.ID, parley.Newest(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 { // the @s and "@room one"
		t.Errorf("stored %d messages, want 2: the refused ones store nothing", len(msgs))
	}
	if evs := w.told.take(); len(evs) != 1 {
		t.Errorf("told %d times, want once (the first @room)", len(evs))
	}
}

func testMentionEdit(t *testing.T, open func(t *testing.T) parley.Store) {
	w := newMentionWorld(t, open, 10)
	m, _, err := w.s.Send(ctx, w.alice, w.room.ID, "hi @bob", "")
	if err != nil {
		t.Fatal(err)
	}
	w.told.take()
	e, err := w.s.EditMessage(ctx, w.alice, w.room.ID, m.Seq, "hi @bob and @carol", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Mentions.IDs(); len(got) != 2 {
		t.Errorf("edited mentions = %v, want bob and carol", got)
	}
	evs := w.told.take()
	if len(evs) != 1 || strings.Join(evs[0].Users, ",") != w.carol.ID {
		t.Errorf("the edit told %+v, want carol only (newly mentioned)", evs)
	}
	if _, err := w.s.EditMessage(ctx, w.alice, w.room.ID, m.Seq, "hi @carol", ""); err != nil {
		t.Fatal(err)
	}
	if evs := w.told.take(); len(evs) != 0 {
		t.Errorf("an edit that drops a mention told %+v, want nobody", evs)
	}
	if e := w.entry(t, w.bob); e.Mentions != 0 {
		t.Errorf("bob's mentions after being edited out = %d, want 0", e.Mentions)
	}
	if _, err := w.s.EditMessage(ctx, w.alice, w.room.ID, m.Seq, "hi @dave", ""); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("an edit mentioning a non-member = %v, want invalid", err)
	}
	if _, err := w.s.DeleteMessage(ctx, w.alice, w.room.ID, m.Seq, ""); err != nil {
		t.Fatal(err)
	}
	if e := w.entry(t, w.carol); e.Mentions != 0 {
		t.Errorf("carol's mentions after the deletion = %d, want 0", e.Mentions)
	}
}

func testMentionLevels(t *testing.T, open func(t *testing.T) parley.Store) {
	w := newMentionWorld(t, open, 10)
	if err := w.s.SetNotifyLevel(ctx, w.bob, w.room.ID, "loud"); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("level loud = %v, want invalid", err)
	}
	if err := w.s.SetNotifyLevel(ctx, w.dave, w.room.ID, parley.NotifyNone); parley.ErrorCode(err) != parley.CodeForbidden {
		t.Errorf("level of a non-member = %v, want forbidden", err)
	}
	if err := w.s.SetNotifyLevel(ctx, w.bob, w.room.ID, parley.NotifyNone); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetNotifyLevel(ctx, w.carol, w.room.ID, parley.NotifyMentions); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.s.Send(ctx, w.alice, w.room.ID, "@bob @carol", ""); err != nil {
		t.Fatal(err)
	}
	evs := w.told.take()
	if len(evs) != 1 || strings.Join(evs[0].Users, ",") != w.carol.ID {
		t.Errorf("told %+v, want carol only (bob is at none)", evs)
	}
	if e := w.entry(t, w.bob); e.Mentions != 0 || e.Notifications != parley.NotifyNone {
		t.Errorf("bob's entry = %d mentions, level %q; want 0, none", e.Mentions, e.Notifications)
	}
	if e := w.entry(t, w.carol); e.Mentions != 1 || e.Notifications != parley.NotifyMentions {
		t.Errorf("carol's entry = %d mentions, level %q; want 1, mentions", e.Mentions, e.Notifications)
	}
}

func asRetry(err error, re **parley.RetryError) bool { return errors.As(err, re) }

// countingStore counts the reads a mention costs.
type countingStore struct {
	parley.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *countingStore) count(name string) {
	s.mu.Lock()
	s.calls[name]++
	s.mu.Unlock()
}

func (s *countingStore) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	s.count("UserByName")
	return s.Store.UserByName(ctx, name)
}

func (s *countingStore) NotifyLevels(ctx context.Context, roomID string, ids []string) (map[string]string, error) {
	s.count("NotifyLevels")
	return s.Store.NotifyLevels(ctx, roomID, ids)
}

func (s *countingStore) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	s.count("Member")
	return s.Store.Member(ctx, roomID, userID)
}

// TestMentionFreeSendCostsNothing: a text with no "@" (or one that names
// nobody) reads nothing more than a send did before mentions: the
// membership check, no user lookup, no level read.
func TestMentionFreeSendCostsNothing(t *testing.T) {
	cs := &countingStore{calls: map[string]int{}}
	w := newMentionWorld(t, func(t *testing.T) parley.Store { cs.Store = mustOpenStore(t); return cs }, 10)
	for _, body := range []string{"no mention at all", "an email: bob@example.com"} {
		cs.mu.Lock()
		clear(cs.calls)
		cs.mu.Unlock()
		if _, _, err := w.s.Send(ctx, w.alice, w.room.ID, body, ""); err != nil {
			t.Fatal(err)
		}
		cs.mu.Lock()
		got := maps.Clone(cs.calls)
		cs.mu.Unlock()
		if got["UserByName"] != 0 || got["NotifyLevels"] != 0 || got["Member"] != 1 {
			t.Errorf("Send(%q) read %v, want the membership check only", body, got)
		}
	}
}
