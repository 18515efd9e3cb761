package rest

import (
	"net/http"
	"strconv"
	"sync"

	"parley"
	"parley/chat"
)

type credentials struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

func (h *Handler) register(w http.ResponseWriter, r *http.Request) error {
	if err := h.passwordsOff(); err != nil {
		return err
	}
	if err := h.allowSignup(w, r); err != nil {
		return err
	}
	var req credentials
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	u, err := h.chat.Register(r.Context(), req.Name, req.Password)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, u)
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) error {
	if err := h.passwordsOff(); err != nil {
		return err
	}
	var req credentials
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	attempt, err := h.beginLogin(w, r, req.Name)
	if err != nil {
		return err
	}
	token, u, err := h.chat.Login(r.Context(), req.Name, req.Password)
	h.endLogin(attempt, err)
	if err != nil {
		return err
	}
	h.setDevice(w, r, u.Name)
	return writeJSON(w, http.StatusCreated, struct {
		Token string      `json:"token"`
		User  parley.User `json:"user"`
	}{token, u})
}

func (h *Handler) userByName(w http.ResponseWriter, r *http.Request) error {
	u, err := h.chat.UserByName(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewUser(u))
}

func (h *Handler) me(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, viewUser(userOf(r)))
}

// roomView is a room as one user sees it: a direct room names its peer.
type roomView struct {
	parley.Room
	Peer *parley.User `json:"peer,omitempty"`
}

// roomEntryView is one line of a room list, as its user sees it.
type roomEntryView struct {
	Room        roomView        `json:"room"`
	LastMessage *parley.Message `json:"last_message"`
	Unread      int64           `json:"unread"`
	// Mentions and Notifications: see parley.RoomEntry.
	Mentions      int64  `json:"mentions"`
	Notifications string `json:"notifications"`
}

func (h *Handler) view(r *http.Request, room parley.Room) roomView {
	return roomView{Room: room, Peer: h.chat.Peer(r.Context(), userOf(r), room)}
}

func (h *Handler) createRoom(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Kind     string `json:"kind"`
		Title    string `json:"title"`
		Capacity int    `json:"capacity"`
		Peer     string `json:"peer"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	room, created, err := h.chat.CreateRoom(r.Context(), userOf(r), chat.NewRoom{
		Kind: req.Kind, Title: req.Title, Capacity: req.Capacity, Peer: req.Peer,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(created), h.view(r, room))
}

func (h *Handler) room(w http.ResponseWriter, r *http.Request) error {
	room, err := h.chat.Room(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, h.view(r, room))
}

func (h *Handler) join(w http.ResponseWriter, r *http.Request) error {
	room, joined, err := h.chat.Join(r.Context(), userOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(joined), h.view(r, room))
}

func (h *Handler) leave(w http.ResponseWriter, r *http.Request) error {
	if err := h.chat.Leave(r.Context(), userOf(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// myRooms and messages find their answer in functions of their own and
// write it once those have returned, so that net/http's writing, the
// deepest part of a request, runs on a stack without their frames: with
// them a connection's goroutine outgrew its first stack on every request
// after a collection had shrunk it, and copying stacks was 7-9% of the
// CPU under load.

func (h *Handler) myRooms(w http.ResponseWriter, r *http.Request, u parley.User) error {
	b, err := h.roomList(r, u)
	if err != nil {
		return err
	}
	return writeMemo(w, b)
}

//go:noinline
func (h *Handler) roomList(r *http.Request, u parley.User) (*memoBody, error) {
	q := paramsOf(r.URL)
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return nil, err
	}
	cursor := q.Get("cursor")
	rooms, next, err := h.chat.Rooms(r.Context(), u, cursor, limit)
	if err != nil {
		return nil, err
	}
	peer := func(room *parley.Room) *parley.User {
		if room.Kind != parley.KindDirect {
			return nil // Chat.Peer's answer for a group room, without copying the room
		}
		return h.chat.Peer(r.Context(), u, *room)
	}
	k := roomsKey{user: u.ID, cursor: cursor, limit: limit}
	if m := h.memo.roomList(k, rooms, next, peer); m != nil {
		return m, nil
	}
	vp := viewsPool.Get().(*[]roomEntryView)
	defer func() {
		clear(*vp) // let go of what the views point to
		viewsPool.Put(vp)
	}()
	views := (*vp)[:0]
	for i := range rooms {
		e := &rooms[i]
		views = append(views, roomEntryView{Room: roomView{Room: e.Room, Peer: peer(&e.Room)}, LastMessage: e.LastMessage, Unread: e.Unread,
			Mentions: e.Mentions, Notifications: notifyLevel(e.Notifications)})
	}
	*vp = views
	return h.memo.putRoomList(k, rooms, views, next, encode(func(b []byte) []byte { return appendRoomList(b, views, next) })), nil
}

// notifyLevel is the level a room list shows: parley.NotifyAll for the
// default ("").
func notifyLevel(level string) string {
	if level == "" {
		return parley.NotifyAll
	}
	return level
}

// viewsPool holds the room list views of myRooms, which the memo copies
// what it keeps of.
var viewsPool = sync.Pool{New: func() any { return new([]roomEntryView) }}

func (h *Handler) messages(w http.ResponseWriter, r *http.Request, u parley.User) error {
	q := paramsOf(r.URL)
	if handled, err := h.messageQuery(w, r, q, u); handled { // changed_after (edits.go), q (search.go)
		return err
	}
	b, err := h.historyPage(r, u, q)
	if err != nil {
		return err
	}
	return writeMemo(w, b)
}

//go:noinline
func (h *Handler) historyPage(r *http.Request, u parley.User, q params) (*memoBody, error) {
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return nil, err
	}
	p := parley.Newest(limit)
	before, after := q.Get("before"), q.Get("after")
	switch {
	case before != "" && after != "":
		return nil, parley.Errorf(parley.CodeInvalid, "give before or after, not both")
	case before != "":
		if p.Before, err = seqParam("before", before, 1); err != nil {
			return nil, err
		}
	case after != "":
		if p.After, err = seqParam("after", after, 0); err != nil {
			return nil, err
		}
	}
	room := pathRoomID(r)
	msgs, err := h.chat.Messages(r.Context(), u, room, p)
	if err != nil {
		return nil, err
	}
	// Me of the caller's reactions: a copy of the page when there are
	// some, so the memo below keeps it apart from the shared page.
	if msgs, err = h.chat.WithMine(r.Context(), u, room, msgs); err != nil {
		return nil, err
	}
	k := pageKey{room: room, page: p}
	if m := h.memo.page(k, msgs); m != nil {
		return m, nil
	}
	return h.memo.putPage(k, msgs, encode(func(b []byte) []byte { return appendMessages(b, msgs) })), nil
}

func (h *Handler) send(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Body     string   `json:"body"`
		ClientID string   `json:"client_id"`
		ReplyTo  int64    `json:"reply_to"`
		Files    []string `json:"files"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	var m parley.Message
	var created bool
	var err error
	if len(req.Files) > 0 { // files.go
		if err := h.filesOn(); err != nil {
			return err
		}
		m, created, err = h.files.SendFiles(r.Context(), userOf(r), r.PathValue("id"), req.Body, req.ClientID, req.ReplyTo, req.Files)
	} else if req.ReplyTo != 0 {
		m, created, err = h.chat.SendReply(r.Context(), userOf(r), r.PathValue("id"), req.Body, req.ClientID, req.ReplyTo)
	} else {
		m, created, err = h.chat.Send(r.Context(), userOf(r), r.PathValue("id"), req.Body, req.ClientID)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(created), m)
}

func (h *Handler) markRead(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Seq *int64 `json:"seq"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if req.Seq == nil {
		return parley.Errorf(parley.CodeInvalid, "seq is required")
	}
	u := userOf(r)
	moved, err := h.chat.MarkRead(r.Context(), u, r.PathValue("id"), *req.Seq)
	if err != nil {
		return err
	}
	if !moved {
		if err := h.idleRead(w, u.ID); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func limitParam(s string) (int, error) {
	if s == "" {
		return parley.DefaultPageLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > parley.MaxPageLimit {
		return 0, parley.Errorf(parley.CodeInvalid, "limit must be an integer from 1 to %d", parley.MaxPageLimit)
	}
	return n, nil
}

func seqParam(name, s string, min int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min {
		return 0, parley.Errorf(parley.CodeInvalid, "%s must be an integer of at least %d", name, min)
	}
	return n, nil
}
