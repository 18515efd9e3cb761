package rest

import (
	"context"
	"net/http"

	"parley"
)

// Changes is what the routes of message edits and deletions need of the
// chat service (*chat.Service implements it; design §3a).
type Changes interface {
	// EditMessage replaces a message's text: the sender only
	// (parley.CodeForbidden); a deleted message is parley.CodeConflict.
	// clientID, when not empty, is the change's idempotency key
	// (parley.ChangeKey): a repeat gets the message as it is now, the key
	// reused for another change is parley.CodeConflict.
	EditMessage(ctx context.Context, u parley.User, roomID string, seq int64, body, clientID string) (parley.Message, error)
	// DeleteMessage makes a message a tombstone: its sender, or the
	// room's owner or an admin. clientID as for EditMessage.
	DeleteMessage(ctx context.Context, u parley.User, roomID string, seq int64, clientID string) (parley.Message, error)
	// Changed lists a room's messages changed after a change number.
	Changed(ctx context.Context, u parley.User, roomID string, after int64, limit int) ([]parley.Message, error)
}

// changeRoutes registers the routes of changes and search.
func (h *Handler) changeRoutes() {
	h.handle("PATCH /api/rooms/{id}/messages/{seq}", h.authed(h.limited(h.editMessage)))
	h.handle("DELETE /api/rooms/{id}/messages/{seq}", h.authed(h.deleteMessage))
	h.handle("GET /api/me/search", h.authed(h.search))
}

func (h *Handler) editMessage(w http.ResponseWriter, r *http.Request) error {
	seq, err := seqParam("seq", r.PathValue("seq"), 1)
	if err != nil {
		return err
	}
	var req struct {
		Body     *string `json:"body"`
		ClientID string  `json:"client_id"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if req.Body == nil {
		return parley.Errorf(parley.CodeInvalid, "body is required")
	}
	m, err := h.chat.EditMessage(r.Context(), userOf(r), r.PathValue("id"), seq, *req.Body, req.ClientID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (h *Handler) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	seq, err := seqParam("seq", r.PathValue("seq"), 1)
	if err != nil {
		return err
	}
	// The idempotency key rides in the body, as a send's does; a DELETE
	// without a body (Content-Length 0 or none) has none.
	var req struct {
		ClientID string `json:"client_id"`
	}
	if r.ContentLength != 0 {
		if err := h.decode(w, r, &req); err != nil {
			return err
		}
	}
	if _, err := h.chat.DeleteMessage(r.Context(), userOf(r), r.PathValue("id"), seq, req.ClientID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// messageQuery serves GET /api/rooms/{id}/messages with changed_after or q
// (handled true); the plain history pages are messages' own. q is the
// request's query, parsed once by messages, and u its user.
func (h *Handler) messageQuery(w http.ResponseWriter, r *http.Request, q params, u parley.User) (handled bool, err error) {
	changed, text := q.Has("changed_after"), q.Has("q")
	if !changed && !text {
		return false, nil
	}
	switch {
	case changed && text:
		return true, parley.Errorf(parley.CodeInvalid, "give changed_after or q, not both")
	case q.Has("after"), changed && q.Has("before"):
		return true, parley.Errorf(parley.CodeInvalid, "changed_after and q take no after; q alone takes before")
	}
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return true, err
	}
	var msgs []parley.Message
	if changed {
		after, err := seqParam("changed_after", q.Get("changed_after"), 0)
		if err != nil {
			return true, err
		}
		msgs, err = h.chat.Changed(r.Context(), u, pathRoomID(r), after, limit)
		if err != nil {
			return true, err
		}
	} else {
		var before int64
		if b := q.Get("before"); b != "" {
			if before, err = seqParam("before", b, 1); err != nil {
				return true, err
			}
		}
		msgs, err = h.chat.SearchRoom(r.Context(), u, pathRoomID(r), q.Get("q"), before, limit)
		if err != nil {
			return true, err
		}
	}
	if msgs, err = h.chat.WithMine(r.Context(), u, pathRoomID(r), msgs); err != nil {
		return true, err
	}
	return true, writeEncoded(w, func(b []byte) []byte { return appendMessages(b, msgs) })
}
