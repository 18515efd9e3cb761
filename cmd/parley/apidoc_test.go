package main

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"parley/rest"
	"parley/rest/openapi"
)

var (
	apiDocOnce sync.Once
	apiDoc     *openapi.Doc
	apiDocErr  error
)

// checkAPIDoc checks one response of an end-to-end test against the API's
// description (rest/openapi.yaml): its operation and status are described
// and its JSON body fits the schema. Every request of client.do passes
// here, so each end-to-end test's responses are examples the document
// must fit.
func checkAPIDoc(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return
	}
	apiDocOnce.Do(func() { apiDoc, apiDocErr = openapi.Parse(rest.OpenAPI) })
	if apiDocErr != nil {
		t.Errorf("rest/openapi.yaml: %v", apiDocErr)
		return
	}
	for _, p := range apiDoc.CheckResponse(req.Method, req.URL, resp.StatusCode, resp.Header.Get("Content-Type"), body) {
		t.Errorf("response does not fit rest/openapi.yaml: %s\nbody: %.300s", p, body)
	}
}

// TestAPIDocExamples makes the responses the web client and docs/api.md
// rely on, through the real node, each checked against rest/openapi.yaml
// by client.do: the routes that the other end-to-end tests reach too, and
// those that only this test does (config, the document itself, logouts,
// an error of each kind).
func TestAPIDocExamples(t *testing.T) {
	m := MustOpenMain(t)
	alice, au := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	anon := newClient(t, m.Addr())
	var cfg struct {
		MaxBody int `json:"max_body"`
	}
	if st := anon.do("GET", "/api/config", nil, &cfg); st != 200 || cfg.MaxBody != m.Config.MaxBody {
		t.Errorf("GET /api/config = %d %+v, want 200 max_body %d", st, cfg, m.Config.MaxBody)
	}
	if st := anon.do("GET", "/api/openapi.yaml", nil, nil); st != 200 {
		t.Errorf("GET /api/openapi.yaml = %d", st)
	}
	anon.do("GET", "/api/me", nil, nil)                                                     // 401
	anon.do("POST", "/api/users", map[string]string{"name": "x", "password": "short"}, nil) // 400
	anon.do("POST", "/api/users", map[string]string{"name": "alice", "password": "correct horse"}, nil)
	anon.do("DELETE", "/api/me", nil, nil) // 405
	anon.do("PUT", "/api/me", nil, nil)    // 405
	var g room
	alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "doc", "capacity": 2}, &g)
	alice.do("GET", "/api/rooms/"+g.ID, nil, nil)
	alice.do("GET", "/api/users/bob", nil, nil)
	alice.do("GET", "/api/users/nobody", nil, nil)          // 404
	bob.do("GET", "/api/rooms/"+g.ID+"/messages", nil, nil) // 403
	bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil)
	bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil)
	carol, _ := mustSignUp(t, m.Addr(), "carol")
	carol.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil) // 409 room_full
	alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "hi", "client_id": "k"}, nil)
	alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "hi", "client_id": "k"}, nil)
	alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": strings.Repeat("x", m.Config.MaxBody+1)}, nil) // 413
	alice.do("GET", "/api/rooms/"+g.ID+"/messages?limit=0", nil, nil)                                                         // 400
	alice.do("GET", "/api/rooms/"+g.ID+"/messages?after=0", nil, nil)
	bob.do("PUT", "/api/rooms/"+g.ID+"/read", map[string]int64{"seq": 1}, nil)
	bob.do("GET", "/api/me/rooms?limit=1", nil, nil)
	bob.do("POST", "/api/rooms", map[string]any{"kind": "direct", "peer": au.ID}, nil)
	bob.do("POST", "/api/rooms", map[string]any{"kind": "direct", "peer": au.ID}, nil)
	bob.do("DELETE", "/api/rooms/"+g.ID+"/members/me", nil, nil)
	bob.do("DELETE", "/api/tokens/current", nil, nil)
	alice.do("DELETE", "/api/tokens", nil, nil)
}

// TestAPIDocOperationIDs: every operation of rest/openapi.yaml has an
// operationId, unique and in lowerCamelCase, so that a generated client
// names its methods after them and a reader can cite one.
func TestAPIDocOperationIDs(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(rest.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	seen := map[string]string{}
	n := 0
	for path, item := range doc.Paths {
		for method, v := range item {
			op, isOp := v.(map[string]any)
			if !isOp || !strings.Contains("get put post delete patch", method) {
				continue // summary, description, parameters
			}
			n++
			where := strings.ToUpper(method) + " " + path
			switch id, _ := op["operationId"].(string); {
			case id == "":
				t.Errorf("%s has no operationId", where)
			case !camel.MatchString(id):
				t.Errorf("%s: operationId %q is not lowerCamelCase", where, id)
			case seen[id] != "":
				t.Errorf("%s: operationId %q is %s's too", where, id, seen[id])
			default:
				seen[id] = where
			}
		}
	}
	if n == 0 {
		t.Fatal("no operations in rest/openapi.yaml")
	}
}

// TestAPIDocMeIsReadOnly: PUT /api/me, which a client changing its
// profile would try, answers 405 with Allow: DELETE, GET, HEAD (DELETE
// deletes the account), and the document says so on the path (it
// described GET alone and left the 405 unsaid).
func TestAPIDocMeIsReadOnly(t *testing.T) {
	m := MustOpenMain(t)
	req, err := http.NewRequest("PUT", "http://"+m.Addr()+"/api/me", strings.NewReader(`{"name":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "DELETE, GET, HEAD" {
		t.Errorf("PUT /api/me = %d Allow %q, want 405 Allow DELETE, GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
	var doc struct {
		Paths map[string]struct {
			Description string `yaml:"description"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(rest.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if d := doc.Paths["/api/me"].Description; !strings.Contains(d, "PUT") || !strings.Contains(d, "405") {
		t.Errorf("rest/openapi.yaml /api/me description %q: want it to say that PUT answers 405", d)
	}
}
