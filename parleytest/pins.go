package parleytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"parley"
)

// testPins runs the cases of pinned messages (design §3b).
func testPins(t *testing.T, newStore NewStoreFunc) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, newStore NewStoreFunc)
	}{
		{"PinUnpin", testPinUnpin},
		{"Deleted", testPinDeleted},
		{"Bound", testPinBound},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
}

// MustPin pins (add) or unpins message seq of room r as u.
func MustPin(t testing.TB, s parley.Store, r parley.Room, u parley.User, seq int64, add bool) (parley.Message, bool) {
	t.Helper()
	m, changed, err := s.Pin(context.Background(), parley.PinMessage{RoomID: r.ID, Seq: seq, UserID: u.ID, Add: add})
	if err != nil {
		t.Fatalf("Pin(%d, add %v) as %s error = %v", seq, add, u.Name, err)
	}
	return m, changed
}

// pinSeqs renders a pin list as its seqs.
func pinSeqs(msgs []parley.Message) []int64 {
	var seqs []int64
	for _, m := range msgs {
		seqs = append(seqs, m.Seq)
	}
	return seqs
}

// testPinUnpin: pins and unpins, their repeats (nothing stored, no
// event), the pin on every read path, the list newest pin first with its
// cursor, the change numbers and events; an edit keeps the pin.
func testPinUnpin(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "pins", 0)
	MustJoin(t, s, room, bob)
	for i := range 3 {
		MustSend(t, s, room, bob, fmt.Sprint("message ", i+1))
	}
	if _, err := s.Messages(ctx, room.ID, parley.Newest(10)); err != nil { // warm what a cache keeps
		t.Fatal(err)
	}
	if pins, err := s.Pins(ctx, room.ID, 0, 10); err != nil || len(pins) != 0 {
		t.Errorf("Pins(no pins) = %v, %v; want none", pinSeqs(pins), err)
	}
	mark := rec.Len()

	m, changed := MustPin(t, s, room, alice, 2, true)
	if !changed || m.Change != 1 || m.Pinned == nil || m.Pinned.By != alice.ID || m.Pinned.Change != 1 || m.Pinned.At.IsZero() {
		t.Fatalf("Pin(2) = changed %v, change %d, pinned %+v; want changed at change 1, pinned by alice", changed, m.Change, m.Pinned)
	}
	at := m.Pinned.At
	if m, changed = MustPin(t, s, room, alice, 2, true); changed || m.Change != 1 || m.Pinned == nil {
		t.Errorf("repeated pin = changed %v, change %d, pinned %+v; want nothing changed", changed, m.Change, m.Pinned)
	}
	if got := messageAt(t, s, room, 2); got.Pinned == nil || got.Pinned.By != alice.ID || !got.Pinned.At.Equal(at) || got.Pinned.Change != 1 {
		t.Errorf("history page pinned = %+v, want alice's pin at %v, change 1", got.Pinned, at)
	}
	if page, _ := s.Messages(ctx, room.ID, parley.Newest(10)); len(page) != 3 || page[1].Pinned == nil || page[0].Pinned != nil || page[2].Pinned != nil {
		t.Errorf("newest page = %+v, want only message 2 pinned", page)
	}
	MustPin(t, s, room, alice, 3, true)
	MustPin(t, s, room, alice, 1, true)
	pins, err := s.Pins(ctx, room.ID, 0, 10)
	if err != nil || !slices.Equal(pinSeqs(pins), []int64{1, 3, 2}) {
		t.Errorf("Pins() = %v, %v; want [1 3 2], newest pin first", pinSeqs(pins), err)
	}
	pins, err = s.Pins(ctx, room.ID, 0, 2)
	if err != nil || !slices.Equal(pinSeqs(pins), []int64{1, 3}) {
		t.Fatalf("Pins(limit 2) = %v, %v; want [1 3]", pinSeqs(pins), err)
	}
	if rest, err := s.Pins(ctx, room.ID, pins[1].Pinned.Change, 2); err != nil || !slices.Equal(pinSeqs(rest), []int64{2}) {
		t.Errorf("Pins(before %d) = %v, %v; want [2]", pins[1].Pinned.Change, pinSeqs(rest), err)
	}

	// An edit keeps the pin, and the list shows the message as it is now.
	if m := MustEdit(t, s, room, bob, 3, "edited"); m.Pinned == nil {
		t.Error("an edit lost the pin")
	}
	if pins, _ := s.Pins(ctx, room.ID, 0, 10); len(pins) != 3 || pins[1].Body != "edited" || pins[1].Pinned == nil {
		t.Errorf("Pins() after the edit = %+v, want message 3 edited and pinned", pins)
	}

	m, changed = MustPin(t, s, room, bob, 2, false)
	if !changed || m.Pinned != nil || m.Change != 5 {
		t.Errorf("Unpin(2) = changed %v, pinned %+v, change %d; want changed, unpinned, change 5", changed, m.Pinned, m.Change)
	}
	if _, changed = MustPin(t, s, room, bob, 2, false); changed {
		t.Error("repeated unpin changed something")
	}
	if got := messageAt(t, s, room, 2); got.Pinned != nil {
		t.Errorf("unpinned message read back pinned: %+v", got.Pinned)
	}
	if pins, _ := s.Pins(ctx, room.ID, 0, 10); !slices.Equal(pinSeqs(pins), []int64{1, 3}) {
		t.Errorf("Pins() after the unpin = %v, want [1 3]", pinSeqs(pins))
	}
	if r, _ := s.Room(ctx, room.ID); r.LastChange != 5 {
		t.Errorf("room last_change = %d, want 5", r.LastChange)
	}
	changedMsgs, err := s.Changed(ctx, room.ID, 3, 10)
	if err != nil || len(changedMsgs) != 2 || changedMsgs[0].Seq != 3 || changedMsgs[1].Seq != 2 || changedMsgs[1].Pinned != nil {
		t.Errorf("Changed(3) = %+v, %v; want message 3 (edited) then 2 (unpinned)", changedMsgs, err)
	}
	_, _, err = s.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: 99, UserID: alice.ID, Add: true})
	wantCode(t, "Pin(unknown seq)", err, parley.CodeNotFound)
	_, _, err = s.Pin(ctx, parley.PinMessage{RoomID: "nope", Seq: 1, UserID: alice.ID, Add: true})
	wantCode(t, "Pin(unknown room)", err, parley.CodeNotFound)
	_, err = s.Pins(ctx, "nope", 0, 10)
	wantCode(t, "Pins(unknown room)", err, parley.CodeNotFound)

	var got []string
	for _, e := range rec.Events()[mark:] {
		if e.Kind != parley.EventPin {
			continue
		}
		got = append(got, fmt.Sprintf("%d %s %d", e.Message.Seq, e.Reason, e.Message.Change))
		if e.Room.LastChange != e.Message.Change {
			t.Errorf("pin event of change %d has the room at change %d", e.Message.Change, e.Room.LastChange)
		}
	}
	if want := []string{"2 pin 1", "3 pin 2", "1 pin 3", "2 unpin 5"}; !slices.Equal(got, want) {
		t.Errorf("pin events = %q, want %q", got, want)
	}
}

// testPinDeleted: a tombstone refuses a pin (CodeConflict), and deleting
// a pinned message unpins it.
func testPinDeleted(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	room := MustCreateRoom(t, s, alice, "gone", 0)
	MustSend(t, s, room, alice, "soon gone")
	MustSend(t, s, room, alice, "gone already")
	MustPin(t, s, room, alice, 1, true)
	if m := MustDelete(t, s, room, alice, 1); m.Pinned != nil {
		t.Errorf("tombstone pinned = %+v, want none", m.Pinned)
	}
	if m := messageAt(t, s, room, 1); m.Pinned != nil {
		t.Errorf("tombstone read back pinned: %+v", m.Pinned)
	}
	if pins, err := s.Pins(ctx, room.ID, 0, 10); err != nil || len(pins) != 0 {
		t.Errorf("Pins() after the deletion = %v, %v; want none", pinSeqs(pins), err)
	}
	MustDelete(t, s, room, alice, 2)
	_, _, err := s.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: 2, UserID: alice.ID, Add: true})
	wantCode(t, "Pin(tombstone)", err, parley.CodeConflict)
	_, _, err = s.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: 1, UserID: alice.ID, Add: false})
	wantCode(t, "Unpin(tombstone)", err, parley.CodeConflict)
	// The refusal of an unpin speaks of the unpin, not of a pin.
	if err == nil || !strings.Contains(err.Error(), "nothing to unpin") {
		t.Errorf("Unpin(tombstone) = %v, want an error saying there is nothing to unpin", err)
	}
}

// testPinBound: at most MaxPinsPerRoom pins in a room, even when more are
// asked for at once: a refused pin stores nothing and takes no change.
func testPinBound(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	room := MustCreateRoom(t, s, alice, "bound", 0)
	const extra = 5
	n := parley.MaxPinsPerRoom + extra
	for i := range n {
		MustSend(t, s, room, alice, fmt.Sprint("m", i))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // guards refused
	refused := 0
	for i := range n {
		wg.Go(func() {
			_, _, err := s.Pin(ctx, parley.PinMessage{RoomID: room.ID, Seq: int64(i + 1), UserID: alice.ID, Add: true})
			if err != nil {
				if parley.ErrorCode(err) != parley.CodeConflict {
					t.Errorf("Pin(%d) error = %v, want none or %s", i+1, err, parley.CodeConflict)
				}
				mu.Lock()
				refused++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if refused != extra {
		t.Errorf("%d pins refused, want %d", refused, extra)
	}
	pins, err := s.Pins(ctx, room.ID, 0, parley.MaxPageLimit)
	if err != nil || len(pins) != parley.MaxPinsPerRoom {
		t.Errorf("Pins() = %d pins, %v; want %d", len(pins), err, parley.MaxPinsPerRoom)
	}
	if r, _ := s.Room(ctx, room.ID); r.LastChange != int64(parley.MaxPinsPerRoom) {
		t.Errorf("last_change = %d, want %d: a refused pin takes no change", r.LastChange, parley.MaxPinsPerRoom)
	}
	// One unpin makes room for one pin.
	MustPin(t, s, room, alice, pins[0].Seq, false)
	var free int64
	for i := int64(1); i <= int64(n); i++ {
		if m := messageAt(t, s, room, i); m.Pinned == nil && i != pins[0].Seq {
			free = i
			break
		}
	}
	MustPin(t, s, room, alice, free, true)
}
