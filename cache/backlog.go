package cache

import "parley"

// maxBacklog bounds the events a key keeps for its loads in flight. A load
// that would need more (its inner query outlasted that many events of one
// key) does not install its result.
const maxBacklog = 4096

// A backlog keeps the events of one key (a room, a user) applied while loads
// of it are in flight, so that each load can replay, on top of its snapshot,
// the events that arrived after it began. Guarded by Store.mu.
type backlog struct {
	loads  int
	base   int // events dropped from the front since loads was last zero
	events []parley.Event
}

// begin registers a load and returns its position.
func (b *backlog) begin() int {
	b.loads++
	return b.base + len(b.events)
}

// add keeps ev if a load is in flight.
func (b *backlog) add(ev *parley.Event) {
	if b.loads == 0 {
		return
	}
	if len(b.events) == maxBacklog {
		b.base += len(b.events)
		clear(b.events)
		b.events = b.events[:0]
	}
	b.events = append(b.events, *ev)
}

// since returns the events kept from position pos on; ok is false if some
// of them were dropped.
func (b *backlog) since(pos int) (events []parley.Event, ok bool) {
	if pos < b.base {
		return nil, false
	}
	return b.events[pos-b.base:], true
}

// end unregisters a load; the last one empties the backlog.
func (b *backlog) end() {
	b.loads--
	if b.loads == 0 {
		clear(b.events)
		b.events, b.base = b.events[:0], 0
	}
}
