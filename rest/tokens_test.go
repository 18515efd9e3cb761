package rest_test

import (
	"net/http"
	"testing"
)

// TestLogout: DELETE /api/tokens/current revokes the request's own token,
// DELETE /api/tokens every token of the caller, both 204; without a token
// that works, 401 and nothing changes.
func TestLogout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  string // a request of alice's first token to send first ("": none)
		path    string
		token   string // "a1", "a2", "b1", a literal, or ""
		status  int
		revoked []string // of a1, a2, b1: the tokens refused afterwards
	}{
		{"current logs out that token", "", "/api/tokens/current", "a1", http.StatusNoContent, []string{"a1"}},
		{"current without a token", "", "/api/tokens/current", "", http.StatusUnauthorized, nil},
		{"current with a forged token", "", "/api/tokens/current", "pt_forged", http.StatusUnauthorized, nil},
		{"current with a logged-out token", "/api/tokens/current", "/api/tokens/current", "a1", http.StatusUnauthorized, []string{"a1"}},
		{"all logs out every token of the caller", "", "/api/tokens", "a1", http.StatusNoContent, []string{"a1", "a2"}},
		{"all without a token", "", "/api/tokens", "", http.StatusUnauthorized, nil},
		{"all with a forged token", "", "/api/tokens", "pt_forged", http.StatusUnauthorized, nil},
		{"all with a logged-out token", "/api/tokens/current", "/api/tokens", "a1", http.StatusUnauthorized, []string{"a1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			tokens := map[string]string{"a1": e.mustSignUp("alice"), "b1": e.mustSignUp("bob")}
			var tok struct{ Token string }
			e.mustExpect(e.do("POST", "/api/tokens", "", map[string]string{"name": "alice", "password": "correct horse"}), "second login", http.StatusCreated, &tok)
			tokens["a2"] = tok.Token
			if tc.before != "" {
				e.mustExpect(e.do("DELETE", tc.before, tokens["a1"], nil), "DELETE "+tc.before, http.StatusNoContent, nil)
			}
			token := tc.token
			if tokens[token] != "" {
				token = tokens[token]
			}
			rec := e.do("DELETE", tc.path, token, nil)
			if rec.Code != tc.status {
				t.Errorf("DELETE %s = %d %s, want %d", tc.path, rec.Code, rec.Body, tc.status)
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("DELETE %s = 401 without WWW-Authenticate", tc.path)
			}
			if rec.Code == http.StatusNoContent && rec.Body.Len() != 0 {
				t.Errorf("DELETE %s = 204 with body %q", tc.path, rec.Body)
			}
			gone := map[string]bool{}
			for _, k := range tc.revoked {
				gone[k] = true
			}
			for _, k := range []string{"a1", "a2", "b1"} {
				want := http.StatusOK
				if gone[k] {
					want = http.StatusUnauthorized
				}
				if got := e.do("GET", "/api/me", tokens[k], nil).Code; got != want {
					t.Errorf("GET /api/me with %s afterwards = %d, want %d", k, got, want)
				}
			}
		})
	}
}
