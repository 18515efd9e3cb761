package rest_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"parley/rest"
	"parley/rest/openapi"
)

// TestOpenAPIDescribesEveryRoute walks the router's routes: each must be
// described in openapi.yaml, with responses, and each described operation
// must be a route. A route added without its description fails here.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc, err := openapi.Parse(rest.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	h := rest.New(rest.Config{Chat: newFakeChat()})
	var routes []string
	for _, pattern := range h.Routes() {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok { // the catch-all (404 and 405), described in info
			continue
		}
		routes = append(routes, method+" "+path)
		op := doc.Operation(method, path)
		if op == nil {
			t.Errorf("route %s is not described in rest/openapi.yaml", pattern)
			continue
		}
		if rs, _ := op["responses"].(map[string]any); len(rs) == 0 {
			t.Errorf("%s is described with no responses", pattern)
		}
		if method == "POST" || method == "PUT" || method == "PATCH" {
			if _, ok := op["requestBody"]; !ok && !strings.Contains(op["description"].(string), "No body") {
				t.Errorf("%s takes a body the document does not describe (or say \"No body\")", pattern)
			}
		}
	}
	for _, op := range doc.Operations() {
		if !slices.Contains(routes, op) {
			t.Errorf("rest/openapi.yaml describes %s, which is no route", op)
		}
	}
}

// TestOpenAPIServed: GET /api/openapi.yaml is the embedded document, and
// it parses.
func TestOpenAPIServed(t *testing.T) {
	h := rest.New(rest.Config{Chat: newFakeChat()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/openapi.yaml", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(rest.OpenAPI) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/yaml") {
		t.Errorf("GET /api/openapi.yaml = %d %q, want 200 and the document", rec.Code, rec.Header().Get("Content-Type"))
	}
	if _, err := openapi.Parse(rec.Body.Bytes()); err != nil {
		t.Error(err)
	}
}
