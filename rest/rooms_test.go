package rest_test

import (
	"fmt"
	"net/http"
	"testing"

	"parley"
)

// TestHiddenRoomNotFound: over every room route, a direct room of others
// and an unknown id get the same 404, byte for byte.
func TestHiddenRoomNotFound(t *testing.T) {
	e := newEnv(t, nil)
	alice, carol := e.mustSignUp("alice"), e.mustSignUp("carol")
	bob := e.mustSignUp("bob")
	var me struct{ ID string }
	e.mustExpect(e.do("GET", "/api/me", bob, nil), "bob's id", http.StatusOK, &me)
	var direct struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "direct", "peer": me.ID}), "alice opens a direct room with bob", http.StatusCreated, &direct)
	unknown := parley.NewID()
	for _, tt := range []struct {
		name, method, path string
		body               any
	}{
		{"room info", "GET", "/api/rooms/%s", nil},
		{"join", "POST", "/api/rooms/%s/members", nil},
		{"leave", "DELETE", "/api/rooms/%s/members/me", nil},
		{"history", "GET", "/api/rooms/%s/messages", nil},
		{"send", "POST", "/api/rooms/%s/messages", map[string]string{"body": "hi"}},
		{"mark read", "PUT", "/api/rooms/%s/read", map[string]int64{"seq": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hidden := e.do(tt.method, sprintf(tt.path, direct.ID), carol, tt.body)
			missing := e.do(tt.method, sprintf(tt.path, unknown), carol, tt.body)
			if hidden.Code != http.StatusNotFound || missing.Code != http.StatusNotFound {
				t.Fatalf("%s: direct room of others = %d %s, unknown = %d %s; want 404 for both", tt.name, hidden.Code, hidden.Body, missing.Code, missing.Body)
			}
			if h, m := hidden.Body.String(), missing.Body.String(); h != m {
				t.Errorf("%s: direct room of others = %s, unknown = %s; want the same answer", tt.name, h, m)
			}
		})
	}
}

func sprintf(format, id string) string { return fmt.Sprintf(format, id) }
