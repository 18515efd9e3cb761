package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"parley"
)

// testSeqContiguity: 1,000 concurrent senders in one room get the seqs
// 1..1000, each once, and the history reads them back in order.
func testSeqContiguity(t *testing.T, newStore NewStoreFunc) {
	const n, nSenders = 1000, 20
	s := newStore(t, nil)
	ctx := context.Background()
	senders := MustCreateUsers(t, s, "sender", nSenders)
	room := MustCreateRoom(t, s, senders[0], "seq", 0)
	for _, u := range senders[1:] {
		MustJoin(t, s, room, u)
	}

	seqs := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			u := senders[i%nSenders]
			m, created, err := s.Send(ctx, parley.NewMessage{
				RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprintf("m%d", i),
			})
			if err != nil || !created {
				t.Errorf("Send(m%d) = %v, %v, want created", i, created, err)
				return
			}
			if m.Body != fmt.Sprintf("m%d", i) || m.RoomID != room.ID || m.SenderID != u.ID {
				t.Errorf("Send(m%d) = %+v, want that message", i, m)
			}
			seqs[i] = m.Seq
		})
	}
	wg.Wait()
	slices.Sort(seqs)
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("sorted seqs[%d] = %d, want %d (a hole or a duplicate)", i, seq, i+1)
		}
	}
	if got := MustRoom(t, s, room.ID); got.LastSeq != n {
		t.Errorf("Room().LastSeq = %d, want %d", got.LastSeq, n)
	}

	// Newest first, page by page.
	var back []parley.Message
	for before := int64(0); ; {
		page, err := s.Messages(ctx, room.ID, parley.Page{Before: before, After: -1, Limit: parley.MaxPageLimit})
		if err != nil {
			t.Fatalf("Messages(before %d) error = %v", before, err)
		}
		if len(page) == 0 {
			break
		}
		back = append(back, page...)
		before = page[len(page)-1].Seq
	}
	bodies := map[string]bool{}
	for i, m := range back {
		if want := int64(n - i); m.Seq != want {
			t.Fatalf("history[%d].Seq = %d, want %d", i, m.Seq, want)
		}
		bodies[m.Body] = true
	}
	if len(back) != n || len(bodies) != n {
		t.Errorf("history has %d messages with %d distinct bodies, want %d", len(back), len(bodies), n)
	}
}

// testIdempotentRepeat: a repeated (room, sender, client_id) returns the
// original message and stores nothing.
func testIdempotentRepeat(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	a, b := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	r1 := MustCreateRoom(t, s, a, "one", 0)
	r2 := MustCreateRoom(t, s, a, "two", 0)
	MustJoin(t, s, r1, b)
	send := func(r parley.Room, u parley.User, clientID, body string) (parley.Message, bool) {
		t.Helper()
		m, created, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID})
		if err != nil {
			t.Fatalf("Send(%s, %s, %q) error = %v", r.Title, u.Name, clientID, err)
		}
		return m, created
	}

	first, created := send(r1, a, "c1", "hello")
	if !created || first.Seq != 1 || first.ClientID != "c1" {
		t.Errorf("Send(c1) = %+v, %v, want seq 1 created", first, created)
	}
	again, created := send(r1, a, "c1", "hello again")
	if created || again.ID != first.ID || again.Seq != first.Seq || again.Body != "hello" {
		t.Errorf("repeated Send(c1) = %+v, %v, want the original %+v, false", again, created, first)
	}
	if got := MustRoom(t, s, r1.ID).LastSeq; got != 1 {
		t.Errorf("LastSeq after a repeat = %d, want 1", got)
	}
	if m, created := send(r1, b, "c1", "bob's"); !created || m.Seq != 2 {
		t.Errorf("Send(c1) by another sender = seq %d, %v, want seq 2 created", m.Seq, created)
	}
	if m, created := send(r2, a, "c1", "other room"); !created || m.Seq != 1 {
		t.Errorf("Send(c1) in another room = seq %d, %v, want seq 1 created", m.Seq, created)
	}
	m1, c1 := send(r1, a, "", "no key")
	m2, c2 := send(r1, a, "", "no key")
	if !c1 || !c2 || m1.ID == m2.ID {
		t.Errorf("two Sends without client_id = %s %v, %s %v, want two messages", m1.ID, c1, m2.ID, c2)
	}

	// Concurrent repeats create exactly one message.
	const n = 50
	before := MustRoom(t, s, r1.ID).LastSeq
	ids := make([]string, n)
	var createdN sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for i := range n {
		createdN.Go(func() {
			m, created, err := s.Send(ctx, parley.NewMessage{RoomID: r1.ID, SenderID: a.ID, SenderName: a.Name, Body: "race", ClientID: "c-race"})
			if err != nil {
				t.Errorf("concurrent Send(c-race) error = %v", err)
				return
			}
			ids[i] = m.ID
			if created {
				mu.Lock()
				made++
				mu.Unlock()
			}
		})
	}
	createdN.Wait()
	if made != 1 {
		t.Errorf("%d concurrent Send(c-race) created %d messages, want 1", n, made)
	}
	for i, id := range ids {
		if id != ids[0] {
			t.Errorf("concurrent Send(c-race) #%d = %s, want %s", i, id, ids[0])
			break
		}
	}
	if got := MustRoom(t, s, r1.ID).LastSeq; got != before+1 {
		t.Errorf("LastSeq after concurrent repeats = %d, want %d", got, before+1)
	}
}

// testHistoryPaging: pages in both directions, without gap or overlap.
func testHistoryPaging(t *testing.T, newStore NewStoreFunc) {
	const n = 25
	s := newStore(t, nil)
	ctx := context.Background()
	u := MustCreateUser(t, s, "writer")
	room := MustCreateRoom(t, s, u, "history", 0)
	sent := make([]parley.Message, n+1) // by seq
	for i := 1; i <= n; i++ {
		sent[i] = MustSend(t, s, room, u, fmt.Sprintf("message %d", i))
	}

	seqsOf := func(ms []parley.Message) []int64 {
		var seqs []int64
		for _, m := range ms {
			seqs = append(seqs, m.Seq)
		}
		return seqs
	}
	span := func(from, to int64) []int64 { // from..to, either direction
		var seqs []int64
		for i := from; ; {
			seqs = append(seqs, i)
			if i == to {
				return seqs
			}
			if from < to {
				i++
			} else {
				i--
			}
		}
	}
	tests := []struct {
		name string
		page parley.Page
		want []int64
	}{
		{"newest", parley.Newest(10), span(25, 16)},
		{"before 16", parley.Page{Before: 16, After: -1, Limit: 10}, span(15, 6)},
		{"before 6", parley.Page{Before: 6, After: -1, Limit: 10}, span(5, 1)},
		{"before 1", parley.Page{Before: 1, After: -1, Limit: 10}, nil},
		{"newest all", parley.Newest(100), span(25, 1)},
		{"after 0", parley.Page{After: 0, Limit: 10}, span(1, 10)},
		{"after 10", parley.Page{After: 10, Limit: 10}, span(11, 20)},
		{"after 20", parley.Page{After: 20, Limit: 10}, span(21, 25)},
		{"after 25", parley.Page{After: 25, Limit: 10}, nil},
		{"limit 1", parley.Page{After: 3, Limit: 1}, []int64{4}},
	}
	for _, tt := range tests {
		got, err := s.Messages(ctx, room.ID, tt.page)
		if err != nil {
			t.Errorf("Messages(%s) error = %v", tt.name, err)
			continue
		}
		if !slices.Equal(seqsOf(got), tt.want) {
			t.Errorf("Messages(%s) seqs = %v, want %v", tt.name, seqsOf(got), tt.want)
		}
		for _, m := range got {
			w := sent[m.Seq]
			if m.ID != w.ID || m.Body != w.Body || m.SenderID != u.ID || m.SenderName != u.Name ||
				m.RoomID != room.ID || !m.SentAt.Equal(w.SentAt) {
				t.Errorf("Messages(%s) has %+v, want %+v", tt.name, m, w)
			}
		}
	}

	// A limit over the maximum is clamped or refused, never exceeded.
	got, err := s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: parley.MaxPageLimit + 1})
	if err != nil {
		wantCode(t, "Messages(limit max+1)", err, parley.CodeInvalid)
	} else if len(got) > parley.MaxPageLimit {
		t.Errorf("Messages(limit max+1) returned %d, want at most %d", len(got), parley.MaxPageLimit)
	}

	// Walking by 7 in both directions sees each message once.
	var fwd, back []int64
	for after := int64(0); ; {
		page, err := s.Messages(ctx, room.ID, parley.Page{After: after, Limit: 7})
		if err != nil || len(page) > 7 {
			t.Fatalf("Messages(after %d, 7) = %d messages, %v", after, len(page), err)
		}
		if len(page) == 0 {
			break
		}
		fwd = append(fwd, seqsOf(page)...)
		after = page[len(page)-1].Seq
	}
	for before := int64(0); ; {
		page, err := s.Messages(ctx, room.ID, parley.Page{Before: before, After: -1, Limit: 7})
		if err != nil || len(page) > 7 {
			t.Fatalf("Messages(before %d, 7) = %d messages, %v", before, len(page), err)
		}
		if len(page) == 0 {
			break
		}
		back = append(back, seqsOf(page)...)
		before = page[len(page)-1].Seq
	}
	if !slices.Equal(fwd, span(1, n)) || !slices.Equal(back, span(n, 1)) {
		t.Errorf("walks by 7 = %v and %v, want 1..%d and %d..1", fwd, back, n, n)
	}

	// An empty room has an empty history.
	empty := MustCreateRoom(t, s, u, "empty", 0)
	if got, err := s.Messages(ctx, empty.ID, parley.Newest(10)); err != nil || len(got) != 0 {
		t.Errorf("Messages(empty room) = %d messages, %v, want 0, nil", len(got), err)
	}
}

// testReadPosition: MarkRead only moves forward and is clamped to the
// room's last seq.
func testReadPosition(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	owner, reader, stranger := MustCreateUser(t, s, "owner"), MustCreateUser(t, s, "reader"), MustCreateUser(t, s, "stranger")
	room := MustCreateRoom(t, s, owner, "reads", 0)
	MustJoin(t, s, room, reader)
	for i := range 5 {
		MustSend(t, s, room, owner, fmt.Sprintf("m%d", i))
	}
	tests := []struct {
		seq, want int64
	}{
		{3, 3},
		{2, 3},   // backwards: no change
		{3, 3},   // same: no change
		{100, 5}, // clamped to last_seq
		{-1, 5},
	}
	for _, tt := range tests {
		m, err := s.MarkRead(ctx, room.ID, reader.ID, tt.seq)
		if err != nil || m.ReadSeq != tt.want || m.UserID != reader.ID || m.RoomID != room.ID {
			t.Errorf("MarkRead(%d) = %+v, %v, want read_seq %d", tt.seq, m, err, tt.want)
		}
	}
	if m, err := s.Member(ctx, room.ID, reader.ID); err != nil || m.ReadSeq != 5 {
		t.Errorf("Member() = %+v, %v, want read_seq 5", m, err)
	}
	if m, err := s.Member(ctx, room.ID, owner.ID); err != nil || m.ReadSeq != 5 {
		t.Errorf("Member(sender) = %+v, %v, want read_seq 5 (own sends are read)", m, err)
	}
	_, err := s.MarkRead(ctx, room.ID, stranger.ID, 1)
	wantCode(t, "MarkRead(non-member)", err, parley.CodeNotFound)
	_, err = s.MarkRead(ctx, "no-such-room", reader.ID, 1)
	wantCode(t, "MarkRead(unknown room)", err, parley.CodeNotFound)
	_, err = s.Member(ctx, room.ID, stranger.ID)
	wantCode(t, "Member(non-member)", err, parley.CodeNotFound)
}
