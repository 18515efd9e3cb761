package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"parley"
)

// NewStoreFunc returns a fresh, empty store that calls sink (when not nil)
// with its committed events. It registers its own cleanup with t.
type NewStoreFunc func(t *testing.T, sink parley.EventSink) parley.Store

// RunStoreTests runs the conformance suite against the stores newStore
// makes, each subtest on a fresh store.
//
// The suite pins down these choices where parley.Store leaves room:
//   - the creator of a group room is its first member and takes a seat:
//     a room of capacity 101 has 100 seats left for others;
//   - Send's event is one EventMessage, which also stands for the sender's
//     read position moving to its seq (no EventRead for it);
//   - a write that changes nothing (a repeated client_id, a second join,
//     a read position that does not move, leaving a room one is not in)
//     reports no event;
//   - Send refuses a sender who is not a member with CodeForbidden, checked
//     in its own transaction (the caller checks too, but a leave may
//     commit in between), and stores nothing for it.
func RunStoreTests(t *testing.T, newStore NewStoreFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, newStore NewStoreFunc)
	}{
		{"SeqContiguity", testSeqContiguity},
		{"IdempotentRepeat", testIdempotentRepeat},
		{"Capacity", testCapacity},
		{"RoomList", testRoomList},
		{"RoomListPaging", testRoomListPaging},
		{"HistoryPaging", testHistoryPaging},
		{"ReadPosition", testReadPosition},
		{"DirectRooms", testDirectRooms},
		{"Accounts", testAccounts},
		{"CreateUserWithID", testCreateUserWithID},
		{"Events", testEvents},
		{"ConcurrentEvents", testConcurrentEvents},
		{"UnknownRoom", testUnknownRoom},
		{"MembersOnly", testMembersOnly},
		{"Changes", testChanges},
		{"Reactions", testReactions},
		{"Replies", testReplies},
		{"Pins", testPins},
		{"Mentions", testMentions},
	}
	for _, tt := range append(tests, peopleTests...) {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore) })
	}
}

// MustCreateUser registers a user called name with a dummy password hash.
func MustCreateUser(t testing.TB, s parley.Store, name string) parley.User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), parley.NewUser{Name: name, PasswordHash: []byte("hash of " + name)})
	if err != nil {
		t.Fatalf("CreateUser(%q) error = %v", name, err)
	}
	return u
}

// MustCreateUsers registers n users called prefix0, prefix1, ...,
// concurrently, and returns them in that order.
func MustCreateUsers(t testing.TB, s parley.Store, prefix string, n int) []parley.User {
	t.Helper()
	users := make([]parley.User, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			users[i], errs[i] = s.CreateUser(context.Background(),
				parley.NewUser{Name: fmt.Sprintf("%s%d", prefix, i), PasswordHash: []byte("hash")})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("CreateUser(%s%d) error = %v", prefix, i, err)
		}
	}
	return users
}

// MustCreateRoom creates a group room with creator as its first member.
func MustCreateRoom(t testing.TB, s parley.Store, creator parley.User, title string, capacity int) parley.Room {
	t.Helper()
	r, created, err := s.CreateRoom(context.Background(), parley.NewRoom{
		Kind: parley.KindGroup, Title: title, Capacity: capacity, CreatorID: creator.ID,
	})
	if err != nil || !created {
		t.Fatalf("CreateRoom(%q) = %v, %v, want created", title, created, err)
	}
	return r
}

// MustJoin makes u a member of room r and returns the room after it.
func MustJoin(t testing.TB, s parley.Store, r parley.Room, u parley.User) parley.Room {
	t.Helper()
	after, _, err := s.Join(context.Background(), r.ID, u.ID)
	if err != nil {
		t.Fatalf("Join(%s, %s) error = %v", r.ID, u.Name, err)
	}
	return after
}

// MustSend stores a message of u in room r.
func MustSend(t testing.TB, s parley.Store, r parley.Room, u parley.User, body string) parley.Message {
	t.Helper()
	m, created, err := s.Send(context.Background(), parley.NewMessage{
		RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body,
	})
	if err != nil || !created {
		t.Fatalf("Send(%s, %q) = %v, %v, want created", r.ID, body, created, err)
	}
	return m
}

// MustRoom returns the room with that id.
func MustRoom(t testing.TB, s parley.Store, id string) parley.Room {
	t.Helper()
	r, err := s.Room(context.Background(), id)
	if err != nil {
		t.Fatalf("Room(%s) error = %v", id, err)
	}
	return r
}

// AllRooms reads u's whole room list, page by page of limit entries.
func AllRooms(t testing.TB, s parley.Store, u parley.User, limit int) []parley.RoomEntry {
	t.Helper()
	var all []parley.RoomEntry
	cursor := ""
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("Rooms(%s) never ends", u.Name)
		}
		entries, next, err := s.Rooms(context.Background(), u.ID, cursor, limit)
		if err != nil {
			t.Fatalf("Rooms(%s, %q, %d) error = %v", u.Name, cursor, limit, err)
		}
		if len(entries) > limit {
			t.Errorf("Rooms(%s, %q, %d) returned %d entries, want at most %d", u.Name, cursor, limit, len(entries), limit)
		}
		all = append(all, entries...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// Recorder is an EventSink that keeps every event it gets.
type Recorder struct {
	mu     sync.Mutex // guards events
	events []parley.Event
}

// Sink is the parley.EventSink that records.
func (r *Recorder) Sink(events []parley.Event) {
	r.mu.Lock()
	r.events = append(r.events, events...)
	r.mu.Unlock()
}

// Events returns a copy of the events so far, in the order received.
func (r *Recorder) Events() []parley.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Len returns how many events were received.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// wantCode reports an error unless err has the code want.
func wantCode(t *testing.T, call string, err error, want string) {
	t.Helper()
	if got := parley.ErrorCode(err); got != want {
		t.Errorf("%s error = %v, want code %s", call, err, want)
	}
}

// sameRoom reports whether two views of a room agree on what the suite
// checks.
func sameRoom(a, b parley.Room) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Title == b.Title && a.Capacity == b.Capacity &&
		a.MemberCount == b.MemberCount && a.LastSeq == b.LastSeq && a.LastActivityAt.Equal(b.LastActivityAt) &&
		a.RetentionSeconds == b.RetentionSeconds
}

func roomString(r parley.Room) string {
	return fmt.Sprintf("{id %s members %d last_seq %d activity %s}", r.ID, r.MemberCount, r.LastSeq,
		r.LastActivityAt.Format("15:04:05.000000"))
}
