package rest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"parley"
	"parley/chat"
)

// Account is what the routes of a user's own data need (*chat.Service
// implements it): GET /api/me/export and DELETE /api/me. A Config.Chat
// that implements it serves them; without, they answer 503 unavailable.
type Account interface {
	// ExportRooms returns the user's rooms with the membership.
	ExportRooms(ctx context.Context, u parley.User) ([]chat.ExportedRoom, error)
	// ExportMessages calls each with every message the user sent in the
	// room, oldest first, reading the history a page at a time.
	ExportMessages(ctx context.Context, u parley.User, roomID string, each func(*parley.Message) error) error
	// ExportFiles returns the files the user uploaded, oldest first.
	ExportFiles(ctx context.Context, u parley.User) ([]parley.StoredFile, error)
	// VerifyPassword checks that password is the user's:
	// parley.CodeForbidden when it is not.
	VerifyPassword(ctx context.Context, u parley.User, password string) error
	// DeleteAccount deletes the user's account once password is theirs:
	// parley.CodeForbidden for a wrong one, and nothing changes.
	DeleteAccount(ctx context.Context, u parley.User, password string) error
	// DeleteAccountSignedIn deletes the account of an outside identity
	// (no password) once token comes from a recent sign-in:
	// parley.CodeForbidden "sign in again …" for an older one.
	DeleteAccountSignedIn(ctx context.Context, u parley.User, token string) error
}

// exportLine is one line of GET /api/me/export (docs/api.md, "Your own
// data"): its type says which of the other fields it carries.
type exportLine struct {
	Type       string          `json:"type"` // account, room, message, file, end or error
	Version    int             `json:"version,omitempty"`
	User       *parley.User    `json:"user,omitempty"`
	Room       *parley.Room    `json:"room,omitempty"`
	Membership *exportMember   `json:"membership,omitempty"`
	Message    *parley.Message `json:"message,omitempty"`
	File       *exportFile     `json:"file,omitempty"`
	Error      *exportError    `json:"error,omitempty"`
}

// exportFile is a file the caller uploaded, in an export: its metadata,
// and the path that downloads its bytes (with the caller's token, as
// long as the file is kept).
type exportFile struct {
	parley.File
	RoomID    string    `json:"room_id"`
	Seq       int64     `json:"seq"` // of the message that carries it; 0: none
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
	Download  string    `json:"download"`
}

// exportError is the error that cut an export short.
type exportError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// exportMember is the caller's membership of a room, in an export.
type exportMember struct {
	Role          string    `json:"role"`
	ReadSeq       int64     `json:"read_seq"`
	JoinedAt      time.Time `json:"joined_at"`
	Notifications string    `json:"notifications"` // the level, "all" included
}

// A download moves its write deadline exportStall on every
// exportDeadlineLines lines (exportMe).
const (
	exportStall         = 30 * time.Second
	exportDeadlineLines = 100
)

// progress is a writer that calls line before each write (json.Encoder
// writes one line a call).
type progress struct {
	w    io.Writer
	line func()
}

func (p progress) Write(b []byte) (int, error) {
	p.line()
	return p.w.Write(b)
}

// exportVersion is the version of the export's format, on its first line.
const exportVersion = 1

// exportMe streams the caller's own data (GET /api/me/export) as a JSON
// Lines download: the account, then each room with the membership
// followed by the caller's messages in it, then the files the caller
// uploaded (their metadata and download path), then an end line. The
// messages are read and written a page at a time, so the handler's memory
// does not grow with them. A failure after the first line can no longer
// change the status: it ends the download with an error line instead of
// the end line.
func (h *Handler) exportMe(w http.ResponseWriter, r *http.Request) error {
	a, ok := h.chat.(Account)
	if !ok {
		return parley.Errorf(parley.CodeUnavailable, "the export is not available")
	}
	u := userOf(r)
	rooms, err := a.ExportRooms(r.Context(), u)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="parley-%s.jsonl"`, u.Name))
	w.WriteHeader(http.StatusOK)
	// The server's write timeout (--http-write-timeout) bounds a whole
	// response; a download as long as the data moves its deadline on as
	// it goes, a page of lines at a time, so that only a stalled client
	// (or store) is cut off.
	rc := http.NewResponseController(w)
	lines := 0
	enc := json.NewEncoder(progress{w, func() {
		if lines++; lines%exportDeadlineLines == 1 {
			rc.SetWriteDeadline(time.Now().Add(exportStall)) // best effort, as decode's
		}
	}})
	err = enc.Encode(exportLine{Type: "account", Version: exportVersion, User: &u})
	for i := 0; i < len(rooms) && err == nil; i++ {
		m := rooms[i].Member
		err = enc.Encode(exportLine{Type: "room", Room: &rooms[i].Room, Membership: &exportMember{
			Role: m.Role, ReadSeq: m.ReadSeq, JoinedAt: m.JoinedAt, Notifications: rooms[i].Notifications}})
		if err == nil {
			err = a.ExportMessages(r.Context(), u, rooms[i].Room.ID, func(m *parley.Message) error {
				return enc.Encode(exportLine{Type: "message", Message: m})
			})
		}
	}
	if err == nil {
		err = exportFiles(r.Context(), a, u, enc)
	}
	if err != nil {
		enc.Encode(exportLine{Type: "error", Error: &exportError{parley.ErrorCode(err), parley.ErrorMessage(err)}})
		return nil
	}
	enc.Encode(exportLine{Type: "end"})
	return nil
}

// exportFiles writes a file line for each file u uploaded.
func exportFiles(ctx context.Context, a Account, u parley.User, enc *json.Encoder) error {
	fs, err := a.ExportFiles(ctx, u)
	for i := 0; i < len(fs) && err == nil; i++ {
		f := fs[i]
		err = enc.Encode(exportLine{Type: "file", File: &exportFile{File: f.File, RoomID: f.RoomID, Seq: f.Seq,
			SHA256: hex.EncodeToString(f.SHA256), CreatedAt: f.CreatedAt, Download: "/api/files/" + f.ID}})
	}
	return err
}

// deleteMe deletes the caller's account (DELETE /api/me) once the body's
// password proves it theirs: 204; 403 forbidden for a wrong password. An
// account with no password (an outside identity's: OpenID Connect, JWT)
// proves it with a token of a recent sign-in instead, the body's password
// ignored: 403 "sign in again to delete this account" for an older one.
func (h *Handler) deleteMe(w http.ResponseWriter, r *http.Request) error {
	a, ok := h.chat.(Account)
	if !ok {
		return parley.Errorf(parley.CodeUnavailable, "account deletion is not available")
	}
	var req struct {
		Password string `json:"password"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	// The password check is a login's: it waits for the name's and the
	// address's failed logins and counts a wrong password as one, so a
	// stolen token guesses no faster than POST /api/tokens.
	u := userOf(r)
	if chat.IsExternalUser(u.ID) {
		token, _ := bearer(r.Header.Get("Authorization")) // authed: it is there
		if err := a.DeleteAccountSignedIn(r.Context(), u, token); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	att, err := h.beginLogin(w, r, u.Name)
	if err != nil {
		return err
	}
	err = a.VerifyPassword(r.Context(), u, req.Password)
	h.settleLogin(att, parley.ErrorCode(err) == parley.CodeForbidden, err == nil)
	if err != nil {
		return err
	}
	if err := a.DeleteAccount(r.Context(), u, req.Password); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
