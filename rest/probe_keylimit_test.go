package rest_test

import (
	"net/http"
	"testing"

	"parley"
	"parley/ratelimit"
	"parley/rest"
)

// Probe: a key's budget (--apikey-rate, "every route") is taken only
// after the scope check, so the calls a key's scopes refuse (403) are
// never limited: a leaked or misbehaving key calls routes outside its
// scopes (or unknown routes) as fast as it likes, each one a store
// lookup of the key (no cache) and an audit line at info level ("api key
// call … allowed=false"), with no 429. A key over its budget should be
// 429 on any route.
func TestProbeKeyLimitRefusedCalls(t *testing.T) {
	fc := newFakeChat()
	limit := ratelimit.New(ratelimit.Config{Rate: 0.001, Burst: 2})
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc, KeyLimit: limit})}
	k, _ := fc.addKey("poster", parley.ScopePost)
	limited := 0
	for range 20 {
		if rec := e.do("GET", "/api/me/export", k, nil); rec.Code == http.StatusTooManyRequests {
			limited++
		}
		if rec := e.do("GET", "/api/rooms/x/bans", k, nil); rec.Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("40 calls of a key with a budget of 2 (bursts) outside its scopes: none was 429")
	}
}
