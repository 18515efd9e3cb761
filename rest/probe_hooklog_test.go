package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"parley"
	"parley/ratelimit"
	"parley/rest"
)

// Probe: the incoming webhook's URL is its secret (POST /api/hooks/{key},
// an API key), but a refused call logs the request's path, key and all
// ("http refusal ... path=/api/hooks/pk_..."), although logError promises
// that no token reaches the log. A bad body or the key's rate limit is
// enough; an internal error logs it at error level the same way.
func TestProbeHookKeyNotLogged(t *testing.T) {
	logs := rest.CaptureLogs(t)
	fc := newFakeChat()
	limit := ratelimit.New(ratelimit.Config{Rate: 0.001, Burst: 1})
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc, KeyLimit: limit})}
	alice := e.mustSignUp("alice")
	var room struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "alerts"}), "create room", http.StatusCreated, &room)
	hook, _ := fc.addKey("hook", parley.ScopePost, parley.ScopeRooms)
	fc.apiKeys[hook].Key.RoomID = room.ID

	e.do("POST", "/api/hooks/"+hook, "", map[string]int{"text": 1}) // a bad body: 400
	e.do("POST", "/api/hooks/"+hook, "", map[string]string{"text": "a"})
	e.do("POST", "/api/hooks/"+hook, "", map[string]string{"text": "b"}) // over the key's limit: 429
	if strings.Contains(logs.String(), hook) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, hook) {
				t.Errorf("the incoming webhook's key reached the log: %s", l)
			}
		}
	}
}
