package roomevents

import (
	"encoding/json"
	"testing"
	"time"

	"parley"
)

func changeEv(room string, seq, change int64, deleted bool) parley.Event {
	m := parley.Message{ID: "m" + room, RoomID: room, Seq: seq, SenderID: "alice", Body: "v2", Change: change}
	kind := parley.EventEdited
	if deleted {
		at := time.Unix(1, 0).UTC()
		m.Body, m.DeletedAt, kind = "", &at, parley.EventDeleted
	}
	return parley.Event{Kind: kind, Room: parley.Room{ID: room, LastChange: change}, UserID: "alice", Message: m}
}

// TestEventsChanges: an edit and a deletion are edited and deleted events
// of the room (its subscribers and its members' personal queues), header
// change and seq, body the message in its new version.
func TestEventsChanges(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	room, all, other := &evRecorder{}, &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: room, UserID: "bob", RoomID: "r1"})
	env.ev.Subscribe(&Sub{To: all, UserID: "bob"})
	env.ev.Subscribe(&Sub{To: other, UserID: "carol"})
	env.ev.Apply([]parley.Event{changeEv("r1", 3, 1, false), changeEv("r1", 3, 2, true)})
	env.sync(t)
	for name, r := range map[string]*evRecorder{"room": room, "personal": all} {
		r.mu.Lock()
		got := r.got
		r.mu.Unlock()
		if len(got) != 2 || got[0].Kind != KindEdited || got[1].Kind != KindDeleted {
			t.Fatalf("%s subscription got %d events %v, want edited then deleted", name, len(got), r.kinds())
		}
		if got[0].Header("change") != "1" || got[1].Header("change") != "2" || got[0].Header("seq") != "3" || got[0].RoomID != "r1" {
			t.Fatalf("%s: headers %v then %v", name, got[0].Headers, got[1].Headers)
		}
		var m parley.Message
		if err := json.Unmarshal(got[0].Body, &m); err != nil || m.Body != "v2" || m.Change != 1 || m.Seq != 3 {
			t.Fatalf("%s: edited body %s (%v)", name, got[0].Body, err)
		}
		if err := json.Unmarshal(got[1].Body, &m); err != nil || m.Body != "" || m.DeletedAt == nil || m.Change != 2 {
			t.Fatalf("%s: deleted body %s (%v)", name, got[1].Body, err)
		}
	}
	if got := other.kinds(); len(got) != 0 {
		t.Fatalf("a non-member's personal queue got %v", got)
	}
}

// TestEventsStartAfter: a held subscription started after change 2 gets
// the held changes above 2 and none at or below, then live ones above 2
// only; other events pass.
func TestEventsStartAfter(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	r := &evRecorder{}
	s := &Sub{To: r, UserID: "bob", RoomID: "r1", Hold: true}
	env.ev.Subscribe(s)
	env.ev.Apply([]parley.Event{changeEv("r1", 1, 1, false), changeEv("r1", 1, 3, false),
		{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "r1"}, ActorID: "alice"}})
	env.sync(t)
	if got := r.kinds(); len(got) != 0 {
		t.Fatalf("held subscription got %v before Start", got)
	}
	env.ev.StartAfter(s, 2)
	env.ev.Apply([]parley.Event{changeEv("r1", 2, 2, false), changeEv("r1", 2, 4, true)})
	env.sync(t)
	r.mu.Lock()
	var changes []string
	for _, ev := range r.got {
		changes = append(changes, ev.Kind+":"+ev.Header("change"))
	}
	r.mu.Unlock()
	if want := []string{"edited:3", "member:", "deleted:4"}; !equal(changes, want) {
		t.Fatalf("got %v, want %v", changes, want)
	}
}
