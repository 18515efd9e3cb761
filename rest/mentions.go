package rest

import (
	"context"
	"net/http"

	"parley"
)

// Notifications is what the route of notification levels needs of the
// chat service (*chat.Service implements it; design §3b "Mentions").
type Notifications interface {
	// SetNotifyLevel sets u's notification level in a room: a level other
	// than all, mentions and none is parley.CodeInvalid, a non-member
	// parley.CodeForbidden (parley.CodeNotFound for an unknown room).
	SetNotifyLevel(ctx context.Context, u parley.User, roomID, level string) error
}

func (h *Handler) mentionRoutes() {
	h.handle("PUT /api/rooms/{id}/notifications", h.authed(h.setNotifications))
}

// setNotifications serves PUT /api/rooms/{id}/notifications
// {"level":"all"|"mentions"|"none"}: 200 and the level set.
func (h *Handler) setNotifications(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Level string `json:"level"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if err := h.chat.SetNotifyLevel(r.Context(), userOf(r), r.PathValue("id"), req.Level); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, struct {
		Level string `json:"level"`
	}{req.Level})
}
