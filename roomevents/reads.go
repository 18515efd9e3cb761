package roomevents

// Read events: the read positions of a room coalesced into one event per
// ReadEvery (a read window), in rooms of at most ReadMaxMembers members.

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"parley"
)

// readWindow is one room's read coalescing state.
type readWindow struct {
	last    time.Time     // when its last read event went out
	pending []parley.Read // positions moved since, in order, one per user
	forward []parley.Read // of pending, the PUT reads committed here: for OnReads
	armed   bool          // a flush is scheduled
}

// read adds moved read positions to the room's window: the first after a
// quiet ReadEvery goes out at once, the rest wait for the window's end
// and go out together (read events are coalesced per room). members is
// the room's member count when the event knows it (0: look it up).
// forward marks positions the other nodes cannot know of but from this
// one (a PUT read committed here): they go to OnReads too.
func (e *Events) read(roomID string, members int, reads []parley.Read, forward bool) {
	if members > e.cfg.ReadMaxMembers {
		return
	}
	forward = forward && e.cfg.OnReads != nil
	if !forward && !e.hasSubs() {
		return // nobody here to tell, and nobody elsewhere
	}
	w := e.reads[roomID]
	if w == nil {
		w = &readWindow{}
		e.reads[roomID] = w
	}
	w.pending = mergeReads(w.pending, reads)
	if forward {
		w.forward = mergeReads(w.forward, reads)
	}
	if w.armed {
		return
	}
	now := e.cfg.Now()
	if wait := w.last.Add(e.cfg.ReadEvery).Sub(now); wait > 0 {
		w.armed = true
		e.cfg.AfterFunc(wait, func() { e.enqueue(evItem{kind: itemFlush, room: roomID}, false) })
		return
	}
	e.flushReads(roomID)
}

// mergeReads adds reads to list: one entry per user, at its highest seq,
// in the order the users last moved.
func mergeReads(list, reads []parley.Read) []parley.Read {
	for _, r := range reads {
		if i := slices.IndexFunc(list, func(p parley.Read) bool { return p.UserID == r.UserID }); i >= 0 {
			r.Seq = max(list[i].Seq, r.Seq)
			list = slices.Delete(list, i, i+1)
		}
		list = append(list, r)
	}
	return list
}

// flushReads sends the room's pending read positions as one read event.
func (e *Events) flushReads(roomID string) {
	w := e.reads[roomID]
	if w == nil {
		return
	}
	w.armed = false
	if len(w.pending) == 0 {
		return
	}
	now := e.cfg.Now()
	reads, forward := w.pending, w.forward
	w.pending, w.forward, w.last = nil, nil, now
	if len(e.reads) >= e.readsAt {
		for id, o := range e.reads {
			if !o.armed && len(o.pending) == 0 && now.Sub(o.last) >= e.cfg.ReadEvery {
				delete(e.reads, id)
			}
		}
		e.readsAt = max(1024, 2*len(e.reads))
	}
	if len(forward) > 0 {
		e.cfg.OnReads(roomID, forward)
	}
	if !e.hasSubs() {
		return
	}
	members, err := e.members(roomID)
	if err != nil || len(members) > e.cfg.ReadMaxMembers {
		return
	}
	newest := reads[len(reads)-1]
	body, _ := json.Marshal(struct {
		Room  string        `json:"room"`
		Reads []parley.Read `json:"reads"`
	}{roomID, reads})
	re := &RoomEvent{ID: parley.NewID(), Kind: KindRead, RoomID: roomID, Headers: [][2]string{
		{"user", newest.UserID}, {"seq", strconv.FormatInt(newest.Seq, 10)},
	}, Body: body}
	e.toMembers(re, members, "")
}
