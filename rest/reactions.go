package rest

import (
	"context"
	"net/http"

	"parley"
)

// Reactions is what the routes of reactions need of the chat service
// (*chat.Service implements it; design §3b).
type Reactions interface {
	// React adds (add) or removes u's emoji on a message and returns the
	// message after it with Me filled for u; a repeat changes nothing.
	// A malformed emoji is parley.CodeInvalid, a deleted message and an
	// add past the bounds parley.CodeConflict.
	React(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, add bool) (parley.Message, bool, error)
	// Reactors lists who put emoji on a message, first reaction first.
	Reactors(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, limit int) ([]parley.User, error)
	// WithMine fills the Me of u's reactions on messages of one room.
	WithMine(ctx context.Context, u parley.User, roomID string, msgs []parley.Message) ([]parley.Message, error)
}

// Threads is what the routes of threads need of the chat service.
type Threads interface {
	// SendReply is Send of a reply to message replyTo of the room: a
	// seq that is no message of the room is parley.CodeInvalid, a
	// deleted one parley.CodeConflict.
	SendReply(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64) (m parley.Message, created bool, err error)
	// Replies returns a page of a root's thread, oldest first.
	Replies(ctx context.Context, u parley.User, roomID string, root, after int64, limit int) ([]parley.Message, error)
}

// replies serves GET /api/rooms/{id}/messages/{seq}/replies?after=&limit=.
func (h *Handler) replies(w http.ResponseWriter, r *http.Request) error {
	seq, err := seqParam("seq", r.PathValue("seq"), 1)
	if err != nil {
		return err
	}
	q := paramsOf(r.URL)
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return err
	}
	var after int64
	if a := q.Get("after"); a != "" {
		if after, err = seqParam("after", a, 0); err != nil {
			return err
		}
	}
	msgs, err := h.chat.Replies(r.Context(), userOf(r), r.PathValue("id"), seq, after, limit)
	if err != nil {
		return err
	}
	return writeEncoded(w, func(b []byte) []byte { return appendMessages(b, msgs) })
}

// reactionRoutes registers the routes of reactions and threads.
func (h *Handler) reactionRoutes() {
	h.handle("GET /api/rooms/{id}/messages/{seq}/replies", h.authed(h.replies))
	h.handle("PUT /api/rooms/{id}/messages/{seq}/reactions/{emoji}", h.authed(h.limited(h.react(true))))
	h.handle("DELETE /api/rooms/{id}/messages/{seq}/reactions/{emoji}", h.authed(h.limited(h.react(false))))
	h.handle("GET /api/rooms/{id}/messages/{seq}/reactions/{emoji}/users", h.authed(h.reactors))
}

// react serves PUT (add) and DELETE of a reaction: 200 and the message
// after it, whether or not anything changed (both are idempotent).
func (h *Handler) react(add bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		seq, err := seqParam("seq", r.PathValue("seq"), 1)
		if err != nil {
			return err
		}
		m, _, err := h.chat.React(r.Context(), userOf(r), r.PathValue("id"), seq, r.PathValue("emoji"), add)
		if err != nil {
			return err
		}
		return writeEncoded(w, func(b []byte) []byte { return appendMessage(b, &m) })
	}
}

func (h *Handler) reactors(w http.ResponseWriter, r *http.Request) error {
	seq, err := seqParam("seq", r.PathValue("seq"), 1)
	if err != nil {
		return err
	}
	limit, err := limitParam(paramsOf(r.URL).Get("limit"))
	if err != nil {
		return err
	}
	users, err := h.chat.Reactors(r.Context(), userOf(r), r.PathValue("id"), seq, r.PathValue("emoji"), limit)
	if err != nil {
		return err
	}
	if users == nil {
		users = []parley.User{}
	}
	return writeJSON(w, http.StatusOK, struct {
		Users []parley.User `json:"users"`
	}{users})
}
