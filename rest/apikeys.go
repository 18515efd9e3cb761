package rest

import (
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"parley"
)

// API keys (design §3b "Identity"; chat/apikeys.go): a bearer token that
// starts with "pk_" is a server API key of a bot. A key may call only the
// routes its scopes name in keyScopes (anyKey: every key); the others,
// which concern a person's account and sessions, refuse it with 403
// forbidden. Every call with a key is logged with the key's name.

// anyKey marks a route every API key may call.
const anyKey = "*"

// keyScopes is the scope each route asks of an API key.
var keyScopes = map[string]string{
	"GET /api/me":           anyKey,
	"GET /api/users/{name}": anyKey,

	"POST /api/rooms/{id}/messages":            parley.ScopePost,
	"PATCH /api/rooms/{id}/messages/{seq}":     parley.ScopePost,
	"DELETE /api/rooms/{id}/messages/{seq}":    parley.ScopePost,
	"POST /api/rooms":                          parley.ScopeRooms,
	roomListPattern:                            parley.ScopeRooms,
	"GET /api/rooms/{id}":                      parley.ScopeRooms,
	"PATCH /api/rooms/{id}":                    parley.ScopeRooms,
	"POST /api/rooms/{id}/members":             parley.ScopeRooms,
	"DELETE /api/rooms/{id}/members/me":        parley.ScopeRooms,
	"GET /api/rooms/{id}/members":              parley.ScopeRooms,
	"PUT /api/rooms/{id}/members/{user_id}":    parley.ScopeRooms,
	"POST /api/rooms/{id}/members/{user_id}":   parley.ScopeRooms,
	messagesPattern:                            parley.ScopeHistory,
	"GET /api/me/search":                       parley.ScopeHistory,
	"PUT /api/rooms/{id}/read":                 parley.ScopeHistory,
	"DELETE /api/rooms/{id}/members/{user_id}": parley.ScopeModerate,
	"GET /api/rooms/{id}/bans":                 parley.ScopeModerate,
	"DELETE /api/rooms/{id}/bans/{user_id}":    parley.ScopeModerate,
	"GET /api/webhooks":                        parley.ScopeWebhooks,
	"POST /api/webhooks":                       parley.ScopeWebhooks,
	"POST /api/webhooks/{name}/resume":         parley.ScopeWebhooks,
	"DELETE /api/webhooks/{name}":              parley.ScopeWebhooks,
}

// authenticateKey checks an API key and that its scopes allow the route.
func (h *Handler) authenticateKey(w http.ResponseWriter, r *http.Request, token string) (parley.User, error) {
	u, t, err := h.chat.AuthenticateToken(r.Context(), token)
	if err != nil {
		if parley.ErrorCode(err) == parley.CodeUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="parley", error="invalid_token"`)
		}
		return parley.User{}, err
	}
	k := t.Key
	// The budget first: a call its scopes refuse costs a lookup and an
	// audit line all the same.
	err = h.keyLimited(w, k)
	if err == nil {
		err = keyRouteRefusal(k, r)
	}
	slog.Info("api key call", "key", k.Name, "bot", u.Name, "route", r.Pattern, "allowed", err == nil, "refused", refusal(err))
	return u, err
}

// keyLimited takes one token from key k's bucket in the key limiter, and
// refuses with rate_limited (429, Retry-After in whole seconds) when there
// is none. A key's budget is its own, beside its bot's per-user limits.
func (h *Handler) keyLimited(w http.ResponseWriter, k *parley.APIKey) error {
	if h.keyLimit == nil {
		return nil
	}
	ok, wait := h.keyLimit.Allow(k.ID)
	if ok {
		return nil
	}
	secs := max(1, int64(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	return parley.Errorf(parley.CodeRateLimited, "the API key %q is over %g calls a second (bursts of %d); retry in %d s",
		k.Name, h.keyLimit.Rate(), h.keyLimit.Burst(), secs)
}

// refusal is err's code for the audit line, "" for none.
func refusal(err error) string {
	if err == nil {
		return ""
	}
	return parley.ErrorCode(err)
}

// keyRouteRefusal is the refusal of r for key k (403), nil when k may
// call it.
func keyRouteRefusal(k *parley.APIKey, r *http.Request) error {
	scope, ok := keyScopes[r.Pattern]
	switch {
	case !ok:
		return parley.Errorf(parley.CodeForbidden, "API keys may not call %s", r.Pattern)
	case scope == anyKey:
		return nil
	case !k.Allows(scope):
		return parley.Errorf(parley.CodeForbidden, "the API key %q lacks the scope %q", k.Name, scope)
	case k.RoomID != "" && pathRoomID(r) != k.RoomID:
		return parley.Errorf(parley.CodeForbidden, "the API key %q acts in room %s only", k.Name, k.RoomID)
	}
	return nil
}

// Incoming webhooks: POST /api/hooks/{key} posts a message into the room
// of key, a room-bound API key with the scope post (parley apikey create
// --room), as its bot, with no Authorization header: the URL is the
// secret, as Slack's and Mattermost's incoming webhooks. The body is
// JSON, {"text": …} (Slack's shape) or {"body": …}, with an optional
// "client_id" that makes a retry idempotent; or any text/plain body. An
// unknown, revoked or unfit key is 404, so that the route tells nothing
// of which keys exist.
func (h *Handler) hook(w http.ResponseWriter, r *http.Request) error {
	gone := parley.Errorf(parley.CodeNotFound, "no such webhook")
	token := r.PathValue("key")
	if !parley.IsAPIKey(token) {
		return gone
	}
	u, t, err := h.chat.AuthenticateToken(r.Context(), token)
	if parley.ErrorCode(err) == parley.CodeUnauthorized {
		return gone
	}
	if err != nil {
		return err
	}
	k := t.Key
	if k.RoomID == "" || !k.Allows(parley.ScopePost) {
		return gone
	}
	var req struct {
		Text     string `json:"text"`
		Body     string `json:"body"`
		ClientID string `json:"client_id"`
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "text/plain" {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
		if err != nil {
			return decodeError(err)
		}
		if !utf8.Valid(b) {
			return parley.Errorf(parley.CodeInvalid, "request body must be valid UTF-8")
		}
		req.Body = string(b)
	} else if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if req.Body == "" {
		req.Body = req.Text
	}
	err = h.keyLimited(w, k)
	slog.Info("incoming webhook", "key", k.Name, "bot", u.Name, "room", k.RoomID, "allowed", err == nil, "refused", refusal(err))
	if err != nil {
		return err
	}
	r = r.WithContext(&userContext{Context: r.Context(), u: u})
	var m parley.Message
	var created bool
	err = h.limited(func(w http.ResponseWriter, r *http.Request) error {
		m, created, err = h.chat.Send(r.Context(), u, k.RoomID, req.Body, req.ClientID)
		if parley.ErrorCode(err) == parley.CodeForbidden {
			// The bot's first post: it joins the room here, on a node
			// whose caches and members hear it (a ban still refuses).
			if _, _, jerr := h.chat.Join(r.Context(), u, k.RoomID); jerr != nil {
				return jerr
			}
			m, created, err = h.chat.Send(r.Context(), u, k.RoomID, req.Body, req.ClientID)
		}
		return err
	})(w, r)
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(created), m)
}

// viewUser is u as the API shows it: "bot": true for a bot account.
func viewUser(u parley.User) parley.User {
	u.Bot = parley.IsBotID(u.ID)
	return u
}
