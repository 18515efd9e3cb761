package cache

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"parley"
)

// TestRoomIndexExact: a room's index gives back each message exactly as it
// was applied (deep equality, time.Time's location and monotonic reading
// included), for messages its records hold (UTC and Local times) and for
// those they cannot (other locations, a monotonic reading, the zero time,
// long strings, another room's id), through edits and deletions that
// compact its arena and pool; strings handed out before a compaction are
// unchanged after it; and the index's words are the messages'.
func TestRoomIndexExact(t *testing.T) {
	var d dictionary
	ix := newRoomIndex(&d, "room")
	base := time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)
	zone := time.FixedZone("X", 3600)
	var want []parley.Message
	for i := range 300 {
		m := parley.Message{
			ID: fmt.Sprint("m", i), RoomID: "room", Seq: int64(i + 1), SenderID: "u1", SenderName: "Ann",
			Body: fmt.Sprintf("w%d common w%d", i%7, i%13), ClientID: fmt.Sprint("c", i),
			SentAt: base.Add(time.Duration(i) * time.Millisecond), Change: int64(i + 1),
		}
		switch i % 10 {
		case 1:
			m.SentAt = m.SentAt.Local()
		case 2:
			m.SentAt = time.Now() // monotonic reading
		case 3:
			m.SentAt = m.SentAt.In(zone)
		case 4:
			m.SentAt = time.Time{}
		case 5:
			m.ClientID = strings.Repeat("c", 70000)
		case 6:
			m.RoomID = "other"
		case 7:
			m.Body = strings.Repeat("long ", 20000)
		}
		ix.apply(&parley.Event{Kind: parley.EventMessage, Message: m})
		want = append(want, m)
		if i%50 == 0 {
			ix.flush() // later edits find some messages filed, some not
		}
	}
	held := ix.message(9) // its strings share the arena
	heldCopy := strings.Clone(held.Body)
	change := int64(1000)
	for round := range 20 {
		for i := range want {
			if (i+round)%3 != 0 {
				continue
			}
			m := want[i]
			change++
			m.Change = change
			at := base.Add(time.Duration(change) * time.Second)
			switch {
			case round == 19 && i%2 == 0:
				m.Body, m.DeletedAt = "", &at
			case i%10 == 8:
				loc := at.In(zone)
				m.Body, m.EditedAt = "edited in a zone", &loc
			default:
				m.Body, m.EditedAt = fmt.Sprintf("round%d w%d", round, i%5), &at
			}
			if m.Deleted() != want[i].Deleted() && want[i].Deleted() {
				continue
			}
			kind := parley.EventEdited
			if m.Deleted() {
				kind = parley.EventDeleted
			}
			ix.apply(&parley.Event{Kind: kind, Message: m})
			want[i] = m
		}
	}
	ix.flush()
	for i := range want {
		if got := ix.message(uint32(i + 1)); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("message %d = %#v, want %#v", i+1, got, want[i])
		}
	}
	if held.Body != heldCopy {
		t.Errorf("a string handed out changed: %q, was %q", held.Body, heldCopy)
	}
	if ix.dead*2 >= int64(len(ix.arena)) && ix.dead >= 4096 || ix.poolDead*2 >= int64(len(ix.pool)) && ix.poolDead >= 1024 {
		t.Errorf("not compacted: arena %d dead of %d, pool %d of %d", ix.dead, len(ix.arena), ix.poolDead, len(ix.pool))
	}
	words := map[string][]uint32{}
	var buf []byte
	for _, m := range want {
		if !m.Deleted() {
			buf = parley.EachWord(m.Body, buf, func(w []byte) {
				if p := words[string(w)]; len(p) == 0 || p[len(p)-1] != uint32(m.Seq) {
					words[string(w)] = append(p, uint32(m.Seq))
				}
			})
		}
	}
	if len(words) != len(ix.terms) || len(words) != d.size() {
		t.Fatalf("%d words filed, %d in the dictionary, want %d", len(ix.terms), d.size(), len(words))
	}
	for w, p := range words {
		if got := ix.postings(d.ids[w]); !reflect.DeepEqual(got, p) {
			t.Fatalf("%q filed under %v, want %v", w, got, p)
		}
	}
	ix.release()
	if n := d.size(); n != 0 || d.bytes.Load() != 0 {
		t.Errorf("released: %d words, %d bytes in the dictionary, want none", n, d.bytes.Load())
	}
}
