package rest

import (
	"net/http"
	"time"

	"parley"
	"parley/chat"
)

// People in a room (design §3a): the member listing, the room's info,
// roles, removals and bans. The authorization is chat's; these handlers
// only parse and shape.

// memberView is one member as the API shows it.
type memberView struct {
	User       parley.User `json:"user"`
	Role       string      `json:"role"`
	JoinedAt   time.Time   `json:"joined_at"`
	ReadSeq    int64       `json:"read_seq"`
	Online     bool        `json:"online"`
	LastSeenAt *time.Time  `json:"last_seen_at"` // null: online, or never seen
}

func viewMember(e chat.MemberEntry) memberView {
	v := memberView{User: viewUser(parley.User{ID: e.User.ID, Name: e.User.Name}), Role: e.Role, JoinedAt: e.JoinedAt,
		ReadSeq: e.ReadSeq, Online: e.Online}
	if !e.LastSeenAt.IsZero() {
		t := e.LastSeenAt.UTC()
		v.LastSeenAt = &t
	}
	return v
}

// banView is one ban as the API shows it.
type banView struct {
	User     parley.User `json:"user"`
	BannedBy string      `json:"banned_by"` // the user id of the owner or admin
	BannedAt time.Time   `json:"banned_at"`
}

// nextCursor is the JSON of a next page's cursor: null at the end.
func nextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

func (h *Handler) members(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return err
	}
	es, next, err := h.chat.Members(r.Context(), userOf(r), r.PathValue("id"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	views := make([]memberView, len(es))
	for i, e := range es {
		views[i] = viewMember(e)
	}
	return writeJSON(w, http.StatusOK, struct {
		Members    []memberView `json:"members"`
		NextCursor *string      `json:"next_cursor"`
	}{views, nextCursor(next)})
}

func (h *Handler) updateRoom(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Title            *string `json:"title"`
		Capacity         *int    `json:"capacity"`
		RetentionSeconds *int64  `json:"retention_seconds"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	room, err := h.chat.UpdateRoom(r.Context(), userOf(r), r.PathValue("id"),
		chat.RoomUpdate{Title: req.Title, Capacity: req.Capacity, RetentionSeconds: req.RetentionSeconds})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, h.view(r, room))
}

// addMember adds the user of the path to the room: 201 with their member
// entry, 200 when they were a member already.
func (h *Handler) addMember(w http.ResponseWriter, r *http.Request) error {
	e, added, err := h.chat.AddMember(r.Context(), userOf(r), r.PathValue("id"), r.PathValue("user_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(added), viewMember(e))
}

func (h *Handler) setRole(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Role string `json:"role"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	e, err := h.chat.SetRole(r.Context(), userOf(r), r.PathValue("id"), r.PathValue("user_id"), req.Role)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewMember(e))
}

func (h *Handler) removeMember(w http.ResponseWriter, r *http.Request) error {
	var ban bool
	switch r.URL.Query().Get("ban") {
	case "", "false":
	case "true":
		ban = true
	default:
		return parley.Errorf(parley.CodeInvalid, "ban must be true or false")
	}
	if err := h.chat.Remove(r.Context(), userOf(r), r.PathValue("id"), r.PathValue("user_id"), ban); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) unban(w http.ResponseWriter, r *http.Request) error {
	if err := h.chat.Unban(r.Context(), userOf(r), r.PathValue("id"), r.PathValue("user_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) bans(w http.ResponseWriter, r *http.Request) error {
	bans, err := h.chat.Bans(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	views := make([]banView, len(bans))
	for i, b := range bans {
		views[i] = banView{User: parley.User{ID: b.UserID, Name: b.Name}, BannedBy: b.ActorID, BannedAt: b.BannedAt}
	}
	return writeJSON(w, http.StatusOK, struct {
		Bans []banView `json:"bans"`
	}{views})
}
