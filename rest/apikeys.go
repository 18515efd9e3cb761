package rest

import (
	"log/slog"
	"net/http"

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
	messagesPattern:                            parley.ScopeHistory,
	"GET /api/me/search":                       parley.ScopeHistory,
	"PUT /api/rooms/{id}/read":                 parley.ScopeHistory,
	"DELETE /api/rooms/{id}/members/{user_id}": parley.ScopeModerate,
	"GET /api/rooms/{id}/bans":                 parley.ScopeModerate,
	"DELETE /api/rooms/{id}/bans/{user_id}":    parley.ScopeModerate,
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
	scope, ok := keyScopes[r.Pattern]
	slog.Info("api key call", "key", k.Name, "bot", u.Name, "route", r.Pattern, "allowed", ok && (scope == anyKey || k.Allows(scope)))
	switch {
	case !ok:
		return parley.User{}, parley.Errorf(parley.CodeForbidden, "API keys may not call %s", r.Pattern)
	case scope != anyKey && !k.Allows(scope):
		return parley.User{}, parley.Errorf(parley.CodeForbidden, "the API key %q lacks the scope %q", k.Name, scope)
	}
	return u, nil
}

// viewUser is u as the API shows it: "bot": true for a bot account.
func viewUser(u parley.User) parley.User {
	u.Bot = parley.IsBotID(u.ID)
	return u
}
