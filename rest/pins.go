package rest

import (
	"context"
	"net/http"
	"strconv"

	"parley"
)

// Pins is what the routes of pinned messages need of the chat service
// (*chat.Service implements it; design §3b).
type Pins interface {
	// PinMessage pins (pin) or unpins a message and returns it after,
	// whether or not anything changed (a repeat changes nothing). A member
	// who is neither the owner nor an admin is parley.CodeForbidden, an
	// unknown seq parley.CodeNotFound, a deleted message and a pin past
	// parley.MaxPinsPerRoom parley.CodeConflict.
	PinMessage(ctx context.Context, u parley.User, roomID string, seq int64, pin bool) (parley.Message, bool, error)
	// Pins returns a page of the room's pinned messages, newest pin
	// first, those whose pin's change is below before (0: from the
	// newest).
	Pins(ctx context.Context, u parley.User, roomID string, before int64, limit int) ([]parley.Message, error)
}

// pinRoutes registers the routes of pinned messages.
func (h *Handler) pinRoutes() {
	h.handle("PUT /api/rooms/{id}/messages/{seq}/pin", h.authed(h.limited(h.pin(true))))
	h.handle("DELETE /api/rooms/{id}/messages/{seq}/pin", h.authed(h.limited(h.pin(false))))
	h.handle("GET /api/rooms/{id}/pins", h.authed(h.pins))
}

// pin serves PUT (pin) and DELETE (unpin) of a message's pin: 200 and the
// message after it, whether or not anything changed (both are
// idempotent).
func (h *Handler) pin(pin bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		seq, err := seqParam("seq", r.PathValue("seq"), 1)
		if err != nil {
			return err
		}
		m, _, err := h.chat.PinMessage(r.Context(), userOf(r), r.PathValue("id"), seq, pin)
		if err != nil {
			return err
		}
		return writeEncoded(w, func(b []byte) []byte { return appendMessage(b, &m) })
	}
}

// pins serves GET /api/rooms/{id}/pins?limit=&before=: {"pins": [...],
// "next_before": N}, each entry {"pin","pinned_by","pinned_at","message"};
// next_before is the last entry's pin when the page is full (pass it as
// before for the next page), 0 otherwise.
func (h *Handler) pins(w http.ResponseWriter, r *http.Request) error {
	q := paramsOf(r.URL)
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return err
	}
	var before int64
	if b := q.Get("before"); b != "" {
		if before, err = seqParam("before", b, 1); err != nil {
			return err
		}
	}
	msgs, err := h.chat.Pins(r.Context(), userOf(r), r.PathValue("id"), before, limit)
	if err != nil {
		return err
	}
	return writeEncoded(w, func(b []byte) []byte { return appendPins(b, msgs, limit) })
}

// appendPins writes a page of pinned messages (each has its Pinned).
func appendPins(b []byte, msgs []parley.Message, limit int) []byte {
	b = append(b, `{"pins":[`...)
	var next int64
	for i := range msgs {
		m := &msgs[i]
		p := m.Pinned
		if p == nil { // unpinned after the read: never from the stores
			p = &parley.Pin{}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"pin":`...)
		b = strconv.AppendInt(b, p.Change, 10)
		b = append(b, `,"pinned_by":`...)
		b = appendString(b, p.By)
		b = append(b, `,"pinned_at":`...)
		b = appendTime(b, p.At)
		b = append(b, `,"message":`...)
		b = appendMessage(b, m)
		b = append(b, '}')
		next = p.Change
	}
	if len(msgs) < limit {
		next = 0
	}
	b = append(b, `],"next_before":`...)
	b = strconv.AppendInt(b, next, 10)
	return append(b, '}')
}
