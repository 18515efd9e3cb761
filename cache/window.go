package cache

import "parley"

// A window is the run of a room's most recent messages the cache holds,
// newest first: msgs()[i] has seq hi-i, with no hole. An empty valid window
// holds nothing up to hi (0 for a room without messages). A message that
// would leave a hole (it is not the one right after hi) restarts the window
// at it, so a page is never served across a hole.
//
// The messages sit at the end of a backing array with free room in front;
// a new message goes into the slot just before the first. A slot is written
// once: trimming the oldest message only shortens the run, and every other
// change (running out of room, a hole, older messages added at the end)
// copies into a new array. So a newest-first page, and a room list's last
// message, can be handed out without copying: nothing writes to them later.
// The array holds at most about twice the cap of the window.
type window struct {
	ok    bool
	hi    int64            // seq of the newest message
	buf   []parley.Message // backing array; the run is buf[start:start+n]
	start int
	n     int
}

// emptyWindow is the window of a room with no messages.
func emptyWindow() window { return window{ok: true} }

// lo is the seq of the oldest message held (hi+1 when empty).
func (w *window) lo() int64 { return w.hi - int64(w.n) + 1 }

// msgs returns the run, newest first. Its capacity is its length, so an
// append by a caller copies rather than writes into the backing array.
func (w *window) msgs() []parley.Message { return w.buf[w.start : w.start+w.n : w.start+w.n] }

// covers reports whether the window holds every message from seq from to to.
func (w *window) covers(from, to int64) bool { return w.ok && from >= w.lo() && to <= w.hi }

// at returns the message with that seq; the window must cover it.
func (w *window) at(seq int64) *parley.Message { return &w.buf[w.start+int(w.hi-seq)] }

// newestFirst returns the messages from seq to down to seq from, shared;
// the window must cover them.
func (w *window) newestFirst(from, to int64) []parley.Message {
	return w.msgs()[w.hi-to : w.hi-from+1 : w.hi-from+1]
}

// oldestFirst returns a new slice of the messages from seq from up to seq to;
// the window must cover them.
func (w *window) oldestFirst(from, to int64) []parley.Message {
	src := w.newestFirst(from, to)
	out := make([]parley.Message, len(src))
	for i := range src {
		out[len(src)-1-i] = src[i]
	}
	return out
}

// apply updates the window for a committed event, keeping at most max
// messages. It is idempotent: a message at or below hi is dropped, and a
// change no newer than the version held (edits.go).
func (w *window) apply(ev *parley.Event, max int) {
	switch {
	case ev.Kind == parley.EventRoom:
		*w = emptyWindow()
	case isChange(ev):
		w.applyChange(ev, max)
	case ev.Kind != parley.EventMessage || !w.ok:
	case ev.Message.Seq <= w.hi:
	case ev.Message.Seq == w.hi+1:
		if w.start == 0 {
			w.regrow(nil, max)
		}
		w.start--
		w.buf[w.start] = ev.Message
		w.n = min(w.n+1, max)
		w.hi = ev.Message.Seq
	default:
		*w = window{ok: true}
		w.buf = []parley.Message{ev.Message}
		w.n, w.hi = 1, ev.Message.Seq
	}
}

// regrow copies the run, followed by older (newest first, continuing it),
// into a new array with free room in front.
func (w *window) regrow(older []parley.Message, max int) {
	n := w.n + len(older)
	head := min(max, n) + 4
	buf := make([]parley.Message, head+n)
	copy(buf[head:], w.msgs())
	copy(buf[head+w.n:], older)
	w.buf, w.start, w.n = buf, head, n
}

// newestWindow makes a window from a newest-first page that is the newest of
// its room (from the inner store, so the cache owns it). ok is false if the
// page is not contiguous.
func newestWindow(page []parley.Message) (window, bool) {
	if len(page) == 0 {
		return emptyWindow(), true
	}
	if !contiguous(page) {
		return window{}, false
	}
	return window{ok: true, hi: page[0].Seq, buf: page, n: len(page)}, true
}

// extend adds older messages (newest first, continuing the run downwards)
// at the bottom of the window, as many as fit under max. It reports whether
// any did.
func (w *window) extend(older []parley.Message, max int) bool {
	keep := min(len(older), max-w.n)
	if keep < 1 || !contiguous(older[:keep]) || older[0].Seq != w.lo()-1 {
		return false
	}
	w.regrow(older[:keep], max)
	return true
}

// contiguous reports whether newest-first messages have no hole.
func contiguous(desc []parley.Message) bool {
	for i := 1; i < len(desc); i++ {
		if desc[i].Seq != desc[i-1].Seq-1 {
			return false
		}
	}
	return true
}
