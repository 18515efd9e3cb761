package parleytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"parley"
)

// MustQuery parses a search.
func MustQuery(t testing.TB, s string) parley.Query {
	t.Helper()
	q, err := parley.ParseQuery(s)
	if err != nil {
		t.Fatalf("ParseQuery(%q) error = %v", s, err)
	}
	return q
}

// testSearch: matches and non-matches, in a room and over a user's rooms,
// after edits and deletions, for members only (a room left is not
// searched), whatever the input holds.
func testSearch(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	general := MustCreateRoom(t, s, alice, "general", 0)
	MustJoin(t, s, general, bob)
	secret := MustCreateRoom(t, s, alice, "secret", 0)
	direct, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: alice.ID, PeerID: bob.ID})
	if err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	g1 := MustSend(t, s, general, alice, "The quick brown Fox jumps")
	g2 := MustSend(t, s, general, bob, "lazy dogs sleep; fox-like cats")
	MustSend(t, s, general, alice, "안녕하세요 여러분 회의는 내일입니다")
	s1 := MustSend(t, s, secret, alice, "the fox plans in secret")
	d1 := MustSend(t, s, direct, bob, "a fox in our direct chat")

	inRoom := func(r parley.Room, q string, before int64) []int64 {
		t.Helper()
		WaitIndexed(t, s)
		msgs, err := s.SearchRoom(ctx, r.ID, MustQuery(t, q), before, 50)
		if err != nil {
			t.Fatalf("SearchRoom(%s, %q) error = %v", r.Title, q, err)
		}
		return seqsOf(msgs)
	}
	everywhere := func(u parley.User, q string) []string {
		t.Helper()
		WaitIndexed(t, s)
		hits, next, err := s.Search(ctx, u.ID, MustQuery(t, q), "", 50)
		if err != nil || next != "" {
			t.Fatalf("Search(%s, %q) = next %q, %v", u.Name, q, next, err)
		}
		var ids []string
		for _, h := range hits {
			if h.Room.ID != h.Message.RoomID {
				t.Errorf("Search hit room %s, message of room %s", h.Room.ID, h.Message.RoomID)
			}
			ids = append(ids, h.Message.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		q    string
		want []int64
	}{
		{"fox", []int64{2, 1}},          // newest first; "fox-like" holds the word fox
		{"FOX quick", []int64{1}},       // words ANDed, case folded
		{"quick dogs", nil},             // no message holds both
		{"fo", nil},                     // whole words only
		{"여러분", []int64{3}},             // Hangul words
		{`fox" OR "cats`, nil},          // quotes are separators and "or" a word: no message holds it
		{"jumps)) AND (NOT* ^fox", nil}, // FTS5 and tsquery syntax means nothing: "and", "not" are words
		{`"fox"* -cats`, []int64{2}},    // fox AND cats
		{"fox:* & !dogs | x", nil},      // "x" is a word no message holds
	} {
		got := inRoom(general, tc.q, 0)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SearchRoom(general, %q) = seqs %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := inRoom(general, "fox", 2); !slices.Equal(got, []int64{1}) {
		t.Errorf("SearchRoom(general, fox, before 2) = %v, want [1]", got)
	}
	if got := everywhere(alice, "fox"); !slices.Equal(got, []string{d1.ID, s1.ID, g2.ID, g1.ID}) {
		t.Errorf("Search(alice, fox) = %v, want the direct, secret and two general messages, newest first", got)
	}
	if got := everywhere(bob, "fox"); !slices.Equal(got, []string{d1.ID, g2.ID, g1.ID}) {
		t.Errorf("Search(bob, fox) = %v, want no message of the secret room", got)
	}

	// An edit reindexes: the old words stop matching, the new ones match.
	MustEdit(t, s, general, alice, g1.Seq, "a slow green turtle")
	if got := inRoom(general, "quick", 0); len(got) != 0 {
		t.Errorf("SearchRoom(quick) after the edit = %v, want none", got)
	}
	if got := inRoom(general, "turtle", 0); !slices.Equal(got, []int64{1}) {
		t.Errorf("SearchRoom(turtle) after the edit = %v, want [1]", got)
	}
	WaitIndexed(t, s)
	hits, _, err := s.Search(ctx, bob.ID, MustQuery(t, "turtle"), "", 10)
	if err != nil || len(hits) != 1 || hits[0].Message.Body != "a slow green turtle" || hits[0].Message.EditedAt == nil ||
		hits[0].Room.LastChange != 1 {
		t.Errorf("Search(bob, turtle) = %+v, %v; want the edited message and its room", hits, err)
	}
	// A deletion unindexes.
	MustDelete(t, s, general, bob, g2.Seq)
	if got := inRoom(general, "cats", 0); len(got) != 0 {
		t.Errorf("SearchRoom(cats) after the delete = %v, want none", got)
	}
	if got := everywhere(alice, "fox"); !slices.Equal(got, []string{d1.ID, s1.ID}) {
		t.Errorf("Search(alice, fox) after edit and delete = %v, want the direct and secret messages", got)
	}
	// A room left is not searched any more.
	if _, err := s.Leave(ctx, secret.ID, alice.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	if got := everywhere(alice, "fox"); !slices.Equal(got, []string{d1.ID}) {
		t.Errorf("Search(alice, fox) after leaving secret = %v, want the direct message only", got)
	}
	WaitIndexed(t, s)
	if _, err := s.SearchRoom(ctx, "nope", MustQuery(t, "fox"), 0, 10); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("SearchRoom(unknown room) error = %v, want not_found", err)
	}
	WaitIndexed(t, s)
	if _, _, err := s.Search(ctx, alice.ID, MustQuery(t, "fox"), "garbage", 10); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("Search(bad cursor) error = %v, want invalid", err)
	}
}

// testSearchPaging: a search over several rooms pages newest first with
// its cursor, each hit once.
func testSearchPaging(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	u := MustCreateUser(t, s, "u")
	rooms := []parley.Room{MustCreateRoom(t, s, u, "a", 0), MustCreateRoom(t, s, u, "b", 0), MustCreateRoom(t, s, u, "c", 0)}
	var want []string
	for i := range 11 {
		m := MustSend(t, s, rooms[i%3], u, fmt.Sprintf("needle number %d", i))
		MustSend(t, s, rooms[(i+1)%3], u, "hay")
		want = append(want, m.ID)
	}
	slices.Reverse(want)
	var got []string
	cursor := ""
	for page := 0; page < 10; page++ {
		WaitIndexed(t, s)
		hits, next, err := s.Search(ctx, u.ID, MustQuery(t, "needle"), cursor, 4)
		if err != nil {
			t.Fatalf("Search(cursor %q) error = %v", cursor, err)
		}
		if len(hits) > 4 {
			t.Errorf("Search page of %d hits, want at most 4", len(hits))
		}
		for _, h := range hits {
			got = append(got, h.Message.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Errorf("Search pages = %v, want %v (newest first, each once)", got, want)
	}
	for _, r := range rooms {
		WaitIndexed(t, s)
		msgs, err := s.SearchRoom(ctx, r.ID, MustQuery(t, "needle"), 0, 2)
		if err != nil || len(msgs) != 2 || msgs[0].Seq <= msgs[1].Seq {
			t.Errorf("SearchRoom(%s, limit 2) = %v, %v; want two, newest first", r.Title, seqsOf(msgs), err)
		}
	}
}

// searchIDs runs a search over u's rooms, following its cursor to the end
// in pages of limit, and returns the message ids found, in order.
func searchIDs(t *testing.T, s parley.Store, u parley.User, q string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for page := 0; page < 1000; page++ {
		WaitIndexed(t, s)
		hits, next, err := s.Search(context.Background(), u.ID, MustQuery(t, q), cursor, limit)
		if err != nil {
			t.Fatalf("Search(%s, %q, cursor %q) error = %v", u.Name, q, cursor, err)
		}
		if len(hits) > limit {
			t.Errorf("Search(%s, %q) page of %d hits, want at most %d", u.Name, q, len(hits), limit)
		}
		for _, h := range hits {
			if h.Room.ID != h.Message.RoomID {
				t.Errorf("Search hit room %s, message of room %s", h.Room.ID, h.Message.RoomID)
			}
			ids = append(ids, h.Message.ID)
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
	t.Fatalf("Search(%s, %q) did not end", u.Name, q)
	return nil
}

// testSearchRooms: the same word in two rooms of the caller (one of them
// direct) and in one they left and one they never joined: only the
// caller's rooms match, with every word of the query in the same message,
// and pages over the rooms keep the order of the whole.
func testSearchRooms(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	a := MustCreateRoom(t, s, alice, "a", 0)
	left := MustCreateRoom(t, s, bob, "left", 0)
	MustJoin(t, s, left, alice)
	never := MustCreateRoom(t, s, bob, "never", 0)
	direct, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: alice.ID, PeerID: bob.ID})
	if err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	var want, wantBoth []string
	for i := range 9 {
		r, u := a, alice
		switch i % 3 {
		case 1:
			r, u = direct, bob
		case 2:
			r, u = left, bob
		}
		m := MustSend(t, s, r, u, fmt.Sprintf("shared word %d", i))
		MustSend(t, s, never, bob, "shared word in a room alice never joined")
		// "apple" in one room and "pear" in another: no message holds both.
		MustSend(t, s, r, u, "apple")
		if r.ID != left.ID {
			want = append(want, m.ID)
		}
		if i%3 == 0 {
			wantBoth = append(wantBoth, MustSend(t, s, r, u, "pear and apple").ID)
		} else {
			MustSend(t, s, r, u, "pear")
		}
	}
	if _, err := s.Leave(ctx, left.ID, alice.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	slices.Reverse(want)
	slices.Reverse(wantBoth)
	for _, limit := range []int{1, 2, 5, 50} {
		if got := searchIDs(t, s, alice, "shared", limit); !slices.Equal(got, want) {
			t.Errorf("Search(alice, shared, pages of %d) = %v, want %v (rooms a and direct, newest first)", limit, got, want)
		}
		if got := searchIDs(t, s, alice, "word shared", limit); !slices.Equal(got, want) {
			t.Errorf("Search(alice, word shared, pages of %d) = %v, want %v", limit, got, want)
		}
	}
	if got := searchIDs(t, s, alice, "apple pear", 2); !slices.Equal(got, wantBoth) {
		t.Errorf("Search(alice, apple pear) = %v, want %v: only messages holding both words", got, wantBoth)
	}
	if got := searchIDs(t, s, bob, "never", 10); len(got) != 9 {
		t.Errorf("Search(bob, never) = %d hits, want 9", len(got))
	}
	if got := searchIDs(t, s, alice, "never", 10); len(got) != 0 {
		t.Errorf("Search(alice, never) = %v, want none: alice is not in that room", got)
	}
}

// testSearchRoomNumbers: in rooms 1 to 13 (in creation order, all of the
// same user), no message of room 12 is found by a word it does not hold
// that, glued to another room's number in front or behind, spells the
// same characters as one it holds glued to 12 ("1"+"2abc" and "12"+"abc",
// "abc1"+"2" and "abc"+"12"); words of digits only match as words.
func testSearchRoomNumbers(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	var rooms []parley.Room
	for i := 1; i <= 13; i++ {
		rooms = append(rooms, MustCreateRoom(t, s, alice, fmt.Sprint("room ", i), 0))
	}
	r1, r2, r12 := rooms[0], rooms[1], rooms[11]
	twelve := MustSend(t, s, r12, alice, "abc 024 2 x1")
	MustSend(t, s, r1, alice, "hello")
	MustSend(t, s, r2, alice, "hello")
	year := MustSend(t, s, rooms[2], alice, "meet in 2024, room 101")
	for _, q := range []string{"2abc", "abc1", "abc2", "1abc", "1024", "x11", "x112", "12", "22", "21"} {
		for _, r := range rooms {
			WaitIndexed(t, s)
			msgs, err := s.SearchRoom(ctx, r.ID, MustQuery(t, q), 0, 10)
			if err != nil || len(msgs) != 0 {
				t.Errorf("SearchRoom(%s, %q) = %v, %v; want none", r.Title, q, seqsOf(msgs), err)
			}
		}
		if got := searchIDs(t, s, alice, q, 10); len(got) != 0 {
			t.Errorf("Search(alice, %q) = %v, want none (room 12's message is %s)", q, got, twelve.ID)
		}
	}
	for _, q := range []string{"2024", "101 ROOM", "2024 meet"} {
		if got := searchIDs(t, s, alice, q, 10); !slices.Equal(got, []string{year.ID}) {
			t.Errorf("Search(alice, %q) = %v, want [%s]", q, got, year.ID)
		}
	}
	for _, q := range []string{"024", "2", "abc", "x1", "abc 2"} {
		if got := searchIDs(t, s, alice, q, 10); !slices.Equal(got, []string{twelve.ID}) {
			t.Errorf("Search(alice, %q) = %v, want [%s]", q, got, twelve.ID)
		}
		WaitIndexed(t, s)
		msgs, err := s.SearchRoom(ctx, r12.ID, MustQuery(t, q), 0, 10)
		if err != nil || !slices.Equal(seqsOf(msgs), []int64{1}) {
			t.Errorf("SearchRoom(room 12, %q) = %v, %v; want [1]", q, seqsOf(msgs), err)
		}
	}
	if got := searchIDs(t, s, alice, "20", 10); len(got) != 0 {
		t.Errorf("Search(alice, 20) = %v, want none (whole words only)", got)
	}
}

// testSearchManyRooms: a user in many rooms (more than a store may put in
// one index query) finds every match in them, newest first, paged, after
// edits and deletions, and none of a room they left.
func testSearchManyRooms(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	u, v, other := MustCreateUser(t, s, "u"), MustCreateUser(t, s, "v"), MustCreateUser(t, s, "other")
	const n, nv = 300, 200 // u is in n rooms, v in the first nv of them
	rooms := make([]parley.Room, n)
	for i := range rooms {
		rooms[i] = MustCreateRoom(t, s, other, fmt.Sprint("room ", i), 0)
		MustJoin(t, s, rooms[i], u)
		if i < nv {
			MustJoin(t, s, rooms[i], v)
		}
	}
	outside := MustCreateRoom(t, s, other, "outside", 0)
	MustSend(t, s, outside, other, "needle outside")
	var want, wantV []string
	for i, r := range rooms {
		MustSend(t, s, r, other, "hay")
		if i%7 == 0 {
			id := MustSend(t, s, r, other, fmt.Sprintf("needle %d", i)).ID
			want = append(want, id)
			if i < nv {
				wantV = append(wantV, id)
			}
		}
	}
	// The first room's needle is edited away, the second's deleted, and
	// the third's room left.
	MustEdit(t, s, rooms[0], other, 2, "hay again")
	MustDelete(t, s, rooms[7], other, 2)
	if _, err := s.Leave(ctx, rooms[14].ID, u.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	want, wantV = want[3:], wantV[2:]
	slices.Reverse(want)
	slices.Reverse(wantV)
	if got := searchIDs(t, s, u, "needle", 7); !slices.Equal(got, want) {
		t.Errorf("Search(u in %d rooms, needle) = %d hits %v, want %d %v", n, len(got), got, len(want), want)
	}
	for _, q := range []string{"needle", "NEEDLE"} {
		if got := searchIDs(t, s, v, q, 7); !slices.Equal(got, wantV) {
			t.Errorf("Search(v in %d rooms, %q) = %d hits %v, want %d %v", nv, q, len(got), got, len(wantV), wantV)
		}
	}
	if got := searchIDs(t, s, v, "needle 21", 7); !slices.Equal(got, wantV[len(wantV)-2:len(wantV)-1]) {
		t.Errorf("Search(v, needle 21) = %v, want [%s]", got, wantV[len(wantV)-2])
	}
	if got := searchIDs(t, s, u, "hay", 100); len(got) != n-1+1 {
		t.Errorf("Search(u, hay) = %d hits, want %d (one a room but the left one, and the edit)", len(got), n)
	}
}

// WaitIndexed waits until s's search index holds every message committed
// so far (parley.WaitIndexed), failing tb after a minute. Tests call it
// before a search that must see what they just wrote: search may trail a
// commit, and they synchronise rather than sleep.
func WaitIndexed(tb testing.TB, s any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := parley.WaitIndexed(ctx, s); err != nil {
		tb.Fatalf("WaitIndexed: %v", err)
	}
}
